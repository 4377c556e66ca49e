"""A recipe as a document (README "Recipes"): every field optional but ``version``, a bad document refused by one
line naming the file and the field, relative paths relative to the recipe's folder, addresses kept as written,
the digest a fingerprint of what the recipe does (each message and each field checked word for word).

Promises -> tests:
- each field survives save and load, and empty ones are left out -> ``test_every_field_round_trips_and_empty_ones_are_left_out``
- a bad document names the file and the field -> ``test_a_bad_document_is_one_line_naming_the_field``
- relative paths follow the recipe, others stay absolute, URLs as written -> ``test_paths_travel_with_the_recipe``
- a cast accepts its lower-case spelling and refuses an unknown target or module kind -> ``test_cast_rules``

``recipe --as cli``: the ``convert`` line that does what a recipe does, every flag spelled as typed (README
"Recipes": a saved recipe prints as the command that replays it) -> tests:
- each recipe field becomes its flag, in the order convert applies them, quoted for a shell
  -> ``test_every_field_becomes_its_flag``
- what no flag can say (predicates, casts by module, more than one cast, per-source filters or keys) is pointed at
  ``--recipe FILE`` -> ``test_what_no_flag_says_needs_the_recipe_file``
- the printed line, run, writes what the recipe writes -> ``test_the_printed_line_replays_the_recipe``

A recipe file is UTF-8 whatever the locale, so one saved on a Latin-1 machine opens on a UTF-8 one (README: Save
Recipe and Open Recipe "keep the recipe as JSON (UTF-8 whatever the locale)") -> tests:
- save writes UTF-8 under an ASCII (C) locale -> test_save_writes_utf8_under_an_ascii_locale
- load reads UTF-8 under an ASCII (C) locale -> test_load_reads_utf8_under_an_ascii_locale
The locale is switched in-process (``locale.setlocale``), which is what ``open`` asks for its default
encoding when Python's UTF-8 mode is off; with UTF-8 mode on the default cannot differ, so nothing is tested.
"""

from __future__ import annotations

import hashlib
import json
import locale
import shlex
import sys

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from engine.burn_versions import BurnVersion
from engine.cli import main
from engine.errors import ExportError, RecipeError
from engine.surgery import CastRule, Filter, Recipe, RemapRule, SourceSpec
from engine.surgery.filters import Predicate
from engine.surgery.printers import as_cli


def test_every_field_round_trips_and_empty_ones_are_left_out():
    full = Recipe(sources=(SourceSpec("https://example.org/a.pt", "model", Filter(include=("x",))), SourceSpec("b.bpk")),
                  filter=Filter(exclude=("y",)), remaps=(RemapRule("^a", "b"),), adapters=("pytorch-to-burn",),
                  casts=(CastRule("F16", ("Linear",)), CastRule("BF16")), module_overrides={"fc": "Linear"},
                  top_level_key="state_dict", metadata={"who": "me"}, allow_partial=True, clear_metadata=True,
                  template="https://example.org/t.bpk", burn_version=BurnVersion.V0_20)
    doc = full.to_json()
    assert doc == {
        "version": 1,
        "sources": [{"path": "https://example.org/a.pt", "top_level_key": "model", "filter": {"include": ["x"]}},
                    {"path": "b.bpk"}],
        "filter": {"exclude": ["y"]}, "remaps": [["^a", "b"]], "adapters": ["pytorch-to-burn"],
        "casts": [{"to": "F16", "modules": ["Linear"]}, {"to": "BF16"}], "module_overrides": {"fc": "Linear"},
        "top_level_key": "state_dict", "metadata": {"who": "me"}, "allow_partial": True, "clear_metadata": True,
        "template": "https://example.org/t.bpk", "burn_version": "0.20"}
    assert Recipe.from_json(doc) == full
    assert Recipe().to_json() == {"version": 1}
    assert Recipe.from_json({"version": 1}) == Recipe()
    assert full.canonical_json().startswith('{"adapters":["pytorch-to-burn"],"allow_partial":true,')
    assert Recipe(metadata={"k": "é"}).canonical_json() == '{"metadata":{"k":"é"},"version":1}'
    assert Recipe().digest() == hashlib.sha256(b'{"version":1}').hexdigest()[:16]
    assert Recipe(metadata={"k": "v"}).digest() != Recipe(metadata={"k": "w"}).digest()


