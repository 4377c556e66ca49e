"""tests/mutation/mutation_scores.py turns mutmut's verdicts into README's score table: the scores a reader of the README
bets on must count what mutmut found, with the equivalents subtracted and unchecked mutants left out."""

from __future__ import annotations

import json

from tests.mutation import mutation_scores


def write_meta(root, module: str, codes: dict, hashes: dict | None = None) -> None:
    meta = root / f"{module}.meta"
    meta.parent.mkdir(parents=True, exist_ok=True)
    meta.write_text(json.dumps({"exit_code_by_key": codes, "hash_by_function_name": hashes or {}}))


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


def test_the_record_holds_the_functions_whose_listed_mutants_all_survived(tmp_path) -> None:
    """A function is recorded only when every listed mutant of it survived the run (or was skipped as settled
    by it): one killed or not judged yet, and its listed mutants run again next time."""
    decode, encode, peek = ("engine.formats.cbor.x_{}__mutmut_{}".format(f, n) for f, n in
                            (("decode", 1), ("encode", 2), ("peek", 3)))
    write_meta(tmp_path, "engine/formats/cbor.py",
               {decode: 0, "engine.formats.cbor.x_decode__mutmut_2": 34, encode: 1, peek: None},
               {"x_decode": "d1", "x_encode": "e1", "x_peek": "p1"})
    write_meta(tmp_path, "engine/formats/pytorch/__init__.py", {"engine.formats.pytorch.x_note__mutmut_1": 0},
               {"x_note": "n1"})
    found, hashes = mutation_scores.verdicts(tmp_path), mutation_scores.function_hashes(tmp_path)
    assert hashes == {"engine.formats.cbor.x_decode": "d1", "engine.formats.cbor.x_encode": "e1",
                      "engine.formats.cbor.x_peek": "p1", "engine.formats.pytorch.x_note": "n1"}
    listed = {decode, "engine.formats.cbor.x_decode__mutmut_2", encode, peek,
              "engine.formats.pytorch.x_note__mutmut_1"}
    assert mutation_scores.judged_functions(found, hashes, listed) == {
        "engine.formats.cbor.x_decode": "d1", "engine.formats.pytorch.x_note": "n1"}


def test_a_listed_mutant_is_settled_only_while_its_function_has_the_recorded_hash() -> None:
    listed = {"engine.cli.x_main__mutmut_3", "engine.cli.x_main__mutmut_4", "engine.cli.x_run__mutmut_1",
              "engine.cli.x_gone__mutmut_1"}
    recorded = {"engine.cli.x_main": "aaa", "engine.cli.x_run": "bbb", "engine.cli.x_gone": "ccc"}
    now = {"engine.cli.x_main": "aaa", "engine.cli.x_run": "changed"}  # x_gone no longer exists
    assert mutation_scores.settled(listed, recorded, now) == {"engine.cli.x_main__mutmut_3",
                                                              "engine.cli.x_main__mutmut_4"}


def test_a_record_counts_only_for_the_mutmut_that_made_it(tmp_path) -> None:
    """Another mutmut may number a function's mutants differently, so its record settles nothing."""
    record = tmp_path / "judged.json"
    assert mutation_scores.recorded_functions(record, "3.8.1") == {}  # no record yet
    record.write_text(json.dumps({"mutmut": "3.8.1", "functions": {"engine.cli.x_main": "aaa"}}))
    assert mutation_scores.recorded_functions(record, "3.8.1") == {"engine.cli.x_main": "aaa"}
    assert mutation_scores.recorded_functions(record, "3.9.0") == {}
    record.write_text("{broken")
    assert mutation_scores.recorded_functions(record, "3.8.1") == {}


def test_record_writes_the_judged_functions_of_a_run(tmp_path, monkeypatch, capsys) -> None:
    function = mutation_scores.function_of(min(mutation_scores.equivalents()))  # one the real file lists
    listed = [name for name in mutation_scores.equivalents() if mutation_scores.function_of(name) == function]
    module, name = function.rsplit(".", 1)
    write_meta(tmp_path / "mutants", module.replace(".", "/") + ".py", {mutant: 0 for mutant in listed},
               {name: "f00d"})
    judged = tmp_path / "judged.json"
    monkeypatch.setattr(mutation_scores, "JUDGED", judged)
    assert mutation_scores.main([str(tmp_path / "mutants"), "--record"]) == 0
    assert json.loads(judged.read_text()) == {"mutmut": mutation_scores.mutmut_version(),
                                              "functions": {function: "f00d"}}
    assert capsys.readouterr().out == f"judged.json: 1 functions, {len(listed)} listed mutants\n"
