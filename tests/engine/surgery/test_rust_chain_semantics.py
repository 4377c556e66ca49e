"""The printed burn-store chain renames exactly as the CLI does, for every remap rule in the test suite.

Rust's ``regex`` reads ``$1_x`` as the group *named* ``1_x`` (empty when absent); Store Studio reads it
as group 1 then ``_x`` and prints ``${1}_x``. The expander below follows the regex crate's documented
replacement rules (matches are Rust's, as ``engine.rust_regex`` finds them: tests/engine/test_rust_regex.py
holds them to the crate's), and every rule any test (or sample recipe) uses is run through both.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import pytest

from engine import RecipeError, rust_regex
from engine.surgery import Recipe, RemapRule
from engine.surgery.printers import as_rust
from engine.surgery.remap import compile_rules, remap_name, rust_replacement

ROOT = Path(__file__).parents[3]
TRICKY = [(r"^(\w+)\.(\d+)", "$1_x.$2"), (r"^(\w+)", "${1}_x"), (r"(?P<head>\w+)\.w", "$head.weight"),
          (r"^(\w+)", r"\1x"), (r"^(a)", "$$1"), (r"^(\w+)", "cost$"), (r"(\w+)", r"\g<1>_"), (r"^(\w+)\.", "${1}$")]


def rust_expand(template: str, match: Any, groupindex: dict[str, int]) -> str:
    """Rust regex's ``Captures::expand``: ``$$``, ``${name}``, ``$name`` (longest [_0-9A-Za-z]), else a literal ``$``."""
    out, i = [], 0
    while i < len(template):
        if template[i] != "$":
            out.append(template[i])
            i += 1
            continue
        if template.startswith("$$", i):
            out.append("$")
            i += 2
            continue
        braced = re.match(r"\$\{([^}]*)\}", template[i:])
        bare = re.match(r"\$([_0-9A-Za-z]+)", template[i:])
        found = braced or bare
        if not found:
            out.append("$")
            i += 1
            continue
        name = found.group(1)
        try:
            value = match.group(int(name) if name.isascii() and name.isdigit() else groupindex[name])
        except (IndexError, KeyError):
            value = None
        out.append(value or "")
        i += found.end()
    return "".join(out)


def rust_str(tag: str) -> str:
    """A regex for a Rust string literal, as group ``tag``: raw (``r#"..."#``, as many #s as it needs), or escaped
    where the text holds a control character."""
    return rf'(?P<{tag}>r(?P<{tag}_hashes>#*)".*?"(?P={tag}_hashes)|"(?:[^"\\]|\\.)*")'


def rust_value(literal: str) -> str:
    r"""The text a Rust string literal holds: a raw one as it is, an escaped one with ``\u{1b}``, ``\\`` and
    ``\"`` read back."""
    if literal.startswith("r"):
        return literal[1:].strip("#")[1:-1]
    return re.sub(r'\\u\{([0-9a-f]+)\}|\\(.)', lambda m: chr(int(m[1], 16)) if m[1] else m[2], literal[1:-1])


def rules_in_tests() -> set[tuple[str, str]]:
    """Every remap rule written in a test (RemapRule(...), ``--remap P R``, a "remaps" list) or a sample recipe."""
    found: set[tuple[str, str]] = set()
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "RemapRule":
                found |= _pairs([node.args])
            elif isinstance(node, (ast.List, ast.Tuple)):
                values = [n.value if isinstance(n, ast.Constant) else None for n in node.elts]
                found |= {(values[i + 1], values[i + 2]) for i, v in enumerate(values[:-2])
                          if v == "--remap" and isinstance(values[i + 1], str) and isinstance(values[i + 2], str)}
            elif isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values):
                    if isinstance(key, ast.Constant) and key.value == "remaps" and isinstance(value, ast.List):
                        found |= _pairs([item.elts for item in value.elts if isinstance(item, (ast.List, ast.Tuple))])
    for path in [*(ROOT / "tests").rglob("*.json"), *(ROOT / "resources").rglob("*.json")]:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(doc, dict) and isinstance(doc.get("remaps"), list):
            found |= {tuple(rule) for rule in doc["remaps"]}
    return found


