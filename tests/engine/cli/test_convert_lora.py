"""``convert BASE OUT --lora ADAPTER [--lora-scale S]`` merges PEFT LoRA adapters into the base while converting
(engine/lora.py), with PEFT's own values; the recipe saved from it replays the merge and prints it back as flags;
a refused adapter is one line; ``diff --json`` of base against merged carries each changed tensor's relative change.
Without these a fine-tuned model reaches Burn only after a merge in Python."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engine import open_store
from tests.helpers.engine_cli_run import run
from tests.helpers.lora_files import peft_merged, save_adapter, save_base

Q = "model.layers.0.self_attn.q_proj.weight"
DOWN = "model.layers.0.mlp.down_proj.weight"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lora")
    base = save_base(folder / "base.safetensors")
    first = save_adapter(folder / "first", base, r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"])
    second = save_adapter(folder / "second", base, seed=2, r=2, lora_alpha=2, use_rslora=True,
                          target_modules=["down_proj"])
    return folder, base, first, second


def test_two_adapters_merge_in_order_with_their_scales_as_peft_merges_them(files, tmp_path):
    folder, base, first, second = files
    out = tmp_path / "merged.bpk"
    done = run("convert", str(base), str(out), "--lora", str(first), "--lora", str(second), "--lora-scale", "1",
               "--lora-scale", "0.5", "--save-recipe", str(tmp_path / "merge.json"))
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[:2] == ["first: LoRA merged into 2 tensors of base.safetensors (scale 1)",
                                            "second: LoRA merged into 1 tensor of base.safetensors (scale 0.5)"]
    want = peft_merged(base, [(first, 1.0), (second, 0.5)])
    with open_store(out) as merged:
        for name in (Q, DOWN, "model.layers.0.self_attn.v_proj.weight", "lm_head.weight"):
            assert merged.read(name).tobytes() == want[name].tobytes(), name
    replay = tmp_path / "replay.bpk"
    assert run("convert", str(replay), "--recipe", str(tmp_path / "merge.json")).returncode == 0
    with open_store(out) as a, open_store(replay) as b:
        assert a.read(DOWN).tobytes() == b.read(DOWN).tobytes()
    printed = run("recipe", str(tmp_path / "merge.json")).stdout
    assert f"--lora {first} --lora {second} --lora-scale 0.5" in printed


def test_diff_json_carries_the_relative_change_of_each_merged_tensor(files, tmp_path):
    folder, base, first, _ = files
    out = tmp_path / "merged.safetensors"
    assert run("convert", str(base), str(out), "--lora", str(first)).returncode == 0
    report = json.loads(run("diff", str(base), str(out), "--json").stdout)
    changes = {t["name"]: t.get("relative_change") for t in report["tensors"]}
    before, after = open_store(base), open_store(out)
    try:
        w, merged = before.read(Q).astype(np.float64), after.read(Q).astype(np.float64)
        assert changes[Q] == pytest.approx(np.linalg.norm(merged - w) / np.linalg.norm(w), rel=1e-6)
    finally:
        before.close()
        after.close()
    assert changes["lm_head.weight"] is None


def test_a_refused_adapter_and_a_scale_without_one_are_one_line_each(files, tmp_path):
    folder, base, first, _ = files
    dora = save_adapter(tmp_path / "dora", base, r=2, lora_alpha=2, target_modules=["q_proj"], use_dora=True)
    done = run("convert", str(base), str(tmp_path / "x.bpk"), "--lora", str(dora))
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1 and "DoRA" in done.stderr
    done = run("convert", str(base), str(tmp_path / "x.bpk"), "--lora", str(first), "--lora-scale", "1",
               "--lora-scale", "2")
    assert done.returncode == 2 and "2 --lora-scale for 1 --lora" in done.stderr
    assert not (tmp_path / "x.bpk").exists()