def test_what_changes_tensors():
    assert not Recipe().changes_tensors
    assert not Recipe(metadata={"a": "b"}, allow_partial=True, template="t.bpk").changes_tensors
    for changed in (Recipe(filter=Filter(exclude=("x",))), Recipe(remaps=(RemapRule("a", "b"),)),
                    Recipe(adapters=("contiguous-indices",)), Recipe(casts=(CastRule("F16"),)),
                    Recipe(module_overrides={"fc": "Linear"}),
                    Recipe(sources=(SourceSpec("a.bpk"), SourceSpec("b.bpk", filter=Filter(include=("w",)))))):
        assert changed.changes_tensors, changed
    two = Recipe(sources=(SourceSpec("a.bpk"), SourceSpec("b.bpk")))
    assert two.source_spec(1) == SourceSpec("b.bpk") and two.source_spec(2) is None


@pytest.mark.parametrize("doc, says", [
    ([], "recipe: must be a JSON object"),
    ({}, "recipe: field 'version' is missing"),
    ({"version": 2}, "recipe: field 'version' is 2; this Store Studio reads version 1"),
    ({"version": "1"}, "recipe: field 'version' is '1'; this Store Studio reads version 1"),
    ({"version": 1, "zeta": 1, "alpha": 2}, "recipe: unknown field(s) alpha, zeta"),
    ({"version": 1, "sources": "a.pt"}, "recipe: field 'sources' must be a list"),
    ({"version": 1, "adapters": [1]}, "recipe: field 'adapters' must be a list of strings"),
    ({"version": 1, "top_level_key": 3}, "recipe: field 'top_level_key' must be a str"),
    ({"version": 1, "allow_partial": "yes"}, "recipe: field 'allow_partial' must be a bool"),
    ({"version": 1, "clear_metadata": 1}, "recipe: field 'clear_metadata' must be a bool"),
    ({"version": 1, "template": ["t"]}, "recipe: field 'template' must be a str"),
    ({"version": 1, "metadata": []}, "recipe: field 'metadata' must be a dict"),
    ({"version": 1, "metadata": {"a": 1}}, "recipe: field 'metadata' must map text to text"),
    ({"version": 1, "module_overrides": {"fc": 1}}, "recipe: field 'module_overrides' must map text to text"),
    ({"version": 1, "burn_version": "0.19"},
     "recipe: field 'burn_version': Burn version '0.19' is not one of 0.20, 0.21, 0.22"),
    ({"version": 1, "sources": [3]},
     'recipe: sources[0] must be a path or {"path": ..., "top_level_key"?, "filter"?}'),
    ({"version": 1, "sources": ["a.pt", {"path": 1}]},
     'recipe: sources[1] must be a path or {"path": ..., "top_level_key"?, "filter"?}'),
    ({"version": 1, "sources": [{"path": "a", "key": "m", "b": 1}]}, "recipe: sources[0]: unknown field(s) b, key"),
    ({"version": 1, "sources": [{"path": "a", "top_level_key": 1}]}, "recipe: sources[0].top_level_key must be a string"),
    ({"version": 1, "sources": [{"path": "a", "filter": {"include": 1}}]}, "sources[0].filter.include: must be a list"),
    ({"version": 1, "casts": [3]}, 'recipe: casts[0] must be {"to": "F16"|"BF16"|"F32", "modules"?: [...]}'),
    ({"version": 1, "casts": ["f16", {"to": "F8"}]}, "recipe: casts[1]: cast: target 'F8' is not one of F16, BF16, F32"),
    ({"version": 1, "casts": [{"to": "f16", "modules": ["Dense"]}]},
     "recipe: casts[0]: cast to F16: unknown module kind 'Dense'"),
    ({"version": 1, "casts": [{"to": "f16", "modules": [1]}]}, "recipe: field 'casts[0].modules' must be a list of strings"),
])
def test_a_bad_document_is_one_line_naming_the_field(tmp_path, doc, says):
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(RecipeError) as error:
        Recipe.load(tmp_path / "bad.json")
    assert str(error.value) == f"bad.json: {says}"


def test_a_recipe_file_that_cannot_be_read_says_why(tmp_path):
    with pytest.raises(RecipeError) as error:
        Recipe.load(tmp_path / "none.json")
    assert str(error.value) == f"{tmp_path / 'none.json'}: cannot read the recipe: No such file or directory"
    (tmp_path / "latin.json").write_bytes(b'{"version": 1, "metadata": {"a": "\xe9"}}')
    with pytest.raises(RecipeError) as error:
        Recipe.load(tmp_path / "latin.json")
    assert str(error.value).startswith("latin.json: not a JSON recipe: 'utf-8' codec can't decode byte 0xe9")
    with pytest.raises(ExportError) as error:  # saved by export's destination rules
        Recipe().save(tmp_path / "no" / "r.json")
    assert str(error.value) == f"r.json: the folder {tmp_path / 'no'} does not exist; create it first"


