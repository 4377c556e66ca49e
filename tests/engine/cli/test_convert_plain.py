"""A conversion without surgery flags copies its one file without building a recipe or a plan (so it never
imports the surgery: start-up is what a conversion adds to cp), and writes exactly the bytes the
recipe path writes for an empty recipe."""

from __future__ import annotations

import os

import pytest

from engine import FormatError, open_store
from engine.cli import convert, main
from tests.helpers.samples import SAMPLES

SOURCES = ["sample_cnn.bpk", "sample_cnn.pt", "sample_cnn.safetensors"]


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("suffix", [".bpk", ".safetensors"])
@pytest.mark.parametrize("flags", [[], ["--metadata", "who=me", "--metadata", "format=mine"], ["--clear-metadata"],
                                   ["--burn-version", "0.20"]])
def test_a_plain_conversion_writes_the_bytes_of_an_empty_recipes(tmp_path, source, suffix, flags):
    plain, planned = tmp_path / f"plain{suffix}", tmp_path / f"planned{suffix}"
    assert main(["convert", str(SAMPLES / source), str(plain), *flags, "-q"]) == 0
    # --allow-partial changes nothing without a template, but takes the recipe path
    assert main(["convert", str(SAMPLES / source), str(planned), *flags, "-q", "--allow-partial"]) == 0
    assert plain.read_bytes() == planned.read_bytes()
    with open_store(plain) as out:
        assert out.metadata.get("who") == ("me" if "--metadata" in flags else None)
        if source.endswith(".pt"):  # the archive's own record travels under its own name, unless cleared
            assert ("pytorch.archive_version" in out.metadata) == ("--clear-metadata" not in flags)


def test_a_plain_conversion_keeps_the_recipe_paths_refusals(tmp_path, capsys):
    out = tmp_path / "out.bpk"
    code = main(["convert", str(SAMPLES / "sample_cnn.safetensors"), str(out), "--top-level-key", "model"])
    assert code == 1 and not out.exists()
    assert "is a safetensors file: --top-level-key 'model' only picks a branch" in capsys.readouterr().err
    out.write_bytes(b"keep")
    assert main(["convert", str(SAMPLES / "sample_cnn.safetensors"), str(out)]) == 1
    assert out.read_bytes() == b"keep" and "already exists; use --overwrite" in capsys.readouterr().err


def test_the_top_level_key_refusal_closes_the_file_it_opened():
    before = set(os.listdir("/proc/self/fd"))
    with pytest.raises(FormatError):
        convert.open_source(str(SAMPLES / "sample_cnn.bpk"), "model")
    assert set(os.listdir("/proc/self/fd")) <= before


def test_the_flags_choices_are_the_surgerys_own():
    from engine.surgery import adapters
    from engine.surgery.recipe import CAST_TARGETS
    assert set(convert.ADAPTERS) == {adapters.PYTORCH_TO_BURN, adapters.BURN_TO_PYTORCH}
    assert set(convert.CASTS) == set(CAST_TARGETS)
