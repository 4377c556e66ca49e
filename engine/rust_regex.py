r"""Patterns in burn-store's dialect, Rust's ``regex`` crate with Unicode on, matched in linear time by RE2.

burn-store filters and remaps tensor names with Rust's ``regex``, which never backtracks and reads its own
dialect. Python's ``re`` does neither: ``(a+)+$`` against a long name runs for ever, and it takes what Rust
refuses (look-around, backreferences), which a printed Rust chain would then fail on. So a pattern is read
here as Rust's parser (regex-syntax 0.8) reads it, and written out again for RE2 (``google-re2``) so that
RE2 means what Rust means: ``\d``, ``\s`` and ``\w`` as Rust's Unicode sets (RE2's are ASCII), named groups
as plain numbered ones, every literal escaped. What RE2 cannot match the way Rust does is refused, saying
why: ``\b``, ``\B``, ``\<`` and ``\>`` (Rust's word boundaries are Unicode-aware, RE2's ASCII-only), nested
classes and class set operations (``[a-z&&[^x]]``), ``\W`` inside a class, and the ``x``, ``u`` and ``R``
flags. What Rust refuses (look-around, backreferences, unknown escapes, a bad repeat, nesting past its
limit of 250 levels) is refused with Rust's reason, before anything recurses.

RE2 is stricter than Rust in three places, refused too: repeat counts above 1,000, Unicode classes other
than general categories and scripts spelled as RE2 spells them (``\p{Greek}``, not ``\p{greek}`` or
``\p{sc=Greek}``), and a compiled program past ``MAX_MEM``. Unicode tables are RE2's (Unicode 15.1) where
burn-store's ``regex`` 1.13 has Unicode 16: characters new in Unicode 16 are no letters or digits here.
"""

from __future__ import annotations

import string
import unicodedata
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Iterator

import re2

from .errors import RecipeError
from .humanize import quoted

NEST_LIMIT = 250  # regex-syntax's default nest_limit: the depth of its syntax tree
MAX_REPEAT = 1000  # RE2's largest repeat count (Rust takes more, within its size limit)
MAX_PATTERN_CHARS = 100_000  # read a character at a time: longer patterns are refused unread
MAX_MEM = 1 << 20  # RE2's memory for one pattern (program and DFA cache): bounds what thousands can hold
PATTERN_BUDGET = 1 << 20  # characters read and RE2 instructions compiled for one recipe or command line
REPLACE_WORK = 1 << 26  # matches x name length one replacement may cost: each match may read the name's rest

_WHITE_SPACE = ((0x9, 0xD), (0x20, 0x20), (0x85, 0x85), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
                (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000))  # Rust's \s: White_Space
# Rust's \w: Alphabetic, Mark, Decimal_Number, Connector_Punctuation and Join_Control. RE2 has no
# Alphabetic, which is the letters, Nl and Other_Alphabetic; the members of the last outside L, M and N
# are the circled and squared Latin letters below (checked against regex-syntax's perl_word table).
_WORD_EXTRA = ((0x200C, 0x200D), (0x24B6, 0x24E9), (0x1F130, 0x1F149), (0x1F150, 0x1F169), (0x1F170, 0x1F189))
_ASCII_CLASSES = frozenset({"alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower", "print",
                            "punct", "space", "upper", "word", "xdigit"})  # RE2 defines each as Rust does
_SPECIAL = {"a": "\a", "f": "\f", "t": "\t", "n": "\n", "r": "\r", "v": "\v"}
_HEX_DIGITS = {"x": 2, "u": 4, "U": 8}
_DIGITS = frozenset(string.digits)
_PLAIN = frozenset(string.ascii_letters + string.digits + "_")  # RE2 reads these as themselves
_LOOK_AROUND = ("?=", "?!", "?<=", "?<!")
WORD_BOUNDARY = ("Rust's word boundaries are Unicode-aware (é is a word character) and RE2's ASCII-only; "
                 "spell the boundary out, e.g. (?:^|\\.)name(?:\\.|$)")


