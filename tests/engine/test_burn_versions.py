"""Promises: ``--burn-version``/recipes accept 0.20, 0.21, 0.22 (also v0.21 and 0.21.0), default to the newest,
and refuse anything else naming the choices; a recipe keeps the version it was saved with."""

import pytest

from engine.burn_versions import NEWEST, BurnVersion, parse_burn_version
from engine.errors import RecipeError
from engine.surgery.recipe import Recipe


@pytest.mark.parametrize("text, version", [("0.20", BurnVersion.V0_20), ("v0.21", BurnVersion.V0_21),
                                           ("0.22.0", BurnVersion.V0_22), (" 0.21.3 ", BurnVersion.V0_21)])
def test_a_release_is_read_as_its_line(text, version):
    assert parse_burn_version(text) is version


@pytest.mark.parametrize("text", ["0.19", "0.2", "latest", "0.21.x", ""])
def test_an_unknown_release_names_the_choices(text):
    with pytest.raises(ValueError, match="0.20, 0.21, 0.22"):
        parse_burn_version(text)


def test_the_newest_release_is_the_default_and_is_not_written():
    assert NEWEST is BurnVersion.V0_22
    assert Recipe().burn_version is NEWEST
    assert "burn_version" not in Recipe().to_json()


def test_a_recipe_keeps_its_burn_version_through_json():
    doc = Recipe(burn_version=BurnVersion.V0_20).to_json()
    assert doc["burn_version"] == "0.20"
    assert Recipe.from_json(doc).burn_version is BurnVersion.V0_20


def test_a_recipe_with_an_unknown_burn_version_is_refused_by_field():
    with pytest.raises(RecipeError, match="field 'burn_version'.*'0.9'"):
        Recipe.from_json({"version": 1, "burn_version": "0.9"})
