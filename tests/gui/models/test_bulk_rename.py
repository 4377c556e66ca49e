"""One remap rule for a family of missing names: prefixes added, stripped or replaced, a segment renamed."""

from __future__ import annotations

import pytest

from engine.surgery import RemapRule
from engine.surgery.remap import compile_rules, remap_name
from gui.models.bulk_rename import suggest_bulk_rename

NAMES = ["conv1.weight", "conv1.bias", "fc.weight", "fc.bias", "norm1.weight"]


@pytest.mark.parametrize(("unused", "missing", "rule"), [
    (NAMES, ["model." + n for n in NAMES], RemapRule("^", "model.")),
    (["model." + n for n in NAMES], NAMES, RemapRule(r"^model\.", "")),
    (["backbone." + n for n in NAMES], ["encoder." + n for n in NAMES], RemapRule(r"^backbone\.", "encoder.")),
])
def test_a_common_prefix_becomes_one_rule_that_fixes_every_name(unused, missing, rule):
    found = suggest_bulk_rename(unused, missing)
    assert found is not None and found.rule == rule and (found.hits, found.missing) == (5, 5)
    compiled = compile_rules([found.rule])
    assert sorted(remap_name(name, compiled) for name in unused) == sorted(missing)


def test_a_renamed_segment_family_becomes_one_rule_with_its_hit_count():
    unused = ["norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias", "conv.weight", "normalizer.scale"]
    missing = ["bn1.weight", "bn1.bias", "bn2.weight", "bn2.bias", "head.weight"]
    found = suggest_bulk_rename(unused, missing)
    assert found is not None and (found.hits, found.missing) == (4, 5)
    assert found.label == "rename norm to bn: fixes 4 of 5 missing"
    compiled = compile_rules([found.rule])
    assert remap_name("norm2.bias", compiled) == "bn2.bias"
    assert remap_name("normalizer.scale", compiled) == "normalizer.scale"  # only whole segments (plus digits)


def test_no_rule_is_offered_when_nothing_lines_up():
    assert suggest_bulk_rename(["a.x", "b.y"], ["c.z"]) is None
    assert suggest_bulk_rename([], ["c.z"]) is None