QUOTED_CHARS = 80  # of a pattern an error quotes


def quoted_pattern(pattern: str) -> str:
    """A pattern as an error quotes it: whole when short, else its start and its length (one error is one line a
    person reads, and a hostile pattern may hold 100,000 characters)."""
    if len(pattern) <= QUOTED_CHARS:
        return quoted(pattern)
    return f"{quoted(pattern[:QUOTED_CHARS] + '...')} ({len(pattern):,} characters)"


class PatternError(RecipeError):
    """A pattern burn-store's regex refuses, or that Store Studio cannot match as burn-store would.

    The message says why; the caller names the rule or field the pattern belongs to.
    """


def _ranges(ranges: tuple[tuple[int, int], ...]) -> str:
    return "".join(f"\\x{{{low:X}}}" + (f"-\\x{{{high:X}}}" if high != low else "") for low, high in ranges)


def _complement(ranges: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    out, start = [], 0
    for low, high in ranges:
        if low > start:
            out.append((start, low - 1))
        start = high + 1
    return (*out, (start, 0x10FFFF))


_WORD_ITEMS = r"\p{L}\p{M}\p{Nd}\p{Pc}\p{Nl}" + _ranges(_WORD_EXTRA)
_SPACE_ITEMS = _ranges(_WHITE_SPACE)
# Perl classes for RE2: the items inside a class (None: not expressible there), and the class outside one
_PERL = {"d": (r"\p{Nd}", r"\p{Nd}"), "D": (r"\P{Nd}", r"\P{Nd}"), "s": (_SPACE_ITEMS, f"[{_SPACE_ITEMS}]"),
         "S": (_ranges(_complement(_WHITE_SPACE)), f"[^{_SPACE_ITEMS}]"), "w": (_WORD_ITEMS, f"[{_WORD_ITEMS}]"),
         "W": (None, f"[^{_WORD_ITEMS}]")}


def _literal(char: str) -> str:
    """``char`` as RE2 reads it literally, in a class or outside one."""
    if char in _PLAIN or (not char.isascii() and char.isprintable() and not char.isspace()):
        return char
    if char in string.punctuation:
        return "\\" + char
    return f"\\x{{{ord(char):X}}}"


def _is_white_space(char: str) -> bool:
    """Rust's ``char::is_whitespace``, which its parser skips around a repeat's numbers."""
    return bool(char) and any(low <= ord(char) <= high for low, high in _WHITE_SPACE)


def _is_name_char(char: str, first: bool) -> bool:
    """Within Rust's group names (``_`` or Alphabetic first, then also ``.[]`` and numbers): the letters
    and numbers Python knows, a subset of Rust's Alphabetic and Numeric, so no name Rust refuses is taken."""
    if char == "_" or char.isalpha():
        return True
    return not first and (char in ".[]" or unicodedata.category(char) in ("Nd", "Nl", "No"))


@dataclass
class _Branch:
    """The items of the alternative being read: their count and depths, where the last one starts in the
    output and what it is (a repeat is wrapped in a group before it is repeated again; flags cannot be)."""

    count: int = 0
    deepest: int = 0
    last: int = 0
    last_start: int = 0
    last_kind: str = ""

    def add(self, depth: int, start: int, kind: str) -> None:
        self.count += 1
        self.deepest = max(self.deepest, depth)
        self.last, self.last_start, self.last_kind = depth, start, kind

    def repeated(self) -> int:
        self.last += 1
        self.deepest = max(self.deepest, self.last)
        self.last_kind = "repeat"
        return self.last

    @property
    def depth(self) -> int:
        """regex-syntax's depth of the alternative: nothing, its one item, or a concatenation of items."""
        return 0 if self.count == 0 else self.last if self.count == 1 else 1 + self.deepest


@dataclass
class _Group:
    """A group being read (the outermost is the whole pattern): its finished alternatives and the current one."""

    opened_at: int  # in the pattern
    start: int  # in the output
    alternatives: int = 0
    deepest: int = 0
    branch: _Branch = field(default_factory=_Branch)

    def alternate(self) -> None:
        self.alternatives += 1
        self.deepest = max(self.deepest, self.branch.depth)
        self.branch = _Branch()

    @property
    def depth(self) -> int:
        return self.branch.depth if not self.alternatives else 1 + max(self.deepest, self.branch.depth)


class _Reader:
    """Reads a pattern as regex-syntax's parser does and writes out the RE2 pattern that means the same.

    Iterative, with an explicit stack of open groups: no pattern makes it recurse. ``chars`` collects the
    text of a pattern made only of literal characters (after a leading ``^``), None once it is anything else.
    """

    def __init__(self, pattern: str) -> None:
        self.text = pattern
        self.at = 0
        self.out: list[str] = []
        self.groups = [_Group(0, 0)]
        self.names: dict[str, int] = {}
        self.captures = 0
        self.chars: list[str] | None = []
        self.at_start = False

    # --- the cursor ------------------------------------------------------------------------------------
    def char(self, ahead: int = 0) -> str:
        at = self.at + ahead
        return self.text[at] if at < len(self.text) else ""

    def take(self) -> str:
        char = self.char()
        if not char:
            raise self.error("the pattern ends too early")
        self.at += 1
        return char

    def error(self, problem: str, at: int | None = None) -> PatternError:
        return PatternError(f"{problem} at position {self.at if at is None else at}")

    def check_depth(self, depth: int, at: int) -> None:
        if depth > NEST_LIMIT:
            raise self.error(f"it nests deeper than {NEST_LIMIT} levels (Rust's regex limit)", at)

    # --- the pattern -----------------------------------------------------------------------------------
    def read(self) -> str:
        while self.at < len(self.text):
            char = self.take()
            if char == "(":
                self.open_group()
            elif char == ")":
                self.close_group()
            elif char == "|":
                self.groups[-1].alternate()
                self.emit("|", plain=False)
            elif char == "[":
                self.item(*self.read_class())
            elif char in "?*+":
                self.repeat(char, self.at - 1)
            elif char == "{":
                start = self.at - 1
                self.repeatable(start)  # first, as Rust says it: {foo} repeats nothing before it is no count
                self.repeat(self.read_count(), start)
            elif char == "\\":
                self.escape()
            elif char in ".^$":
                self.anchor_or_dot(char)
            else:
                self.literal(char)
        if len(self.groups) > 1:
            raise self.error("unclosed group", self.groups[-1].opened_at)
        self.check_depth(self.groups[0].depth, 0)
        return "".join(self.out)

    def emit(self, text: str, plain: bool) -> int:
        self.out.append(text)
        if not plain:
            self.chars = None
        return len(self.out) - 1

    def item(self, text: str, kind: str, depth: int = 0) -> None:
        """One item of the current alternative (``depth`` its syntax tree's: a group's, a bracketed class's)."""
        start = self.emit(text, plain=kind == "literal")
        self.groups[-1].branch.add(depth, start, kind)

    def literal(self, char: str) -> None:
        self.item(_literal(char), "literal")
        if self.chars is not None:
            self.chars.append(char)

    def anchor_or_dot(self, char: str) -> None:
        at_start = char == "^" and not self.out
        self.item(char, "dot" if char == "." else "anchor")
        if at_start:
            self.at_start, self.chars = True, []

    # --- groups ----------------------------------------------------------------------------------------
    def open_group(self) -> None:
        opened_at = self.at - 1
        if self.text.startswith(_LOOK_AROUND, self.at):
            raise self.error("look-around ((?=, (?!, (?<=, (?<!) is not supported by Rust's regex", opened_at)
        if self.text.startswith(("?P<", "?<"), self.at):
            self.at += 3 if self.char(1) == "P" else 2
            self.captures += 1
            self.read_name(self.captures)
            self.push_group(opened_at, "(")
        elif self.char() == "?":
            self.at += 1
            flags = self.read_flags()
            if self.take() == ":":
                self.push_group(opened_at, f"(?{flags}:")
            elif not flags:
                raise self.error("empty flags (?)", opened_at)
            else:
                self.item(f"(?{flags})", "flags")
        else:
            self.captures += 1
            self.push_group(opened_at, "(")

    def push_group(self, opened_at: int, text: str) -> None:
        self.groups.append(_Group(opened_at, self.emit(text, plain=False)))

    def close_group(self) -> None:
        if len(self.groups) == 1:
            raise self.error("a ) closes no group", self.at - 1)
        group = self.groups.pop()
        self.emit(")", plain=False)
        depth = 1 + group.depth
        self.check_depth(depth, group.opened_at)
        self.groups[-1].branch.add(depth, group.start, "group")

    def read_name(self, index: int) -> None:
        """``(?P<name>`` or ``(?<name>``: a name Rust takes, numbered as Rust and RE2 number groups."""
        start = self.at
        while self.char() != ">":
            if not _is_name_char(self.take(), first=self.at - 1 == start):
                raise self.error(f"{self.text[self.at - 1]!r} cannot be part of a group name", self.at - 1)
        name = self.text[start:self.at]
        self.at += 1
        if not name:
            raise self.error("empty group name", start)
        if name in self.names:
            raise self.error(f"group name {name!r} given twice", start)
        self.names[name] = index

    def read_flags(self) -> str:
        """Flags up to ``:`` or ``)`` as regex-syntax checks them; RE2 has i, m, s and U (not x, u or R)."""
        start, seen = self.at, set()
        while self.char() not in (":", ")"):
            char = self.take()
            if char in "xuR":
                raise self.error(f"the {char} flag is not supported here (RE2 has i, m, s and U)", self.at - 1)
            if char not in "imsU-":
                raise self.error(f"unknown flag {char!r}", self.at - 1)
            if char in seen:
                raise self.error(f"{char!r} given twice in flags", self.at - 1)
            seen.add(char)
        flags = self.text[start:self.at]
        if flags.endswith("-"):
            raise self.error("a flag negation (-) with no flag after it", self.at - 1)
        return flags

    # --- repeats ---------------------------------------------------------------------------------------
    def repeatable(self, at: int) -> None:
        branch = self.groups[-1].branch
        if branch.count == 0 or branch.last_kind == "flags":
            raise self.error("a repeat with nothing to repeat", at)

    def repeat(self, operator: str, at: int) -> None:
        self.repeatable(at)
        branch = self.groups[-1].branch
        if self.char() == "?":
            self.at += 1
            operator += "?"
        if branch.last_kind == "repeat":  # Rust repeats a repeat (a**, a{2}{3}); RE2 only a group's
            self.out.insert(branch.last_start, "(?:")
            self.out.append(")")
        self.emit(operator, plain=False)
        self.check_depth(branch.repeated(), at)

    def read_count(self) -> str:
        """``{n}``, ``{n,}`` or ``{n,m}``, blanks allowed around the numbers as Rust allows them."""
        start = self.at - 1
        low = self.read_number(start)
        if self.char() != ",":
            operator = f"{{{self.count(low, start)}}}"
        elif self.char(1) == "}":
            self.at += 1
            operator = f"{{{self.count(low, start)},}}"
        else:
            self.at += 1
            low_count, high_count = self.count(low, start), self.count(self.read_number(start), start)
            if low_count > high_count:
                raise self.error("a repeat's minimum is above its maximum", start)
            operator = f"{{{low_count},{high_count}}}"
        if self.char() != "}":
            raise self.error("unclosed repeat (\\{ is the character {)", start)
        self.at += 1
        return operator

    def read_number(self, start: int) -> str:
        while _is_white_space(self.char()):
            self.at += 1
        first = self.at
        while self.char() in _DIGITS:
            self.at += 1
        digits = self.text[first:self.at]
        while _is_white_space(self.char()):
            self.at += 1
        if not self.char():
            raise self.error("unclosed repeat (\\{ is the character {)", start)
        return digits

    def count(self, digits: str, start: int) -> int:
        if not digits:
            raise self.error("a repeat wants a number (\\{ is the character {)", start)
        if len(digits.lstrip("0")) > len(str(MAX_REPEAT)) or int(digits) > MAX_REPEAT:
            raise self.error(f"a repeat count above {MAX_REPEAT:,} (RE2's limit)", start)
        return int(digits)

    # --- escapes ---------------------------------------------------------------------------------------
    def escape(self) -> None:
        kind, text = self.read_escape(in_class=False)
        if kind == "literal":
            self.literal(text)
        else:
            self.item(text, kind)

    def read_escape(self, in_class: bool) -> tuple[str, str]:
        """The escape the cursor is past the backslash of, as (kind, RE2 text); a literal's text is the
        character itself."""
        start = self.at - 1
        char = self.char()
        if not char:
            raise self.error("a trailing backslash", start)
        self.at += 1
        if char in _DIGITS:
            raise self.error(f"\\{char}: backreferences (and octal escapes) are not supported by Rust's regex",
                             start)
        if char in _HEX_DIGITS:
            return "literal", self.read_hex(char, start)
        if char in "pP":
            return "class", self.read_property(char, start)
        if char in _PERL:
            return "class", self.perl_class(char, start, in_class)
        if char.isascii() and not char.isalnum() and char not in "<>":  # regex-syntax's is_escapeable_character
            return "literal", char
        if char in _SPECIAL:
            return "literal", _SPECIAL[char]
        if char in "bB<>Az" and in_class:
            raise self.error(f"\\{char} cannot stand in a class", start)
        if char in "bB<>":
            raise self.error(f"\\{char}: {WORD_BOUNDARY}", start)
        if char in "Az":
            return "anchor", f"\\{char}"
        raise self.error(f"\\{char} is no escape Rust's regex knows", start)

    def read_hex(self, kind: str, start: int) -> str:
        """``\\x7F``, ``\\u00E9``, ``\\U0001F600`` or any of them braced: ``\\x{E9}``."""
        if self.char() == "{":
            end = self.text.find("}", self.at)
            if end < 0:
                raise self.error(f"unclosed \\{kind}{{...}}", start)
            digits, self.at = self.text[self.at + 1:end], end + 1
        else:
            digits = self.text[self.at:self.at + _HEX_DIGITS[kind]]
            self.at += len(digits)
            if len(digits) < _HEX_DIGITS[kind]:
                raise self.error(f"\\{kind} wants {_HEX_DIGITS[kind]} hex digits", start)
        if not digits or not set(digits) <= set(string.hexdigits):
            raise self.error(f"\\{kind} wants hex digits", start)
        code = int(digits, 16) if len(digits.lstrip("0")) <= 6 else 0x110000
        if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
            raise self.error(f"\\{kind}: {digits} is no Unicode character", start)
        return chr(code)

    def read_property(self, kind: str, start: int) -> str:
        """``\\pL`` or ``\\p{Greek}``: general categories and scripts as RE2 spells them (Rust takes them too)."""
        if self.char() == "{":
            end = self.text.find("}", self.at)
            if end < 0:
                raise self.error(f"unclosed \\{kind}{{...}}", start)
            name, self.at = self.text[self.at + 1:end], end + 1
        else:
            name = self.take()
        if name == "Cs":
            raise self.error(f"\\{kind}{{Cs}}: Rust's regex has no class of surrogates (no text holds one)", start)
        if not (name and name[0].isascii() and name[0].isalpha() and set(name) <= _PLAIN
                and _known_property(name)):
            raise self.error(f"\\{kind}{{{name}}}: not a Unicode class RE2 knows (general categories and scripts, "
                             f"spelled as in \\p{{L}}, \\p{{Lu}}, \\p{{Greek}})", start)
        return f"\\{kind}{{{name}}}"

    def perl_class(self, char: str, start: int, in_class: bool) -> str:
        inside, outside = _PERL[char]
        if not in_class:
            return outside
        if inside is None:
            raise self.error("\\W inside [...] cannot be matched as Rust does here (write [^\\w...])", start)
        return inside

    # --- classes ---------------------------------------------------------------------------------------
    def read_class(self) -> tuple[str, str, int]:
        """``[...]`` as regex-syntax reads it (a ``]`` or ``-`` first is literal), without the nested classes
        and set operations RE2 lacks; ``[:alpha:]`` and the like as they are (RE2's are Rust's). Returns the
        item: its RE2 text, kind and depth (the brackets, and a union when it holds more than one member)."""
        start, parts, items = self.at - 1, ["["], 0
        if self.char() == "^":
            self.at += 1
            parts.append("^")
        while self.char() == "-":
            parts.append(_literal(self.take()))
            items += 1
        if not items and self.char() == "]":
            parts.append(_literal(self.take()))
            items += 1
        while True:
            char = self.char()
            if not char:
                raise self.error("unclosed class", start)
            if char == "]":
                self.at += 1
                return "".join(parts) + "]", "class", 1 + (items > 1)
            if char == "[":
                parts.append(self.ascii_class())
            elif char in "&-~" and self.char(1) == char:
                raise self.error(f"class set operations ({char * 2}) are not supported here", self.at)
            else:
                parts.append(self.class_range())
            items += 1

    def ascii_class(self) -> str:
        end = self.text.find(":]", self.at + 2)
        name = self.text[self.at + 2:end] if self.char(1) == ":" and end > 0 else ""
        if name.removeprefix("^") not in _ASCII_CLASSES:
            raise self.error("nested classes ([a[bc]]) are not supported here; write [abc]", self.at)
        self.at = end + 2
        return f"[:{name}:]"

    def class_range(self) -> str:
        start = self.at
        first = self.class_item()
        if self.char() != "-" or self.char(1) in ("]", "-"):
            return first[1]
        self.at += 1
        if not self.char():
            raise self.error("unclosed class", start)
        last = self.class_item()
        if not (first[0] == last[0] == "literal"):
            raise self.error("a class range's ends must be characters", start)
        if first[2] > last[2]:
            raise self.error("a class range's start is above its end", start)
        return f"{first[1]}-{last[1]}"

    def class_item(self) -> tuple[str, str, str]:
        """One member of a class as (kind, RE2 text, the character, for a literal)."""
        char = self.take()
        if char != "\\":
            return "literal", _literal(char), char
        kind, text = self.read_escape(in_class=True)
        return (kind, _literal(text), text) if kind == "literal" else (kind, text, "")


@lru_cache(maxsize=256)
def _known_property(name: str) -> bool:
    try:
        re2.compile(f"\\p{{{name}}}", _options(ignore_case=False))
    except re2.error:
        return False
    return True


def _options(ignore_case: bool) -> re2.Options:
    options = re2.Options()
    options.max_mem = MAX_MEM
    options.encoding = re2.Options.Encoding.UTF8
    options.log_errors = False  # a refused pattern is our one line, not also RE2's log line on stderr
    options.case_sensitive = not ignore_case
    return options


# RE2's refusals of a pattern read the Rust way (its other errors cannot happen: the reader refused those first)
_RE2_REFUSALS = ((("pattern too large",), f"it compiles to more than RE2's {MAX_MEM >> 20} MiB for one pattern "
                                          "(a long repeat of a large class, such as \\w{1,100}?)"),
                 (("bad repetition", "invalid repetition"), f"its repeats multiply to more than {MAX_REPEAT:,} "
                                                            "(RE2's limit)"))


def _re2_reason(error: re2.error) -> str:
    text = error.args[0].decode("utf-8", "replace") if error.args and isinstance(error.args[0], bytes) else str(error)
    return next((reason for starts, reason in _RE2_REFUSALS if text.startswith(starts)), f"RE2 refuses it: {text}")


class RustRegex:
    """A pattern read as burn-store's ``regex`` reads it, matched by RE2 in time linear in the name.

    ``literal`` is the text of a pattern that is plain text (``at_start`` when it is ``^text``): searching
    for it is a string method then. ``groups`` and ``groupindex`` are Rust's numbering of the groups.
    """

    __slots__ = ("pattern", "groups", "groupindex", "literal", "at_start", "program_size", "_compiled")

    def __init__(self, pattern: str, ignore_case: bool = False) -> None:
        if len(pattern) > MAX_PATTERN_CHARS:
            raise PatternError(f"it is longer than {MAX_PATTERN_CHARS:,} characters")
        try:
            pattern.encode("utf-8")
        except UnicodeEncodeError as exc:  # JSON's "\ud800": a Rust string cannot hold it, nor RE2's UTF-8
            raise PatternError(f"a lone surrogate (U+{ord(pattern[exc.start]):04X}) at position {exc.start}") from None
        reader = _Reader(pattern)
        translated = reader.read()
        try:
            self._compiled = re2.compile(translated, _options(ignore_case))
        except re2.error as exc:
            raise PatternError(_re2_reason(exc)) from None
        self.pattern = pattern
        self.groups = reader.captures
        self.groupindex = dict(reader.names)
        self.literal = "".join(reader.chars) if reader.chars and not ignore_case else None
        self.at_start = reader.at_start
        self.program_size = self._compiled.programsize

    def search(self, text: str) -> bool:
        """Whether the pattern matches anywhere in ``text`` (Rust's ``is_match``)."""
        if self.literal is not None:
            return text.startswith(self.literal) if self.at_start else self.literal in text
        return self._compiled.search(text) is not None

    def subn(self, replace: Callable[[object], str], text: str) -> tuple[str, int]:
        """Every match replaced by ``replace(match)`` as Rust's ``replace_all`` does, and how many were.

        Rust's matches: an empty match where the previous match ended is skipped (``a*`` on ``baaac``
        gives ``-b-c-``, where Python's ``re`` gives ``-b--c-``). Finding each match may read the rest of
        the name (in Rust too), so a name may have REPLACE_WORK / its length matches: a name under 8,192
        characters never reaches that, a hostile one of megabytes is refused rather than replaced for hours.
        """
        pieces, at, count, last_end = [], 0, 0, -1
        most = max(64, REPLACE_WORK // (len(text) + 1))
        for match in self._compiled.finditer(text):
            start, end = match.span()
            if start == end == last_end:
                continue
            count += 1
            if count > most:
                raise PatternError(f"{quoted_pattern(self.pattern)} matches more than {most:,} times in a name of "
                                   f"{len(text):,} characters (the most Store Studio replaces in a name that long)")
            pieces += [text[at:start], replace(match)]
            at = last_end = end
        return "".join(pieces) + text[at:], count


_budget: ContextVar[list[int] | None] = ContextVar("pattern budget left", default=None)


@contextmanager
def pattern_budget() -> Iterator[None]:
    """Patterns compiled inside share one budget of PATTERN_BUDGET characters read and RE2 instructions
    compiled: a shared recipe (or a command line) of thousands of costly patterns is refused within a
    second, never read and compiled into gigabytes for minutes."""
    token = _budget.set([PATTERN_BUDGET])
    try:
        yield
    finally:
        _budget.reset(token)


def _spend(cost: int) -> None:
    left = _budget.get()
    if left is not None:
        left[0] -= cost
        if left[0] < 0:
            raise PatternError(f"the patterns together are too costly: more than {PATTERN_BUDGET:,} characters and "
                               "RE2 instructions (the most one recipe or command line may hold)")


def compile(pattern: str, *, ignore_case: bool = False) -> RustRegex:  # noqa: A001 - re2.compile's name
    """``pattern`` read the Rust way and compiled for RE2 (cached); PatternError says why it cannot be."""
    _spend(len(pattern))  # before it is read, a character at a time
    regex = _compiled(pattern, ignore_case)
    _spend(regex.program_size)
    return regex


_compiled = lru_cache(maxsize=1024)(RustRegex)
