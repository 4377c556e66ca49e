"""tests/mutation_scores.py turns mutmut's verdicts into README's score table: the scores a reader of the README
bets on must count what mutmut found, with the equivalents subtracted and unchecked mutants left out."""

from __future__ import annotations

import json

import mutation_scores


def write_meta(root, module: str, codes: dict) -> None:
    meta = root / f"{module}.meta"
    meta.parent.mkdir(parents=True, exist_ok=True)
    meta.write_text(json.dumps({"exit_code_by_key": codes, "hash_by_function_name": {}}))


def test_a_module_row_counts_each_verdict_and_subtracts_equivalents(tmp_path) -> None:
    name = "engine.formats.cbor.x_decode__mutmut_{}".format
    codes = {name(1): 1, name(2): 1, name(3): 36, name(4): 0, name(5): 0, name(6): None, name(7): 33, name(8): 0}
    write_meta(tmp_path, "engine/formats/cbor.py", codes)
    write_meta(tmp_path, "engine/formats/__init__.py", {})
    found = mutation_scores.verdicts(tmp_path)
    assert list(found) == ["engine/formats/cbor.py"]  # no row for a module with no mutant
    lines = mutation_scores.table(found, {name(8)}).splitlines()
    # 8 mutants, 7 checked: 3 killed (a timeout is a kill), 1 with no test, 1 equivalent, 2 survived: 3 / 5
    assert lines[2] == "| `engine/formats/cbor.py` | 8 | 7 | 3 | 1 | 1 | 2 | 60.0% |"
    assert mutation_scores.survivors(found, {name(8)}) == [name(4), name(5)]


def test_a_package_of_several_modules_gets_a_subtotal(tmp_path) -> None:
    write_meta(tmp_path, "engine/cli/diff.py", {"engine.cli.diff.x_run__mutmut_1": 1})
    write_meta(tmp_path, "engine/cli/inspect.py", {"engine.cli.inspect.x_run__mutmut_1": 0,
                                                   "engine.cli.inspect.x_run__mutmut_2": 1})
    lines = mutation_scores.table(mutation_scores.verdicts(tmp_path), set()).splitlines()
    assert lines[-1] == "| **`engine/cli/`** | 3 | 3 | 2 | 0 | 0 | 1 | **66.7%** |"


def test_the_listed_equivalents_are_read_by_name(tmp_path) -> None:
    listed = tmp_path / "equivalents.txt"
    listed.write_text("# why\nengine.cli.x_main__mutmut_3: 0.6 is the default\n\n", encoding="utf-8")
    assert mutation_scores.equivalents(listed) == {"engine.cli.x_main__mutmut_3"}


def test_no_verdicts_is_one_line_and_exit_1(tmp_path, capsys) -> None:
    assert mutation_scores.main([str(tmp_path)]) == 1
    assert capsys.readouterr().err == f"{tmp_path}: no mutmut verdicts here (run `mutmut run` first)\n"


def test_a_kill_outranks_a_listing_and_stale_listings_are_named(tmp_path, capsys) -> None:
    """A change to a function renumbers its mutants: a listed name whose mutant is now killed, or which no
    longer exists in a judged module, is stale; a name of a module not judged yet is not."""
    name = "engine.formats.cbor.x_decode__mutmut_{}".format
    write_meta(tmp_path, "engine/formats/cbor.py", {name(1): 1, name(2): 0, name(3): None})
    listed = {name(1), name(2), name(3), name(9), "engine.formats.json.x_load__mutmut_1"}
    found = mutation_scores.verdicts(tmp_path)
    row = mutation_scores.table(found, listed).splitlines()[2]
    assert row == "| `engine/formats/cbor.py` | 3 | 2 | 1 | 0 | 1 | 0 | 100.0% |"  # listed, yet killed: a kill
    assert mutation_scores.stale(found, listed) == [name(1), name(9)]
