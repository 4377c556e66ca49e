"""Alignment against a template (burn-store's ``LoadResult`` offline), word for word: a user
loading a model would otherwise be told the wrong names to fix.

Promises (README "Model surgery", "--template") -> tests:
- names match exactly or through the template's enum variants; a shape differs, or matches if transposed; a dtype
  differs; the model wants a name the source lacks (with the closest unused names) or the source has a spare
  -> ``test_the_report_lists_each_kind_of_difference``
- the closest names are the most alike segment by segment, ties broken by shared prefixes, at most three
  -> ``test_closest_names_rank_segment_by_segment``

Promises (README "--template": a missing name is listed "with the closest unused names") -> tests:
- a wanted name of 200 repeated segments (where difflib's autojunk would act) still gets the spare name sharing
  them as its closest -> ``test_a_name_of_two_hundred_repeated_segments_still_gets_its_closest``
- a missing name with no spare name alike is listed alone -> ``test_a_missing_name_without_a_close_one_is_listed_alone``
"""

from __future__ import annotations

import numpy as np
from safetensors.numpy import save_file

from engine import ArrayStore
from engine import open_store
from engine.surgery.align import align, closest_names, validate


def test_the_report_lists_each_kind_of_difference():
    source = ArrayStore({"enc.q_proj.weight": np.ones((2, 3), np.float32), "enc.k.weight": np.ones(2, np.float16),
                         "feature.weight": np.ones(3, np.float32), "enc.q.bias": np.ones(1, np.float32),
                         "enc.v.weight": np.ones(4, np.float32)})
    template = ArrayStore({"enc.q_proj.weight": np.ones((3, 2), np.float32), "enc.k.weight": np.ones(2, np.float32),
                           "feature.BaseConv.weight": np.ones(3, np.float32), "enc.q.weight": np.ones(1, np.float32),
                           "enc.v.weight": np.ones((2, 2), np.float32)})
    report = align(source, template)
    assert report.lines() == [
        "applied 2, missing 1, unused 1, shape mismatches 2, dtype differences 1",
        "  shape mismatch enc.q_proj.weight: source [2, 3], template [3, 2] (matches if transposed)",
        "  shape mismatch enc.v.weight: source [4], template [2, 2]",
        "  dtype enc.k.weight: source F16, template F32",
        "  missing enc.q.weight (closest: enc.q.bias)",
        "  unused enc.q.bias",
    ]
    assert report.to_json() == {
        "applied": ["enc.k.weight", "feature.BaseConv.weight"],
        "shape_mismatches": [
            {"name": "enc.q_proj.weight", "source_shape": [2, 3], "template_shape": [3, 2], "matches_if_transposed": True},
            {"name": "enc.v.weight", "source_shape": [4], "template_shape": [2, 2], "matches_if_transposed": False}],
        "dtype_differences": [{"name": "enc.k.weight", "source_dtype": "F16", "template_dtype": "F32"}],
        "missing": ["enc.q.weight"], "unused": ["enc.q.bias"], "suggestions": {"enc.q.weight": ["enc.q.bias"]},
        "through_variants": {"feature.BaseConv.weight": "feature.weight"}, "runtime_shapes": [], "runtime_absent": []}
    assert not report.ok
    assert [m.name for m in validate(source, template)] == ["enc.q_proj.weight", "enc.v.weight"]


def test_a_full_match_is_ok_and_a_square_or_3d_mismatch_is_no_transpose():
    same = ArrayStore({"w": np.ones((2, 2), np.float32)})
    assert align(same, same).ok and align(same, same).lines() == [
        "applied 1, missing 0, unused 0, shape mismatches 0, dtype differences 0"]
    cube = ArrayStore({"w": np.ones((2, 3, 4), np.float32)})
    flipped = ArrayStore({"w": np.ones((4, 3, 2), np.float32)})
    [mismatch] = validate(cube, flipped)
    assert not mismatch.matches_if_transposed
    only_missing = align(ArrayStore({}), same)
    assert not only_missing.ok and only_missing.missing == ["w"] and only_missing.suggestions == {}
    only_unused = align(same, ArrayStore({}))
    assert only_unused.ok and only_unused.unused == ["w"]


