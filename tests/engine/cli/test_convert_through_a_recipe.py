"""``convert`` through a recipe (any surgery flag, ``--recipe``, several sources), checked by outcome in-process:
what the one-file copy path checks too, here on the path that plans first. Without it a conversion with any surgery
flag could write another format than asked, drop a source's metadata or scalars, or apply a recipe to the wrong file.

Promises (README "Command line", "Metadata and recipes", "Model surgery") -> tests:
- ``--format`` chooses the output format whatever OUT's extension -> test_format_flag_names_the_format_of_any_out_name
- a recipe's source is matched to an input by its resolved path, a URL as written (``//`` is not ``/`` there) ->
  test_a_url_input_is_not_the_recipes_source_with_another_spelling
- ``--template`` names a Burn Bin record's parameters (they have no names of their own) ->
  test_a_template_names_a_bin_records_parameters_in_a_conversion
- a source's fields travel under the names the output format keeps (SafeTensors' ``format`` stays between
  SafeTensors files), a single Burnpack's scalars survive into Burnpack ->
  test_metadata_kept_by_the_formats_own_names_through_a_recipe, test_a_burnpacks_scalars_survive_a_recipe (and a
  plain copy)
- the progress line names the file written, and ``-q`` silences it (with surgery flags or without) ->
  test_the_progress_line_names_the_output_on_a_terminal, test_quiet_draws_nothing_on_a_terminal
- ``--top-level-key`` on a file that is not a PyTorch checkpoint is an error naming the file, not ignored ->
  test_a_top_level_key_on_a_file_that_is_not_pytorch_is_refused_in_words
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

import engine
from engine import ArrayStore, open_store
from engine.cli import main
from engine.surgery import plan
from tests.helpers.formats_burn_record_writers import Bincode, Settings, id_text, DTYPES_0_16
from tests.helpers.remote_http_site import Server, Site
from tests.terminals import cli_on_a_terminal


def convert(*args: object) -> int:
    return main(["convert", *map(str, args)])


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "a.safetensors"
    save_file({"w": np.arange(3, dtype=np.float32), "b": np.ones(2, np.float32)}, str(path), metadata={"format": "pt"})
    return path


def test_format_flag_names_the_format_of_any_out_name(model, tmp_path, capsys):
    out = tmp_path / "o.weights"
    assert convert(model, out, "--format", "safetensors", "--exclude", "^b$", "-q") == 0
    assert capsys.readouterr().err == f"wrote {out}\n"
    assert {k: v.tolist() for k, v in load_file(str(out)).items()} == {"w": [0.0, 1.0, 2.0]}


def test_a_url_input_is_not_the_recipes_source_with_another_spelling(model, tmp_path, capsys):
    """``http://host//a`` and ``http://host/a`` are one file on disk but two URLs: the recipe's source filter for
    one is not applied to the other (nor is its address read)."""
    server = Server(Site(files={"/a.safetensors": model.read_bytes()}))
    try:
        recipe = tmp_path / "r.json"
        recipe.write_text('{"version": 1, "sources": [{"path": "%s", "filter": {"exclude": ["^b$"]}}]}'
                          % server.url("//a.safetensors"))
        out = tmp_path / "o.safetensors"
        assert convert("--recipe", recipe, server.url("/a.safetensors"), out, "--save-recipe", tmp_path / "s.json",
                       "-q") == 0
        assert sorted(load_file(str(out))) == ["b", "w"]
        assert [r.path for r in server.site.log] and {r.path for r in server.site.log} == {"/a.safetensors"}
        assert '"path": "%s"' % server.url("/a.safetensors") in (tmp_path / "s.json").read_text()
    finally:
        server.close()


def bin_record(tmp_path: Path) -> Path:
    """A Burn Bin record of two F32 parameters ([2] then [3, 1]): positional, it names neither."""
    b = Bincode(Settings(recorder="Bin", fixed=False))
    f32 = DTYPES_0_16.index("F32")

    def param(raw: bytes, shape: list[int]) -> bytes:
        return (b.text(id_text(3)) + b.uint(len(raw)) + raw + b.uint(len(shape)) + b"".join(b.uint(d) for d in shape)
                + b.uint(f32, 4))

    path = tmp_path / "m.bin"
    path.write_bytes(b.record({}) + param(np.array([1.5, -2.0], "<f4").tobytes(), [2])
                     + param(np.ones(3, "<f4").tobytes(), [3, 1]))
    return path


def test_a_template_names_a_bin_records_parameters_in_a_conversion(tmp_path, capsys):
    template = tmp_path / "t.safetensors"
    save_file({"fc.bias": np.zeros(2, np.float32), "fc.weight": np.zeros((3, 1), np.float32)}, str(template))
    out = tmp_path / "o.safetensors"
    assert convert(bin_record(tmp_path), out, "--template", template, "-q") == 0
    assert {k: v.tolist() for k, v in load_file(str(out)).items()} == {"fc.bias": [1.5, -2.0],
                                                                       "fc.weight": [[1.0], [1.0], [1.0]]}
    assert capsys.readouterr().out.splitlines()[-1] == \
        "applied 2, missing 0, unused 0, shape mismatches 0, dtype differences 0"


def test_metadata_kept_by_the_formats_own_names_through_a_recipe(model, tmp_path):
    out = tmp_path / "o.safetensors"
    assert convert(model, out, "--exclude", "^b$", "-q") == 0
    with open_store(out) as store:
        assert store.names == ["w"]
        assert {k: v for k, v in store.metadata.items() if k != "store_studio.recipe"} == {
            "format": "pt", "producer": "store-studio"}


@pytest.mark.parametrize("surgery", [["--exclude", "^v$"], []], ids=["recipe", "copy"])
def test_a_burnpacks_scalars_survive_a_recipe(tmp_path, surgery):
    source = tmp_path / "s.bpk"
    plan([ArrayStore({"w": np.ones(2, np.float32), "v": np.zeros(1, np.float32)})]).export(
        source, scalars={"lr": {"Float": 0.5}, "step": {"UInt": 7}})
    out = tmp_path / "o.bpk"
    assert convert(source, out, *surgery, "-q") == 0
    with open_store(out) as store:
        assert store.names == (["w"] if surgery else ["w", "v"])
        assert store.scalars == {"lr": {"Float": 0.5}, "step": {"UInt": 7}}
        assert store.metadata["version"] == engine.__version__


SURGERY_OR_NOT = pytest.mark.parametrize(("surgery", "size"), [(["--exclude", "^b$"], "12 B"), ([], "20 B")],
                                         ids=["recipe", "copy"])


@SURGERY_OR_NOT
def test_the_progress_line_names_the_output_on_a_terminal(model, tmp_path, monkeypatch, surgery, size):
    out = tmp_path / "o.bpk"
    shown = cli_on_a_terminal(monkeypatch, ["convert", str(model), str(out), *surgery])
    assert shown.startswith("\r\x1b[Kwriting o.bpk  ")
    assert shown.endswith(f"\r\x1b[Kwrote {out}\r\n")
    assert f"{size} of {size} (100%)" in shown


@SURGERY_OR_NOT
def test_quiet_draws_nothing_on_a_terminal(model, tmp_path, monkeypatch, surgery, size):
    out = tmp_path / "o.bpk"
    assert cli_on_a_terminal(monkeypatch, ["convert", str(model), str(out), *surgery, "-q"]) == f"wrote {out}\r\n"


@pytest.mark.parametrize("surgery", [["--exclude", "^b$"], []], ids=["recipe", "copy"])
def test_a_top_level_key_on_a_file_that_is_not_pytorch_is_refused_in_words(model, tmp_path, capsys, surgery):
    assert convert(model, tmp_path / "o.bpk", "--top-level-key", "model", *surgery) == 1
    assert capsys.readouterr().err == (f"store-studio: {model.name}: is a safetensors file: --top-level-key 'model' only "
                                       "picks a branch of a PyTorch checkpoint (drop the flag)\n")
    assert not (tmp_path / "o.bpk").exists()