def test_paths_travel_with_the_recipe(tmp_path):
    (tmp_path / "in").mkdir()
    outside = tmp_path.parent / "elsewhere.bpk"
    recipe = Recipe(sources=(SourceSpec(str(tmp_path / "in" / "a.pt")), SourceSpec(str(outside)),
                             SourceSpec("hf://org/repo/model.safetensors")),
                    template=str(tmp_path / "t.bpk"))
    saved = recipe.save(tmp_path / "r.json")
    assert saved == tmp_path / "r.json"
    text = saved.read_text(encoding="utf-8")
    assert text.endswith("}\n") and text.startswith('{\n  "version": 1,\n')
    doc = json.loads(text)
    assert [s["path"] for s in doc["sources"]] == ["in/a.pt", str(outside.resolve()), "hf://org/repo/model.safetensors"]
    assert doc["template"] == "t.bpk"
    loaded = Recipe.load(saved)
    assert [s.path for s in loaded.sources] == [str(tmp_path / "in" / "a.pt"), str(outside.resolve()),
                                                "hf://org/repo/model.safetensors"]
    assert loaded.template == str(tmp_path / "t.bpk")
    assert Recipe.load(Recipe(sources=(SourceSpec("x.pt"),)).save(tmp_path / "in" / "r2.json")).template is None


def test_a_recipe_keeps_unicode_as_written(tmp_path):
    Recipe(metadata={"modèle": "é"}).save(tmp_path / "r.json")
    assert '"modèle": "é"' in (tmp_path / "r.json").read_text(encoding="utf-8")
    assert Recipe.load(tmp_path / "r.json").metadata == {"modèle": "é"}


def test_cast_rules():
    assert Recipe.from_json({"version": 1, "casts": ["bf16", {"to": "F32"}, {"to": "f16", "modules": ["Linear"]}]}) \
        .casts == (CastRule("BF16"), CastRule("F32"), CastRule("F16", ("Linear",)))
    assert str(CastRule("BF16").dtype) == "BF16" and CastRule("F16").to_json() == {"to": "F16"}
    with pytest.raises(RecipeError) as error:
        CastRule("f16")
    assert str(error.value) == "cast: target 'f16' is not one of F16, BF16, F32"


NOTE = "  # predicates, casts by module, per-source filters, rotary rows or adapters on a later source need --recipe FILE"


def test_every_field_becomes_its_flag():
    recipe = Recipe(sources=(SourceSpec("a b.pt"), SourceSpec("c.bpk")),
                    filter=Filter(include=("^enc",), full_paths=("head.w",), exclude=("bias$",)),
                    remaps=(RemapRule(r"^enc\.(.*)", "$1"),),
                    adapters=("pytorch-to-burn", "contiguous-indices", "skip-enum-variants", "fuse-weight-norm"),
                    casts=(CastRule("BF16"),), module_overrides={"fc": "Linear", "Block": "EnumVariant"},
                    top_level_key="model", metadata={"who": "me", "k": "a=b"}, clear_metadata=True,
                    template="t.bpk", allow_partial=True, burn_version=BurnVersion.V0_21)
    assert as_cli(recipe, "out.bpk") == (
        "store-studio convert 'a b.pt' c.bpk out.bpk --top-level-key model --include '^enc' --include '^head\\.w$' "
        "--exclude 'bias$' --remap '^enc\\.(.*)' '$1' --adapter pytorch-to-burn --contiguous-indices "
        "--skip-enum-variants --fuse-weight-norm --cast bf16 --module fc=Linear --module Block=EnumVariant "
        "--metadata who=me --metadata k=a=b --clear-metadata --template t.bpk --allow-partial --burn-version 0.21")
    assert shlex.split(as_cli(recipe, "out.bpk"))[2:5] == ["a b.pt", "c.bpk", "out.bpk"]


