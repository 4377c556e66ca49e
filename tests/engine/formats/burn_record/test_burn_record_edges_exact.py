"""Burn records at their edges (engine/formats/burn_record/): the nesting limit where it stands, and the words of
what is refused, each on a real record file written by Burn's rules (burn_record_writers).

Promises (README "Migrating from Burn's recorders" and "Limits"; the audit of issue 25):
- an optimizer's record comes out as current Burn loads it, its values as scalars ->
  here::test_an_optimizer_state_is_read_to_the_last_level_the_limit_allows
- a record nested deeper than Burn's 128 levels is refused, naming where ->
  here::test_an_optimizer_state_is_read_to_the_last_level_the_limit_allows
"""

from __future__ import annotations

import json

import pytest

from engine import FormatError, open_store

from burn_record_writers import Settings, id_text


def nested(levels: int, leaf):
    for _ in range(levels):
        leaf = [leaf]
    return leaf


def json_record(path, item) -> object:
    path.write_text(json.dumps({"metadata": Settings(recorder="PrettyJson").metadata(), "item": item}))
    return path


def refusal(path) -> str:
    with pytest.raises(FormatError) as caught:
        open_store(path).close()
    return str(caught.value)


def test_an_optimizer_state_is_read_to_the_last_level_the_limit_allows(tmp_path):
    """The state sits one level under its parameter id: 126 lists under its field are the most 128 levels hold."""
    deepest = json_record(tmp_path / "ok.json", {id_text(42): {"V1": {"Rank1": {"x": nested(126, 1.5)}}}})
    with open_store(deepest) as store:
        assert store.scalars["42." + ".".join(["x"] + ["0"] * 126)] == {"Float": 1.5}
        assert store.scalars["42.__rank"] == {"UInt": 1}
    deeper = json_record(tmp_path / "deep.json", {id_text(42): {"V1": {"Rank1": {"x": nested(127, 1.5)}}}})
    assert refusal(deeper) == "deep.json: the record is nested deeper than 128 levels at 42.x.0.0.0.0.0.0..."
