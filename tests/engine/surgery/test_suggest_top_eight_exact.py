"""Only the eight most voted name rules are proven, and a top-level key comes only from a rule that strips a
prefix (README "Suggestions": the front-running name patterns are planned and checked; a stripped PyTorch branch
is also offered as the checkpoint's top-level key) (issue 25: the survivors ``_rename_candidates__mutmut_20``,
``_34`` and ``_stripped_branch__mutmut_7``) -> ``test_a_key_is_offered_only_from_a_front_running_strip_rule``."""

from __future__ import annotations

import numpy as np
import torch

from engine import ArrayStore, Store, export, open_store
from engine.surgery import Recipe, align, plan
from engine.surgery.suggestions import NAME_CANDIDATES, name_votes, suggest


def test_a_key_is_offered_only_from_a_front_running_strip_rule(tmp_path):
    # under key "a": x.w (the target's x.w: one vote to strip "a.") and five p*.w (the target's b.p*.w: "a." -> "b.");
    # eight more keys c0..c7 of two tensors each, whose many "cN." -> "dM." rules push the strip rule past the eight
    checkpoint = {"a": {"x.w": torch.zeros(2), **{f"p{i}.w": torch.zeros(2) for i in range(5)}}}
    checkpoint |= {f"c{j}": {"q.w": torch.zeros(2), "r.w": torch.zeros(2)} for j in range(8)}
    torch.save(checkpoint, tmp_path / "ck.pt")
    target = {"x.w": np.zeros(2, np.float32), **{f"b.p{i}.w": np.zeros(2, np.float32) for i in range(5)}}
    target |= {f"d{j}.{k}.w": np.zeros(2, np.float32) for j in range(8) for k in "qr"}
    export(ArrayStore(target).entries, tmp_path / "t.bpk")

    def reopen(store: Store, key: str) -> Store:
        return open_store(store.path, top_level_key=key)

    with open_store(tmp_path / "ck.pt") as source, open_store(tmp_path / "t.bpk") as burn:
        report = align(plan([source], Recipe()), burn)
        votes = name_votes(report.unused, report.missing)
        front = [rule for rule, _ in votes.most_common(NAME_CANDIDATES)]
        strip = ("^a\\.", "", "strip the prefix a.")
        assert strip in votes and strip not in front and ("^a\\.", "b.", "rename the prefix a. to b.") in front
        assert [s.line() for s in suggest([source], Recipe(), burn, reopen=reopen, limit=20)] == [  # no key 'a'
            "suggest: rename c to d + rename the prefix a. to b.: fixes 21 of 22 missing or mismatched: "
            "remap '(^|\\.)c(\\d*)(\\.|$)' -> '${1}d${2}${3}'; remap '^a\\.' -> 'b.'"]