def test_an_empty_recipe_is_a_plain_conversion_to_out():
    assert as_cli(Recipe()) == "store-studio convert OUT"
    assert as_cli(Recipe(sources=(SourceSpec("a.pt"),), casts=(CastRule("F32"),))) == \
        "store-studio convert a.pt OUT --cast f32"
    assert as_cli(Recipe(sources=(SourceSpec("a.pt", "ema"),))) == "store-studio convert a.pt OUT --top-level-key ema"
    assert as_cli(Recipe(sources=(SourceSpec("a.pt"),), burn_version=BurnVersion.V0_22)) == "store-studio convert a.pt OUT"


@pytest.mark.parametrize("recipe", [
    Recipe(sources=(SourceSpec("a.pt"),), filter=Filter(where=(Predicate("ndim", "==", 2),))),
    Recipe(sources=(SourceSpec("a.pt"),), casts=(CastRule("F16", ("Linear",)),)),
    Recipe(sources=(SourceSpec("a.pt"),), casts=(CastRule("F16"), CastRule("BF16"))),
    Recipe(sources=(SourceSpec("a.pt", filter=Filter(exclude=("x",))),)),
    Recipe(sources=(SourceSpec("a.pt", "ema"), SourceSpec("b.pt", "model"))),
    Recipe(sources=(SourceSpec("a.pt", "ema"), SourceSpec("b.pt")), top_level_key=None),
])
def test_what_no_flag_says_needs_the_recipe_file(recipe):
    assert as_cli(recipe).endswith(NOTE)


@pytest.mark.parametrize("recipe", [
    Recipe(sources=(SourceSpec("a.pt", "ema"), SourceSpec("b.pt", "ema"))),
    Recipe(sources=(SourceSpec("a.pt"), SourceSpec("b.pt")), top_level_key="ema"),
    Recipe(sources=(SourceSpec("a.pt", "ema"), SourceSpec("b.pt")), top_level_key="ema"),
    Recipe(sources=(SourceSpec("a.pt"),), casts=(CastRule("F16"),), filter=Filter(exclude=("x",))),
])
def test_what_flags_say_needs_no_recipe_file(recipe):
    assert not as_cli(recipe).endswith(NOTE)


def test_the_printed_line_replays_the_recipe(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    save_file({"enc.fc.0.weight": np.arange(6, dtype=np.float32).reshape(2, 3), "enc.fc.2.weight": np.ones((3, 2), np.float32),
               "enc.fc.0.bias": np.ones(2, np.float32), "step": np.array([1], np.int64)}, "a.safetensors")
    recipe = Recipe(sources=(SourceSpec("a.safetensors"),), filter=Filter(include=("^fc",), exclude=("bias$",)),  # names after the remap
                    remaps=(RemapRule(r"^enc\.", ""),), adapters=("contiguous-indices",), casts=(CastRule("F16"),),
                    metadata={"who": "me"})
    recipe.save("r.json")
    assert main(["convert", "--recipe", "r.json", "by_recipe.safetensors", "-q"]) == 0
    line = as_cli(Recipe.load("r.json"), "by_line.safetensors")
    assert main(shlex.split(line)[1:] + ["-q"]) == 0
    assert (tmp_path / "by_line.safetensors").read_bytes() == (tmp_path / "by_recipe.safetensors").read_bytes()
    written = load_file("by_line.safetensors")
    assert sorted(written) == ["fc.0.weight", "fc.1.weight"] and written["fc.0.weight"].dtype == np.float16
    capsys.readouterr()


pytestmark = pytest.mark.skipif(sys.flags.utf8_mode == 1, reason="UTF-8 mode: the locale never picks the encoding")


RENAMED = "encodeur.poids_ü"


@pytest.fixture
def ascii_locale():
    saved = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    assert locale.getpreferredencoding(False) != "UTF-8"
    yield
    locale.setlocale(locale.LC_CTYPE, saved)


def test_save_writes_utf8_under_an_ascii_locale(tmp_path, ascii_locale):
    path = Recipe(remaps=(RemapRule(r"^enc\.w$", RENAMED),)).save(tmp_path / "r.recipe.json")
    doc = json.loads(path.read_bytes().decode("utf-8"))
    assert doc["remaps"] == [[r"^enc\.w$", RENAMED]]


def test_load_reads_utf8_under_an_ascii_locale(tmp_path, ascii_locale):
    path = tmp_path / "r.recipe.json"
    path.write_bytes(json.dumps({"version": 1, "remaps": [[r"^enc\.w$", RENAMED]]}, ensure_ascii=False).encode())
    assert Recipe.load(path).remaps == (RemapRule(r"^enc\.w$", RENAMED),)
