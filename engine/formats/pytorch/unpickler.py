"""A pickle interpreter that executes nothing.

Python's own unpickler imports and calls whatever a pickle names. This one runs the opcodes
itself: containers are built from plain Python types, every global is looked up in a table of
inert stand-ins (``allowlist.resolve``: a class it does not know becomes a ``Placeholder``, a
global on the deny list is refused), and "calls" (REDUCE, NEWOBJ, INST, OBJ, BUILD) only ever
reach those stand-ins, which build descriptors and placeholders. Nothing is imported.
"""

from __future__ import annotations

import codecs
import functools
import os
import struct
from typing import Any, Callable

from ...errors import FormatError, shown
from .allowlist import Buildable, Global, Placeholder, resolve

MAX_PROTOCOL = 5
READ_AHEAD = 64 << 10  # bytes fetched at a time from a file-backed stream
# Containers may nest this deep. CPython hashes (and compares, and prints) nested tuples by
# recursing in C: a tuple nested 150,000 deep used as a dict key crashes the interpreter, so
# depth is counted as each container is built, before anything can hash it. Real checkpoints
# nest a few levels; walking and printing recurse in Python too, so the limit stays well
# under Python's recursion limit.
MAX_DEPTH = 100
# An integer (LONG1/LONG4) of more bytes than this is refused: past about 1,780 bytes it
# cannot even be printed (Python's 4300-digit limit), and no weights file needs one.
MAX_LONG_BYTES = 1024
# Protocol 0 writes integers as decimal text (INT, LONG, memo indices), held to the same bound: a LONG4 of
# MAX_LONG_BYTES holds [-_LONG_BOUND, _LONG_BOUND), whose widest text is the sign and 2,466 digits. The length
# is checked before Python parses the text, since int() of decimal text takes time quadratic in its digits.
_LONG_BOUND = 1 << (8 * MAX_LONG_BYTES - 1)
_MAX_LONG_TEXT = len(str(-_LONG_BOUND))
# Non-text dict keys and set items (optimizer states key by int) whose hashes are all equal
# make each insertion scan the others: quadratic time. More than this many equal hashes is refused.
MAX_EQUAL_HASHES = 64

PersistentLoad = Callable[[Any], Any]


class PickleStream:
    """A bounded byte stream over a file or a bytes object; nothing past ``end`` is ever read.

    Reading whole pickles up front is impossible in the legacy layout (their length is only
    known once parsed), so reads are positioned and buffered here instead. A byte named in a refusal
    counts from ``start`` (the member's first byte, read whole or streamed), as ``at`` gives it.
    """

    def __init__(self, path: str | os.PathLike, fetch: Callable[[int, int], bytes], start: int, end: int,
                 what: str = "the pickle"):
        self.path = path
        self.pos = self.origin = start
        self.end = end
        self.what = what
        self._fetch = fetch
        self._buf = b""
        self._buf_start = start
        self.data: bytes | None = None  # the whole pickle, when it is in memory (the interpreter then indexes it)

    @classmethod
    def over_bytes(cls, path: str | os.PathLike, data: bytes, what: str = "the pickle") -> "PickleStream":
        stream = cls(path, lambda offset, n: data[offset:offset + n], 0, len(data), what)
        stream.data = stream._buf = data
        return stream

    def at(self, pos: int) -> int:
        """``pos`` as a refusal names it: counted from the stream's first byte."""
        return pos - self.origin

    def read(self, n: int) -> bytes:
        rel = self.pos - self._buf_start
        if 0 <= n and rel + n <= len(self._buf) and self.pos + n <= self.end:  # the hot path: buffered
            self.pos += n
            return self._buf[rel:rel + n]
        if n < 0 or self.pos + n > self.end:
            raise FormatError(self.path, f"{self.what} is truncated: it needs {n} bytes at byte {self.at(self.pos)} "
                                         f"but only {self.end - self.pos} remain")
        rel = self.pos - self._buf_start
        if rel + n > len(self._buf):
            if n > READ_AHEAD:
                data = self._fetch(self.pos, n)
                self.pos += n
                self._buf, self._buf_start = b"", self.pos  # keep pos inside the (empty) buffer
                return data
            self._buf_start = self.pos
            self._buf = self._fetch(self.pos, min(READ_AHEAD, self.end - self.pos))
            rel = 0
        data = self._buf[rel:rel + n]
        self.pos += n
        return data

    def readline(self) -> bytes:
        """One text-protocol argument, without its newline."""
        parts = []
        while True:
            rel = self.pos - self._buf_start
            newline = self._buf.find(b"\n", rel)
            if newline >= 0:
                parts.append(self._buf[rel:newline])
                self.pos += newline - rel + 1
                return b"".join(parts)
            parts.append(self._buf[rel:])
            self.pos += len(self._buf) - rel
            if self.pos >= self.end:
                raise FormatError(self.path, f"{self.what} is truncated inside a text argument")
            self._buf_start = self.pos
            self._buf = self._fetch(self.pos, min(READ_AHEAD, self.end - self.pos))

    def skip(self, n: int) -> None:
        if n < 0 or self.pos + n > self.end:
            raise FormatError(self.path, f"{self.what} is truncated: {n} bytes at byte {self.at(self.pos)} run past "
                                         "its end")
        self.pos += n
        if self.pos > self._buf_start + len(self._buf):
            self._buf, self._buf_start = b"", self.pos


