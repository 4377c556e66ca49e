"""``migrate`` and ``recipe`` word for word, in-process (issue 25: the command line's messages and exit codes).

Promises (README "Command line", "Burn records") -> tests:
- each record is converted beside itself under its name without the record's extension (``.mpk.gz`` whole),
  one whose destination exists or is already planned is skipped, a dry run writes nothing and says "would"
  -> ``test_migrate_names_each_destination_and_skips_one_planned_twice``, ``test_a_dry_run_says_would_and_writes_nothing``
- ``--burn-version`` picks the Burn release the Burnpack loads in -> ``test_migrate_writes_for_the_burn_version_asked``
- ``recipe --as rust`` spells out the renames a store cannot do from the sources, or says why it could not
  -> ``test_recipe_rust_spells_renames_from_the_sources_or_leaves_a_note``
"""

from __future__ import annotations

import json
import os

import numpy as np
from safetensors.numpy import save_file

from engine import open_store
from engine.cli import main
from engine.surgery import Recipe, SourceSpec

from tests.helpers.formats_burn_record_writers import Settings, model_item, write_record


def test_migrate_names_each_destination_and_skips_one_planned_twice(tmp_path, capsys):
    item, _ = model_item()
    write_record(tmp_path, "model", item, Settings(recorder="NamedMpk"))
    write_record(tmp_path, "model", item, Settings(recorder="NamedMpkGz"))  # model.mpk.gz: also model.bpk
    (tmp_path / "model.mpk").rename(tmp_path / "a.mpk")
    (tmp_path / "model.mpk.gz").rename(tmp_path / "a.mpk.gz")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "weights").write_bytes((tmp_path / "a.mpk").read_bytes())  # a record without extension
    assert main(["migrate", str(tmp_path), "-q"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "converted a.mpk -> a.bpk (11 tensors, 260 B)",
        "skipped   a.mpk.gz: a.bpk already exists",
        "converted sub/weights -> weights.bpk (11 tensors, 260 B)",
        f"migrated 2 of 3 records in {tmp_path} (520 B): 1 skipped, 0 failed",
    ]
    assert sorted(p.name for p in tmp_path.rglob("*.bpk")) == ["a.bpk", "weights.bpk"]
    with open_store(tmp_path / "sub" / "weights.bpk") as store:
        assert len(store.entries) == 11


def test_a_dry_run_says_would_and_writes_nothing(tmp_path, capsys):
    item, _ = model_item()
    write_record(tmp_path, "only", item, Settings(recorder="NamedMpkGz"))
    assert main(["migrate", str(tmp_path), "--dry-run", "--to", "safetensors"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "would convert only.mpk.gz -> only.safetensors (11 tensors, 260 B)",
        f"would migrate 1 of 1 record in {tmp_path} (260 B): 0 skipped, 0 failed",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["only.mpk.gz"]


def test_an_empty_folder_migrates_nothing(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("no record")
    assert main(["migrate", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"migrated 0 of 0 records in {tmp_path} (0 B): 0 skipped, 0 failed\n"


def test_migrate_writes_for_the_burn_version_asked(tmp_path, capsys):
    """A bool tensor's spelling differs between Burn 0.20 and 0.21 (README "Burn versions"): the file loads in the
    release asked for, and the newest by default."""
    from tests.helpers.formats_burn_record_writers import Param, id_text
    item = {"mask": Param(id_text(3), np.array([True, False])), "w": Param(id_text(4), np.ones(2, "<f4"))}
    loads_in = {}
    for flags in (["--burn-version", "0.20"], ["--burn-version", "0.21"], []):
        folder = tmp_path / (flags[-1] if flags else "default")
        folder.mkdir()
        write_record(folder, "m", item, Settings(recorder="NamedMpk"))
        assert main(["migrate", str(folder), "-q", *flags]) == 0
        capsys.readouterr()
        assert main(["inspect", str(folder / "m.bpk"), "--json"]) == 0
        loads_in[folder.name] = json.loads(capsys.readouterr().out)["burn"]["loads_in"]
        with open_store(folder / "m.bpk") as store:
            assert store.read("mask").astype(bool).tolist() == [True, False]
    assert loads_in == {"0.20": ["0.20"], "0.21": ["0.21", "0.22"], "default": ["0.21", "0.22"]}


def test_recipe_rust_spells_renames_from_the_sources_or_leaves_a_note(tmp_path, capsys):
    source = tmp_path / "s.safetensors"
    save_file({"fc.0.weight": np.ones((3, 2), np.float32), "fc.2.weight": np.ones((2, 3), np.float32)}, str(source))
    from engine import export
    with open_store(source) as store:
        export(store.entries, tmp_path / "s.bpk")
    Recipe(sources=(SourceSpec(str(tmp_path / "s.bpk")),), adapters=("contiguous-indices",)).save(tmp_path / "r.json")
    assert main(["recipe", str(tmp_path / "r.json"), "--as", "rust"]) == 0
    captured = capsys.readouterr()
    assert captured.out == (
        "// burn-store 0.22.0-pre.2 (Burn 0.22)\n"
        "use burn_store::{BurnpackStore, ModuleSnapshot};\n"
        "// contiguous indices, which BurnpackStore cannot do, as this file's 1 rename\n"
        f'let mut store = BurnpackStore::from_file(r"{tmp_path / "s.bpk"}")\n'
        '    .with_remap_pattern(r"^fc\\.2\\.weight$", r"fc.1.weight");\n'
        "let result = model.load_from(&mut store)?;\n")
    assert captured.err == ""
    Recipe(sources=(SourceSpec(str(tmp_path / "s.bpk")),), adapters=("contiguous-indices",),
           template=str(tmp_path / "s.bpk")).save(tmp_path / "t.json")
    assert main(["recipe", str(tmp_path / "t.json"), "--as", "rust"]) == 0
    assert ".with_remap_pattern(" in capsys.readouterr().out
    Recipe(sources=(SourceSpec(str(tmp_path / "gone.bpk")),), adapters=("contiguous-indices",)).save(tmp_path / "g.json")
    assert main(["recipe", str(tmp_path / "g.json"), "--as", "rust"]) == 0
    captured = capsys.readouterr()
    assert captured.err == (f"note: gone.bpk: cannot open it in {tmp_path}: No such file or directory; the steps its "
                            "store cannot take are left as comments\n")
    assert "// left to do: renumber indices contiguously" in captured.out
    assert main(["recipe", str(tmp_path / "r.json")]) == 0  # --as cli is the default, OUT the default output
    assert capsys.readouterr().out == f"store-studio convert {tmp_path / 's.bpk'} OUT --contiguous-indices\n"


def test_recipe_rust_spells_enum_variant_renames_from_the_plan_and_its_template(tmp_path, capsys):
    """Skipping enum variants on a Burnpack source is spelled out from the plan: by ``--module`` alone, or by
    ``--skip-enum-variants`` when the template has the module without the segment."""
    from engine import ArrayStore, export
    source, template = tmp_path / "v.bpk", tmp_path / "vt.bpk"
    export(ArrayStore({"Block.fc.weight": np.ones((3, 2), np.float32), "fc.2.weight": np.ones((2, 3), np.float32)}).entries,
           source)
    export(ArrayStore({"fc.weight": np.ones((3, 2), np.float32), "fc.1.weight": np.ones((2, 3), np.float32)}).entries,
           template)
    head = "// burn-store 0.22.0-pre.2 (Burn 0.22)\nuse burn_store::{BurnpackStore, ModuleSnapshot};\n"
    Recipe(sources=(SourceSpec(str(source)),), module_overrides={"Block": "EnumVariant"}).save(tmp_path / "m.json")
    assert main(["recipe", str(tmp_path / "m.json"), "--as", "rust"]) == 0
    assert capsys.readouterr().out == head + (
        "// enum variants skipped, which BurnpackStore cannot do, as this file's 1 rename\n"
        f'let mut store = BurnpackStore::from_file(r"{source}")\n'
        '    .with_remap_pattern(r"^Block\\.fc\\.weight$", r"fc.weight");\n'
        "let result = model.load_from(&mut store)?;\n"
        "// Store Studio only: module 'Block' treated as EnumVariant\n")
    Recipe(sources=(SourceSpec(str(source)),), adapters=("skip-enum-variants",),
           template=str(template)).save(tmp_path / "t.json")
    assert main(["recipe", str(tmp_path / "t.json"), "--as", "rust"]) == 0
    assert capsys.readouterr().out == head + (
        "// enum variants skipped, which BurnpackStore cannot do, as this file's 1 rename\n"
        f'let mut store = BurnpackStore::from_file(r"{source}")\n'
        '    .with_remap_pattern(r"^Block\\.fc\\.weight$", r"fc.weight");\n'
        "let result = model.load_from(&mut store)?;\n")


def test_a_file_that_cannot_be_read_is_passed_over_and_the_search_goes_on(tmp_path, capsys):
    """``a_mem`` links to /proc/self/mem, a regular file whose first read fails (EIO) even for root: migrate
    skips it and still finds the record after it."""
    os.symlink("/proc/self/mem", tmp_path / "a_mem")
    item, _ = model_item()
    write_record(tmp_path, "b", item, Settings(recorder="NamedMpk"))
    assert main(["migrate", str(tmp_path), "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "would convert b.mpk -> b.bpk (11 tensors, 260 B)",
        f"would migrate 1 of 1 record in {tmp_path} (260 B): 0 skipped, 0 failed"]


def test_a_dry_run_skips_records_planned_to_the_same_destination(tmp_path, capsys):
    """``a.mpk``, ``a.mpk.gz`` and ``a.json`` all become ``a.bpk``: a dry run writes nothing, yet plans one."""
    item, _ = model_item()
    for recorder in ("NamedMpk", "NamedMpkGz", "PrettyJson"):
        write_record(tmp_path, "a", item, Settings(recorder=recorder))
    assert main(["migrate", str(tmp_path), "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == f"would migrate 1 of 3 records in {tmp_path} (260 B): 2 skipped, 0 failed"
    assert sum(line.startswith("skipped   ") and line.endswith(": a.bpk already exists") for line in out) == 2
    assert not (tmp_path / "a.bpk").exists()