def test_a_source_name_serves_one_template_name_through_variants():
    source = ArrayStore({"feature.weight": np.ones(3, np.float32), "feature.A.weight": np.ones(3, np.float32)})
    template = ArrayStore({"feature.B.weight": np.ones(3, np.float32), "feature.C.weight": np.ones(3, np.float32)})
    report = align(source, template)
    assert report.through_variants == {"feature.B.weight": "feature.weight"}
    assert report.missing == ["feature.C.weight"] and report.unused == ["feature.A.weight"]
    exact = align(ArrayStore({"feature.weight": np.ones(3, np.float32)}),
                  ArrayStore({"feature.weight": np.ones(3, np.float32), "feature.B.weight": np.ones(3, np.float32)}))
    assert exact.through_variants == {} and exact.missing == ["feature.B.weight"]  # an exact match is used once


def test_closest_names_rank_segment_by_segment():
    available = ["a.q_proj.weight", "a.qq.weight", "b.q.bias", "a.k.weight", "z.y.x"]
    assert closest_names(["a.q.weight"], available) == {"a.q.weight": ["a.q_proj.weight", "a.qq.weight", "a.k.weight"]}
    assert closest_names(["a.q.weight"], available, limit=1) == {"a.q.weight": ["a.q_proj.weight"]}
    assert closest_names(["a.q.weight"], []) == {} and closest_names([], available) == {}
    assert closest_names(["nothing.alike"], available) == {}
    report = align(ArrayStore({"a.q_proj.weight": np.ones(1, np.float32), "a.qq.weight": np.ones(1, np.float32)}),
                   ArrayStore({"a.q.weight": np.ones(1, np.float32)}))
    assert report.lines()[1] == "  missing a.q.weight (closest: a.q_proj.weight, a.qq.weight)"
    # ties in segment likeness go to the name sharing longer prefixes: q_proj is closer to q than k_proj is
    assert closest_names(["l.q.w"], ["l.k_proj.w", "l.q_proj.w"]) == {"l.q.w": ["l.q_proj.w", "l.k_proj.w"]}


def test_a_segment_every_name_shares_does_not_vote():
    """``layers`` is in 100 names: only the leaf and the telling segments choose candidates."""
    available = [f"layers.{i}.mlp.weight" for i in range(100)] + ["layers.7.attn.qkv"]
    assert closest_names(["layers.7.attn.q"], available)["layers.7.attn.q"][0] == "layers.7.attn.qkv"
    # a segment in 64 names still votes (mlp.l0...), in 65 it says too little (and the leaf zz finds nothing)
    assert closest_names(["mlp.zz"], [f"mlp.l{i}" for i in range(64)]) == {"mlp.zz": ["mlp.l0", "mlp.l1", "mlp.l2"]}
    assert closest_names(["mlp.zz"], [f"mlp.l{i}" for i in range(65)]) == {}
    leaf_only = [f"m{i}.weight" for i in range(70)]
    # no telling segment: the leaf picks candidates (the first nine of them scored), each half alike
    assert closest_names(["x.weight"], leaf_only) == {"x.weight": ["m0.weight", "m1.weight", "m2.weight"]}


# a Sequential nested 200 deep: difflib's autojunk would drop "block" (more than 1% of the segments) as noise,
# and with the first and last segments differing nothing would be left to match
WANTED = "x." + "block." * 200 + "weight"


SPARE = "y." + "block." * 199 + "bias"


def test_a_name_of_two_hundred_repeated_segments_still_gets_its_closest(tmp_path):
    save_file({SPARE: np.ones(2, np.float32)}, str(tmp_path / "source.safetensors"))
    save_file({WANTED: np.ones(2, np.float32)}, str(tmp_path / "template.safetensors"))
    with open_store(tmp_path / "source.safetensors") as source, open_store(tmp_path / "template.safetensors") as template:
        report = align(source, template)
    assert report.suggestions == {WANTED: [SPARE]}
    assert report.lines()[1] == f"  missing {WANTED} (closest: {SPARE})"


def test_a_missing_name_without_a_close_one_is_listed_alone(tmp_path):
    save_file({"head.bias": np.ones(2, np.float32)}, str(tmp_path / "source.safetensors"))
    save_file({"encoder.weight": np.ones(2, np.float32)}, str(tmp_path / "template.safetensors"))
    with open_store(tmp_path / "source.safetensors") as source, open_store(tmp_path / "template.safetensors") as template:
        report = align(source, template)
    assert report.lines() == ["applied 0, missing 1, unused 1, shape mismatches 0, dtype differences 0",
                              "  missing encoder.weight", "  unused head.bias"]