_STRUCTS = {fmt: struct.Struct(fmt) for fmt in ("<H", "<i", "<I", "<Q", "<B")}


class _Mark:
    """The MARK opcode's stack sentinel."""


def load(stream: PickleStream, persistent_load: PersistentLoad | None = None, *, tuple_ids: bool = False,
         refused_by_torch: set[str] | None = None) -> Any:
    """Interpret one pickle from ``stream`` (which is left just after its STOP).

    ``tuple_ids``: the layout names storages by plain ``('storage', ...)`` tuples passed to the
    rebuild functions (burn-store's tar fixtures), which go through ``persistent_load`` too.
    ``refused_by_torch`` collects the globals ``torch.load(weights_only=True)`` would refuse.
    """
    return _Machine(stream, persistent_load, tuple_ids, refused_by_torch).run()


class _Machine:
    def __init__(self, stream: PickleStream, persistent_load: PersistentLoad | None, tuple_ids: bool = False,
                 refused_by_torch: set[str] | None = None):
        self.stream = stream
        self.path = stream.path
        self.persistent_load = persistent_load
        self.tuple_ids = tuple_ids
        self.refused_by_torch = refused_by_torch if refused_by_torch is not None else set()
        self.stack: list[Any] = []
        self.marks: list[int] = []
        self.memo: dict[int, Any] = {}
        # Depth of each container that holds containers (others are 1), keeping it alive so
        # that its id is never reused for another object.
        self.depths: dict[int, tuple[Any, int]] = {}
        self.hashes: dict[tuple[int, int], int] = {}  # (container id, hash) -> how many non-text keys had it
        self.hashed_containers: dict[int, Any] = {}  # keeps each counted container alive, so its id is not reused

    def run(self) -> Any:
        if self.stream.data is not None:
            return self.run_in_memory(self.stream.data)
        stream = self.stream
        read, handlers = stream.read, _opcodes().get
        while True:
            start = stream.pos
            code = read(1)
            handler = handlers(code)
            if handler is None:
                raise FormatError(self.path, f"{stream.what} has an unknown opcode {code!r} at byte "
                                                 f"{stream.at(start)}")
            try:
                if handler(self) is _STOP:
                    if len(self.stack) != 1 or self.marks:
                        raise ValueError("STOP with a malformed stack")
                    return self.stack[0]
            except FormatError:
                raise
            except (ValueError, TypeError, KeyError, IndexError, OverflowError, struct.error,
                    UnicodeDecodeError, RecursionError, MemoryError) as exc:
                name = opcode_name(code)
                raise FormatError(self.path, f"{stream.what} is malformed ({name} at byte {stream.at(start)}): "
                                             f"{exc}") from None

    def run_in_memory(self, data: bytes) -> Any:
        """``run`` over a pickle held whole (a zip's data.pkl): the opcodes state dicts and configs are made of
        (memo, numbers, text, tuples, lists and dicts, REDUCE and BINPERSID) are decoded here by index into
        ``data``, with the same checks and messages as their handlers; any other opcode, any argument that would
        run past the end and any stack these fast paths do not expect go to the handler through the stream,
        which checks and words each refusal. The commonest opcodes come first (the benchmark's config-heavy and
        state-dict rows): each comparison before a match is paid by every opcode that reaches it."""
        stream, stack, marks, memo, built = self.stream, self.stack, self.marks, self.memo, self.built
        end, pos = stream.end, stream.pos
        while True:
            start = pos
            code = data[pos] if pos < end else -1
            pos += 1
            try:
                if code == _BINGET and pos < end:
                    value = memo.get(data[pos], _MISSING)
                    if value is _MISSING:
                        raise ValueError(f"memo entry {data[pos]} was never stored")
                    stack.append(value)
                    pos += 1
                elif code == _LONG_BINPUT and pos + 4 <= end:
                    if not stack or (marks and len(stack) <= marks[-1]):
                        raise ValueError("stack underflow")
                    memo[_U32(data, pos)[0]] = stack[-1]
                    pos += 4
                elif code == _BINUNICODE and pos + 4 <= end and pos + 4 + _U32(data, pos)[0] <= end:
                    n = _U32(data, pos)[0]
                    stack.append(data[pos + 4:pos + 4 + n].decode("utf-8", "surrogatepass"))
                    pos += 4 + n
                elif code == _MARK:
                    marks.append(len(stack))
                elif code == _BININT1 and pos < end:
                    stack.append(data[pos])
                    pos += 1
                elif code == _BINFLOAT and pos + 8 <= end:
                    stack.append(_F64(data, pos)[0])
                    pos += 8
                elif code == _BINPUT and pos < end:
                    if not stack or (marks and len(stack) <= marks[-1]):
                        raise ValueError("stack underflow")
                    memo[data[pos]] = stack[-1]
                    pos += 1
                elif code == _EMPTY_LIST:
                    stack.append([])
                elif code == _EMPTY_DICT:
                    stack.append({})
                elif code == _APPENDS or code == _SETITEMS:
                    where = marks[-1] if marks else 0
                    target = stack[where - 1] if where > (marks[-2] if len(marks) > 1 else 0) else None
                    if code == _APPENDS and type(target) is list:
                        items = stack[where:]
                        del stack[where:]
                        marks.pop()
                        built(target, items)
                        target.extend(items)
                    elif code == _SETITEMS and type(target) is dict and (len(stack) - where) % 2 == 0:
                        items = stack[where:]
                        del stack[where:]
                        marks.pop()
                        _setitems(self, target, items)
                    else:  # a subclass's items (a placeholder), or a stack the handler refuses in its words
                        pos = self.through_handler(code, start, pos)
                elif _TUPLE1 <= code <= _TUPLE3:
                    n = code - _TUPLE1 + 1
                    if len(stack) - n < (marks[-1] if marks else 0):
                        raise ValueError("stack underflow")
                    items = tuple(stack[-n:])
                    del stack[-n:]
                    stack.append(built(items, items))
                elif code == _TUPLE and marks:
                    where = marks.pop()
                    items = stack[where:]
                    del stack[where:]
                    stack.append(built(tuple(items), items))
                elif code == _REDUCE and len(stack) - 2 >= (marks[-1] if marks else 0):
                    args = stack.pop()
                    stack[-1] = self.call(stack[-1], args, "REDUCE")
                elif code == _LONG_BINGET and pos + 4 <= end:
                    index = _U32(data, pos)[0]
                    value = memo.get(index, _MISSING)
                    if value is _MISSING:
                        raise ValueError(f"memo entry {index} was never stored")
                    stack.append(value)
                    pos += 4
                elif code == _BININT2 and pos + 2 <= end:
                    stack.append(_U16(data, pos)[0])
                    pos += 2
                elif code == _BININT and pos + 4 <= end:
                    stack.append(_I32(data, pos)[0])
                    pos += 4
                elif code == _NONE:
                    stack.append(None)
                elif code == _NEWFALSE:
                    stack.append(False)
                elif code == _NEWTRUE:
                    stack.append(True)
                elif code == _EMPTY_TUPLE:
                    stack.append(())
                elif code == _BINPERSID and len(stack) - 1 >= (marks[-1] if marks else 0):
                    stack[-1] = self.persistent(stack[-1])
                elif code == _STOP_OPCODE:
                    if len(stack) != 1 or marks:
                        raise ValueError("STOP with a malformed stack")
                    stream.pos = pos
                    return stack[0]
                else:
                    pos = self.through_handler(code, start, pos)
            except FormatError:
                raise
            except (ValueError, TypeError, KeyError, IndexError, OverflowError, struct.error,
                    UnicodeDecodeError, RecursionError, MemoryError) as exc:
                name = opcode_name(bytes((code,)))
                raise FormatError(self.path, f"{stream.what} is malformed ({name} at byte {stream.at(start)}): "
                                             f"{exc}") from None

    def through_handler(self, code: int, start: int, pos: int) -> int:
        """The in-memory loop's opcode at ``start`` run by its handler, which reads its arguments from the stream;
        where the loop goes on."""
        stream = self.stream
        if code < 0:
            stream.pos = start
            stream.read(1)  # past the end: the stream's own message
        handler = _by_code()[code]
        if handler is None:
            raise FormatError(self.path, f"{stream.what} has an unknown opcode {bytes((code,))!r} at byte "
                                         f"{stream.at(start)}")
        stream.pos = pos
        handler(self)
        return stream.pos

    # --- stack helpers --------------------------------------------------------------------
    def pop(self) -> Any:
        if not self.stack or (self.marks and len(self.stack) <= self.marks[-1]):
            raise ValueError("stack underflow")
        return self.stack.pop()

    def top(self) -> Any:
        if not self.stack or (self.marks and len(self.stack) <= self.marks[-1]):
            raise ValueError("stack underflow")
        return self.stack[-1]

    def pop_mark(self) -> list[Any]:
        if not self.marks:
            raise ValueError("no MARK to pop to")
        where = self.marks.pop()
        items = self.stack[where:]
        del self.stack[where:]
        return items

    def int_arg(self, fmt: str) -> int:
        if fmt == "<B":  # the commonest argument (BININT1, BINPUT, BINGET): no struct needed
            return self.stream.read(1)[0]
        parser = _STRUCTS[fmt]
        return parser.unpack(self.stream.read(parser.size))[0]

    # --- nesting and hashing ---------------------------------------------------------------
    def depth(self, value: Any) -> int:
        if type(value) not in _HOLDERS:
            return 0
        known = self.depths.get(id(value))
        return known[1] if known else 1

    def built(self, container: Any, items: Any) -> Any:
        """Record a new container's depth from its items; refuse it past ``MAX_DEPTH``."""
        if _HOLDERS.isdisjoint(map(type, items)):  # the common case (sizes, strides, ids): one C-level pass
            return container
        known = self.depths.get
        self.deeper(container, 1 + max(known(id(item), _ONE_DEEP)[1] for item in items if type(item) in _HOLDERS))
        return container

    def deeper(self, container: Any, depth: int) -> None:
        """``container`` now holds something ``depth - 1`` deep (an APPEND or SETITEM)."""
        if depth > MAX_DEPTH:
            raise FormatError(self.path, f"{self.stream.what} is nested deeper than {MAX_DEPTH} levels (a container "
                                         f"{depth} levels deep): no weights file nests so deep")
        known = self.depths.get(id(container))
        if known is None or known[1] < depth:
            self.depths[id(container)] = (container, depth)

    def inserted(self, container: Any, key: Any, value: Any) -> None:
        """Account for ``key`` (None for a list item) and ``value`` going into ``container``."""
        depth = max(self.depth(key), self.depth(value))
        if depth:
            self.deeper(container, depth + 1)
        if key is not None and type(key) is not str:
            self.hashed(container, key)

    def hashed(self, container: Any, key: Any) -> None:
        """Count a non-text key's hash per container; many equal ones would make it quadratic."""
        h = (id(container), hash(key))
        self.hashed_containers[h[0]] = container
        count = self.hashes[h] = self.hashes.get(h, 0) + 1
        if count > MAX_EQUAL_HASHES:
            raise FormatError(self.path, f"{self.stream.what} has more than {MAX_EQUAL_HASHES} dict keys or set "
                                         "items with the same hash (a hash-flooding attack)")

    # --- objects --------------------------------------------------------------------------
    def global_(self, module: Any, name: Any) -> Global:
        if not isinstance(module, str) or not isinstance(name, str):
            raise ValueError("a global's module and name must be text")
        found = resolve(self.path, module, name)
        if not found.torch_allows:
            self.refused_by_torch.add(found.qualname)
        return found

    def call(self, target: Any, args: Any, how: str) -> Any:
        """REDUCE, NEWOBJ, INST and OBJ: only an allowlisted stand-in can be 'called'."""
        if not isinstance(target, Global):
            raise ValueError(f"{how} on {type(target).__name__}, which is not an allowed global")
        if not isinstance(args, tuple):
            raise ValueError(f"{how} arguments must be a tuple")
        if target.qualname in _HASHING_CALLS:  # set(items), frozenset(items), OrderedDict(pairs)
            pairs = target.qualname == "collections.OrderedDict"
            for item in (args[0] if args and isinstance(args[0], (list, tuple)) else ()):
                # Python 2 pickles an OrderedDict from a list of [key, value] lists
                self.hashed(args, item[0] if pairs and isinstance(item, (tuple, list)) and item else item)
        if self.tuple_ids and args and isinstance(args[0], tuple) and args[0][:1] == ("storage",):
            args = (self.persistent(args[0]), *args[1:])
        result = target.call(self.path, args)
        # What a stand-in builds holds at most its arguments: count it one level deeper.
        return self.built(result, args) if type(result) in _HOLDERS else result

    def build(self, target: Any, state: Any) -> None:
        if isinstance(target, Placeholder):
            target.state = state  # what __setstate__ or __dict__.update would have received
            depth = self.depth(state)
            if depth:  # counted as it is built, so placeholders nested 20,000 deep stop at the limit, not after
                self.deeper(target, depth + 1)
        elif isinstance(target, Buildable):
            target.setstate(self.path, state)
        elif isinstance(target, dict):
            # An OrderedDict state_dict carries `_metadata` (module versions) as an attribute, not an item.
            if not isinstance(state, (dict, tuple)):
                raise ValueError("BUILD on a dict with a state that is not attributes")
        else:
            raise ValueError(f"BUILD on {type(target).__name__}, which takes no state")

    def persistent(self, pid: Any) -> Any:
        if self.persistent_load is None:
            raise FormatError(self.path, f"{self.stream.what} refers to outside data (persistent id {shown(pid)}), "
                                         "which this layout does not have")
        return self.persistent_load(pid)