def _pairs(arg_lists) -> set[tuple[str, str]]:
    pairs = set()
    for args in arg_lists:
        if len(args) == 2 and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in args):
            pairs.add((args[0].value, args[1].value))
    return pairs


def names_in_tests() -> list[str]:
    """Tensor-like names (dotted words) written anywhere in the tests: the corpus each rule renames."""
    names = set()
    for path in (ROOT / "tests").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"[\w.]+", node.value):
                names.add(node.value)
    return sorted(names)


def _compiles(rule: tuple[str, str]) -> bool:
    """Some rules in the tests exist to prove they are refused (only with a RecipeError): not printable."""
    try:
        compile_rules([RemapRule(*rule)])
    except RecipeError:
        return False
    return True


RULES = sorted(rule for rule in rules_in_tests() | set(TRICKY) if _compiles(rule))
NAMES = names_in_tests()


def test_the_suite_has_rules_and_names_to_check():
    assert len(RULES) >= 20 and len(NAMES) >= 200


@pytest.mark.parametrize("pattern,replacement", RULES)
def test_the_printed_rust_chain_renames_as_the_cli_does(pattern, replacement):
    rule = RemapRule(pattern, replacement)
    compiled = compile_rules([rule])
    printed = re.search(rf'\.with_key_remapping\({rust_str("pattern")}, {rust_str("replacement")}\)',
                        as_rust(Recipe(remaps=(rule,))))
    assert printed and rust_value(printed["pattern"]) == pattern
    rust = rust_value(printed["replacement"])
    matched = 0
    for name in NAMES:
        ours = remap_name(name, compiled)
        regex = rust_regex.compile(pattern)
        theirs = regex.subn(lambda m: rust_expand(rust, m, regex.groupindex), name)[0]
        assert ours == theirs, f"{name!r}: CLI gives {ours!r}, the Rust chain {theirs!r}"
        matched += ours != name
    assert matched or not any(rust_regex.compile(pattern).search(n) for n in NAMES)


RENAMES = json.loads((ROOT / "tests" / "fixtures" / "rust_regex_cases.json").read_text(encoding="utf-8"))["renames"]


def test_the_printed_replacement_renames_in_rusts_regex_as_the_cli_does():
    """Against the crate itself: each rule's printed replacement, run by Rust's regex 1.13.1's ``replace_all``
    (tests/fixtures/rust_regex_cases.json), gives the name the CLI gives."""
    wrong = []
    for pattern, replacement, printed, name, by_rust in RENAMES:
        assert rust_replacement(replacement) == printed
        ours = remap_name(name, compile_rules([RemapRule(pattern, replacement)]))
        if ours != by_rust:
            wrong.append(f"{pattern!r} -> {replacement!r} on {name!r}: CLI {ours!r}, Rust {by_rust!r}")
    assert not wrong and len(RENAMES) == 198, "\n".join(wrong)


def test_dollar_digits_then_word_characters_is_group_then_text_and_prints_braced():
    rust = as_rust(Recipe(remaps=(RemapRule(r"^(\w+)\.(\d+)", "$1_x.$2"),)))
    assert 'r"${1}_x.${2}"' in rust
    assert remap_name("fc.3", compile_rules([RemapRule(r"^(\w+)\.(\d+)", "$1_x.$2")])) == "fc_x.3"


def test_a_pytorch_source_without_the_adapter_says_the_chain_differs():
    plain = as_rust(Recipe.from_json({"version": 1, "sources": ["m.pt"]}))
    assert "\n// differs: PytorchStore always applies PyTorchToBurnAdapter" in plain
    assert "// differs" not in as_rust(Recipe.from_json({"version": 1, "sources": ["m.pt"], "adapters": ["pytorch-to-burn"]}))
