"""A recipe as a document (README "Recipes"): every field optional but ``version``, a bad document refused by one
line naming the file and the field, relative paths relative to the recipe's folder, addresses kept as written,
the digest a fingerprint of what the recipe does (issue 25: each message and each field checked exactly).

Promises -> tests:
- each field survives save and load, and empty ones are left out -> ``test_every_field_round_trips_and_empty_ones_are_left_out``
- a bad document names the file and the field -> ``test_a_bad_document_is_one_line_naming_the_field``
- relative paths follow the recipe, others stay absolute, URLs as written -> ``test_paths_travel_with_the_recipe``
- a cast accepts its lower-case spelling and refuses an unknown target or module kind -> ``test_cast_rules``
"""

from __future__ import annotations

import hashlib
import json

import pytest

from engine.burn_versions import BurnVersion
from engine.errors import ExportError, RecipeError
from engine.surgery import CastRule, Filter, Recipe, RemapRule, SourceSpec


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
    with pytest.raises(ExportError) as error:  # saved by export's destination rules (issue 38)
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