_STOP = object()
# What can hold other objects, and so nest: containers, the objects of classes nothing here knows (their
# arguments and state), and slices (slice(slice(...)) nests as deep as a pickle says).
_HOLDERS = {tuple, list, dict, set, frozenset, Placeholder, slice}
# Protocol 2 (torch.save's) names the builtins by their Python 2 module, __builtin__.
_TEXT = {str}
_HASHING_CALLS = {"builtins.set", "builtins.frozenset", "__builtin__.set", "__builtin__.frozenset",
                  "collections.OrderedDict"}


@functools.cache
def opcode_name(code: bytes) -> str:
    """The opcode's name a message gives (``BINUNICODE``), or the byte itself for an opcode pickle has not.
    pickletools (with the pickle module under it, 3-7 ms of CPU) is imported only for such a message, not by
    every conversion of a ``.pt``."""
    import pickletools
    return next((op.name for op in pickletools.opcodes if op.code.encode("latin-1") == code), repr(code))


def _text(raw: bytes) -> str:
    """Python 2 byte strings: UTF-8 when they are, otherwise Latin-1 (as torch.load does)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _quoted(raw: bytes) -> str:
    raw = raw.rstrip(b"\r")
    if len(raw) < 2 or raw[:1] != raw[-1:] or raw[:1] not in (b"'", b'"'):
        raise ValueError("STRING argument is not quoted")
    return _text(codecs.escape_decode(raw[1:-1])[0])


def _op_mark(m: _Machine) -> None:
    m.marks.append(len(m.stack))


def _op_stop(m: _Machine) -> object:
    return _STOP


def _op_pop(m: _Machine) -> None:
    if m.marks and len(m.stack) == m.marks[-1]:
        m.marks.pop()  # POP of a bare MARK, as pickle.py allows
    else:
        m.pop()


def _op_pop_mark(m: _Machine) -> None:
    m.pop_mark()


def _op_dup(m: _Machine) -> None:
    m.stack.append(m.top())


def _push(value_of: Callable[[_Machine], Any]) -> Callable[[_Machine], None]:
    def op(m: _Machine) -> None:
        m.stack.append(value_of(m))
    return op


def _text_int(m: _Machine, text: bytes) -> int:
    if len(text) <= _MAX_LONG_TEXT:
        value = int(text)
        if -_LONG_BOUND <= value < _LONG_BOUND:
            return value
    raise FormatError(m.path, f"{m.stream.what} holds an integer written as {len(text)} characters of text, over "
                              f"the limit of {MAX_LONG_BYTES} bytes (no weights file needs one)")


def _int_line(m: _Machine) -> Any:
    line = m.stream.readline()
    if line in (b"00", b"01"):
        return line == b"01"
    return _text_int(m, line)


def _long_line(m: _Machine) -> int:
    return _text_int(m, m.stream.readline().rstrip(b"L"))


def _long_bytes(m: _Machine, fmt: str) -> int:
    n = m.int_arg(fmt)
    if n < 0:
        raise ValueError("negative LONG length")
    if n > MAX_LONG_BYTES:
        raise FormatError(m.path, f"{m.stream.what} holds an integer of {n} bytes, over the limit of {MAX_LONG_BYTES} "
                                  "(no weights file needs one)")
    return int.from_bytes(m.stream.read(n), "little", signed=True)


def _sized(fmt: str) -> Callable[[_Machine], bytes]:
    def read(m: _Machine) -> bytes:
        n = m.int_arg(fmt)
        if n < 0:
            raise ValueError("negative length")
        return m.stream.read(n)
    return read


def _op_persid(m: _Machine) -> None:
    m.stack.append(m.persistent(m.stream.readline().decode("ascii")))


def _op_binpersid(m: _Machine) -> None:
    m.stack.append(m.persistent(m.pop()))


def _op_reduce(m: _Machine) -> None:
    args = m.pop()
    target = m.pop()
    m.stack.append(m.call(target, args, "REDUCE"))


def _op_newobj(m: _Machine) -> None:
    args = m.pop()
    cls = m.pop()
    m.stack.append(m.call(cls, args, "NEWOBJ"))


def _op_newobj_ex(m: _Machine) -> None:
    kwargs = m.pop()
    args = m.pop()
    cls = m.pop()
    if kwargs:
        raise ValueError("NEWOBJ_EX with keyword arguments")
    m.stack.append(m.call(cls, args, "NEWOBJ_EX"))


def _op_global(m: _Machine) -> None:
    module = m.stream.readline().decode("utf-8")
    name = m.stream.readline().decode("utf-8")
    m.stack.append(m.global_(module, name))


def _op_stack_global(m: _Machine) -> None:
    name = m.pop()
    module = m.pop()
    m.stack.append(m.global_(module, name))


def _op_inst(m: _Machine) -> None:
    module = m.stream.readline().decode("utf-8")
    name = m.stream.readline().decode("utf-8")
    target = m.global_(module, name)
    m.stack.append(m.call(target, tuple(m.pop_mark()), "INST"))


def _op_obj(m: _Machine) -> None:
    items = m.pop_mark()
    if not items:
        raise ValueError("OBJ without a class")
    m.stack.append(m.call(items[0], tuple(items[1:]), "OBJ"))


def _op_build(m: _Machine) -> None:
    state = m.pop()
    m.build(m.top(), state)


def _op_ext(fmt: str) -> Callable[[_Machine], None]:
    def op(m: _Machine) -> None:
        code = m.int_arg(fmt)
        raise FormatError(m.path, f"{m.stream.what} uses the copyreg extension registry (code {code}), "
                                  "which a weights file never needs")
    return op


def _op_buffer(m: _Machine) -> None:
    raise FormatError(m.path, f"{m.stream.what} uses out-of-band buffers (pickle protocol 5), "
                              "which a weights file never needs")


def _op_proto(m: _Machine) -> None:
    version = m.stream.read(1)[0]
    if version > MAX_PROTOCOL:
        raise FormatError(m.path, f"{m.stream.what} uses pickle protocol {version}, newer than {MAX_PROTOCOL}")


def _op_frame(m: _Machine) -> None:
    m.int_arg("<Q")  # frames are only a read-ahead hint


def _op_tuple(m: _Machine) -> None:
    items = m.pop_mark()
    m.stack.append(m.built(tuple(items), items))


def _tuple_n(n: int) -> Callable[[_Machine], None]:
    def op(m: _Machine) -> None:
        items = tuple([m.pop() for _ in range(n)][::-1])
        m.stack.append(m.built(items, items))
    return op


def _op_list(m: _Machine) -> None:
    items = m.pop_mark()
    m.stack.append(m.built(items, items))


def _op_dict(m: _Machine) -> None:
    items = m.pop_mark()
    if len(items) % 2:
        raise ValueError("DICT with an odd number of items")
    result: dict = {}
    _setitems(m, result, items)
    m.stack.append(result)


def _op_frozenset(m: _Machine) -> None:
    items = m.pop_mark()
    for item in items:
        m.hashed(items, item)
    m.stack.append(m.built(frozenset(items), items))


def _op_append(m: _Machine) -> None:
    value = m.pop()
    target = _list(m.top())
    m.inserted(target, None, value)
    target.append(value)


def _op_appends(m: _Machine) -> None:
    items = m.pop_mark()
    target = _list(m.top())
    m.built(target, items)
    target.extend(items)


def _list(target: Any) -> list:
    if isinstance(target, Placeholder):  # a list subclass: its items, kept beside its state
        if target.listitems is None:
            target.listitems = []
        return target.listitems
    if not isinstance(target, list):
        raise ValueError(f"APPEND to {type(target).__name__}, not a list")
    return target


def _op_setitem(m: _Machine) -> None:
    value = m.pop()
    key = m.pop()
    target = _dict(m.top())
    m.inserted(target, key, value)
    target[key] = value


def _op_setitems(m: _Machine) -> None:
    items = m.pop_mark()
    if len(items) % 2:
        raise ValueError("SETITEMS with an odd number of items")
    _setitems(m, _dict(m.top()), items)


def _setitems(m: _Machine, target: dict, items: list[Any]) -> None:
    """Keys and values alternate in ``items``; text keys (a state dict's, a config's) need no hash count."""
    m.built(target, items)
    if _TEXT.issuperset(map(type, items[::2])):  # all of them at once, in C-level passes
        pairs = iter(items)
        target.update(zip(pairs, pairs))
        return
    for i in range(0, len(items), 2):
        key = items[i]
        if type(key) is not str:
            m.hashed(target, key)
        target[key] = items[i + 1]


def _dict(target: Any) -> dict:
    if isinstance(target, Placeholder):  # a dict subclass (defaultdict, a config class): its items
        if target.items is None:
            target.items = {}
        return target.items
    if not isinstance(target, dict):
        raise ValueError(f"SETITEM on {type(target).__name__}, not a dict")
    return target


def _op_additems(m: _Machine) -> None:
    items = m.pop_mark()
    target = m.top()
    if not isinstance(target, set):
        raise ValueError(f"ADDITEMS on {type(target).__name__}, not a set")
    for item in items:
        m.hashed(target, item)
    m.built(target, items)
    target.update(items)


def _get(fmt: str | None) -> Callable[[_Machine], None]:
    def op(m: _Machine) -> None:
        index = _text_int(m, m.stream.readline()) if fmt is None else m.int_arg(fmt)
        if index not in m.memo:
            raise ValueError(f"memo entry {index} was never stored")
        m.stack.append(m.memo[index])
    return op


def _put(fmt: str | None) -> Callable[[_Machine], None]:
    def op(m: _Machine) -> None:
        index = _text_int(m, m.stream.readline()) if fmt is None else m.int_arg(fmt)
        if index < 0:
            raise ValueError("negative memo index")
        m.memo[index] = m.top()
    return op


def _op_memoize(m: _Machine) -> None:
    m.memo[len(m.memo)] = m.top()


def _float_line(m: _Machine) -> float:
    return float(m.stream.readline())


@functools.cache
def _opcodes() -> dict[bytes, Callable[[_Machine], Any]]:
    """Each opcode's handler, made on the first load rather than as the module loads: a conversion that reads
    no pickle never builds it."""
    return {
        b"(": _op_mark, b".": _op_stop, b"0": _op_pop, b"1": _op_pop_mark, b"2": _op_dup,
        b"F": _push(_float_line), b"G": _push(lambda m: struct.unpack(">d", m.stream.read(8))[0]),
        b"I": _push(_int_line), b"J": _push(lambda m: m.int_arg("<i")), b"K": _push(lambda m: m.int_arg("<B")),
        b"M": _push(lambda m: m.int_arg("<H")), b"L": _push(_long_line),
        b"\x8a": _push(lambda m: _long_bytes(m, "<B")), b"\x8b": _push(lambda m: _long_bytes(m, "<i")),
        b"N": _push(lambda m: None), b"\x88": _push(lambda m: True), b"\x89": _push(lambda m: False),
        b"S": _push(lambda m: _quoted(m.stream.readline())),
        b"T": _push(lambda m: _text(_sized("<i")(m))), b"U": _push(lambda m: _text(_sized("<B")(m))),
        b"V": _push(lambda m: m.stream.readline().decode("raw_unicode_escape")),
        b"X": _push(lambda m: _sized("<I")(m).decode("utf-8", "surrogatepass")),
        b"\x8c": _push(lambda m: _sized("<B")(m).decode("utf-8", "surrogatepass")),
        b"\x8d": _push(lambda m: _sized("<Q")(m).decode("utf-8", "surrogatepass")),
        b"B": _push(_sized("<I")), b"C": _push(_sized("<B")), b"\x8e": _push(_sized("<Q")),
        b"\x96": _push(_sized("<Q")),
        b"P": _op_persid, b"Q": _op_binpersid, b"R": _op_reduce, b"\x81": _op_newobj, b"\x92": _op_newobj_ex,
        b"c": _op_global, b"\x93": _op_stack_global, b"i": _op_inst, b"o": _op_obj, b"b": _op_build,
        b"\x82": _op_ext("<B"), b"\x83": _op_ext("<H"), b"\x84": _op_ext("<i"),
        b"\x97": _op_buffer, b"\x98": _op_buffer,
        b"\x80": _op_proto, b"\x95": _op_frame,
        b"t": _op_tuple, b")": _push(lambda m: ()), b"\x85": _tuple_n(1), b"\x86": _tuple_n(2), b"\x87": _tuple_n(3),
        b"l": _op_list, b"]": _push(lambda m: []), b"d": _op_dict, b"}": _push(lambda m: {}),
        b"\x8f": _push(lambda m: set()), b"\x91": _op_frozenset,
        b"a": _op_append, b"e": _op_appends, b"s": _op_setitem, b"u": _op_setitems, b"\x90": _op_additems,
        b"g": _get(None), b"h": _get("<B"), b"j": _get("<I"),
        b"p": _put(None), b"q": _put("<B"), b"r": _put("<I"), b"\x94": _op_memoize,
    }


@functools.cache
def _by_code() -> list[Callable[[_Machine], Any] | None]:
    """The handlers indexed by opcode byte, for the in-memory loop."""
    return [_opcodes().get(bytes((code,))) for code in range(256)]


_MISSING = object()
_ONE_DEEP = (None, 1)  # the depth of a holder ``depths`` does not know: it holds no holder
_U16, _U32, _I32, _F64 = (struct.Struct(fmt).unpack_from for fmt in ("<H", "<I", "<i", ">d"))
(_MARK, _TUPLE, _EMPTY_TUPLE, _TUPLE1, _TUPLE3, _BININT, _BININT1, _BININT2, _BINUNICODE, _BINGET, _LONG_BINGET, _BINPUT,
 _LONG_BINPUT, _NEWFALSE, _NEWTRUE, _NONE, _REDUCE, _BINPERSID, _BINFLOAT, _EMPTY_LIST, _APPENDS, _EMPTY_DICT, _SETITEMS,
 _STOP_OPCODE) = b"(t)\x85\x87JKMXhjqr\x89\x88NRQG]e}u."
