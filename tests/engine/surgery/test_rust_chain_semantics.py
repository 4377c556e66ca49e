"""The printed burn-store chain renames exactly as the CLI does, for every remap rule in the test suite.

Rust's ``regex`` reads ``$1_x`` as the group *named* ``1_x`` (empty when absent); Store Studio reads it
as group 1 then ``_x`` and prints ``${1}_x``. The expander below follows the regex crate's documented
replacement rules, and every rule any test (or sample recipe) uses is run through both.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from engine import RecipeError
from engine.surgery import Recipe, RemapRule
from engine.surgery.printers import as_rust
from engine.surgery.remap import compile_rules, remap_name

ROOT = Path(__file__).parents[3]
TRICKY = [(r"^(\w+)\.(\d+)", "$1_x.$2"), (r"^(\w+)", "${1}_x"), (r"(?P<head>\w+)\.w", "$head.weight"),
          (r"^(\w+)", r"\1x"), (r"^(a)", "$$1"), (r"^(\w+)", "cost$"), (r"(\w+)", r"\g<1>_"), (r"^(\w+)\.", "${1}$")]


def rust_expand(template: str, match: re.Match[str]) -> str:
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
            value = match.group(int(name)) if name.isdigit() else match.group(name)
        except (IndexError, re.error):
            value = None
        out.append(value or "")
        i += found.end()
    return "".join(out)


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
    printed = re.search(r'\.with_key_remapping\(r(#*)"(.*?)"\1, r(#*)"(.*?)"\3\)', as_rust(Recipe(remaps=(rule,))))
    assert printed and printed.group(2) == pattern
    rust = printed.group(4)
    matched = 0
    for name in NAMES:
        ours = remap_name(name, compiled)
        theirs = re.compile(pattern).sub(lambda m: rust_expand(rust, m), name)
        assert ours == theirs, f"{name!r}: CLI gives {ours!r}, the Rust chain {theirs!r}"
        matched += ours != name
    assert matched or not any(re.search(pattern, n) for n in NAMES)


def test_dollar_digits_then_word_characters_is_group_then_text_and_prints_braced():
    rust = as_rust(Recipe(remaps=(RemapRule(r"^(\w+)\.(\d+)", "$1_x.$2"),)))
    assert 'r"${1}_x.${2}"' in rust
    assert remap_name("fc.3", compile_rules([RemapRule(r"^(\w+)\.(\d+)", "$1_x.$2")])) == "fc_x.3"


def test_a_pytorch_source_without_the_adapter_says_the_chain_differs():
    plain = as_rust(Recipe.from_json({"version": 1, "sources": ["m.pt"]}))
    assert "\n// differs: PytorchStore always applies PyTorchToBurnAdapter" in plain
    assert "// differs" not in as_rust(Recipe.from_json({"version": 1, "sources": ["m.pt"], "adapters": ["pytorch-to-burn"]}))
