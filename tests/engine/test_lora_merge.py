"""PEFT LoRA adapters merged into a base store: values equal real PEFT's ``merge_and_unload`` on the same files.

PEFT computes the update in float32 as ``transpose(B @ A) * scaling`` and adds it to the weight in torch's
promoted type (float32 for F16/BF16/F32); ``engine.lora`` does the same float32 operations in the same order, so
every value is compared bit for bit (numpy's and torch's float32 ``B @ A`` agree on these shapes; a BLAS that
summed the rank dimension in another order would differ by an ulp, and these tests would say so).
"""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pytest
import torch

from engine import FormatError, RecipeError, export, open_store
from engine.lora import MERGEABLE, STEP_BYTES, merged, read_adapter
from tests.helpers.lora_files import (
    base_values,
    peft_merged,
    save_adapter,
    save_base,
    write_adapter,
)

TARGETS = ["q_proj", "v_proj", "down_proj"]
CASES = {
    "plain": (torch.float32, dict(r=4, lora_alpha=8, target_modules=TARGETS)),
    "rslora": (torch.float32, dict(r=4, lora_alpha=16, use_rslora=True, target_modules=TARGETS)),
    "patterns": (torch.float32, dict(r=4, lora_alpha=8, target_modules=TARGETS,
                                     rank_pattern={"v_proj": 2, "layers.0.self_attn.q_proj": 6},
                                     alpha_pattern={"down_proj": 3})),
    "conv1d-fan-in-fan-out": (torch.float32, dict(r=4, lora_alpha=8, target_modules=["c_fc"], fan_in_fan_out=True)),
    "conv2d-1x1": (torch.float32, dict(r=4, lora_alpha=8, target_modules=["patch", "q_proj"])),
    "f16": (torch.float16, dict(r=4, lora_alpha=8, target_modules=TARGETS)),
    "f16-conv1d": (torch.float16, dict(r=3, lora_alpha=5, target_modules=["c_fc"], fan_in_fan_out=True)),
    "bf16": (torch.bfloat16, dict(r=4, lora_alpha=8, target_modules=TARGETS)),
    "lora-bias": (torch.float32, dict(r=4, lora_alpha=8, target_modules=["q_proj", "down_proj"], lora_bias=True)),
}
CHANGED = {"q_proj": "model.layers.0.self_attn.q_proj.weight", "v_proj": "model.layers.0.self_attn.v_proj.weight",
           "down_proj": "model.layers.0.mlp.down_proj.weight", "c_fc": "model.layers.0.mlp.c_fc.weight",
           "patch": "model.patch.weight"}


def _assert_equal_to_peft(store, reference: dict[str, np.ndarray], base: dict[str, np.ndarray]) -> None:
    assert store.names == list(base)  # the base's tensors, in its order
    for name in store.names:
        got = store.read(name)
        assert got.dtype == reference[name].dtype and got.shape == reference[name].shape, name
        assert got.tobytes() == reference[name].tobytes(), name  # bit for bit
        assert b"".join(bytes(c) for c in store.iter_bytes(name, 7)) == got.tobytes(), name
    assert set(store.merged_names) == {n for n in base if base[n].tobytes() != reference[n].tobytes()}


@pytest.mark.parametrize("case", list(CASES))
def test_merge_equals_peft_merge_and_unload(tmp_path, case):
    dtype, config = CASES[case]
    base = save_base(tmp_path / "base.safetensors", dtype)
    folder = save_adapter(tmp_path / "lora", base, **config)
    reference = peft_merged(base, [(folder, 1.0)])
    with merged(open_store(base), [(read_adapter(folder), 1.0)]) as store:
        _assert_equal_to_peft(store, reference, base_values(base))
        expected = {CHANGED[t] for t in config["target_modules"]}
        if config.get("lora_bias"):
            expected |= {n[:-len("weight")] + "bias" for n in expected}
        assert set(store.merged_names) == expected
        [record] = store.lora
        assert record.path == str(folder / "adapter_model.safetensors") and record.scale == 1.0
        assert set(record.tensors) == expected


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_two_adapters_merge_in_order_with_their_scales(tmp_path, dtype):
    """PEFT merges them one after the other, rounding to the weight's dtype after each: so does the merge."""
    base = save_base(tmp_path / "base.safetensors", dtype)
    first = save_adapter(tmp_path / "first", base, seed=1, r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"])
    second = save_adapter(tmp_path / "second", base, seed=2, r=2, lora_alpha=4, use_rslora=True,
                          target_modules=["q_proj", "down_proj"])
    reference = peft_merged(base, [(first, 1.0), (second, 0.5)])
    with merged(open_store(base), [(read_adapter(first), 1.0), (read_adapter(second), 0.5)]) as store:
        _assert_equal_to_peft(store, reference, base_values(base))
        assert [r.scale for r in store.lora] == [1.0, 0.5]
        assert set(store.lora[1].tensors) == {CHANGED["q_proj"], CHANGED["down_proj"]}


def test_formula_in_numpy_agrees_with_peft(tmp_path):
    """The formula written out in numpy (float32) gives PEFT's values for two adapters with scales 1.0 and 0.5."""
    base = save_base(tmp_path / "base.safetensors")
    first = save_adapter(tmp_path / "first", base, seed=1, r=4, lora_alpha=8, target_modules=["q_proj"])
    second = save_adapter(tmp_path / "second", base, seed=2, r=2, lora_alpha=4, target_modules=["q_proj"])
    reference = peft_merged(base, [(first, 1.0), (second, 0.5)])
    w = base_values(base)[CHANGED["q_proj"]]
    for folder, scaling in ((first, 8 / 4), (second, 0.5 * 4 / 2)):
        with open_store(folder / "adapter_model.safetensors") as adapter:
            a = adapter.read("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight")
            b = adapter.read("base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight")
            w = w + (b @ a) * np.float32(scaling)
    assert w.tobytes() == reference[CHANGED["q_proj"]].tobytes()


def test_untargeted_tensors_keep_their_byte_ranges_and_export_writes_the_merge(tmp_path):
    base = save_base(tmp_path / "base.safetensors")
    folder = save_adapter(tmp_path / "lora", base, r=4, lora_alpha=8, target_modules=["q_proj"])
    reference = peft_merged(base, [(folder, 1.0)])
    with open_store(base) as plain, merged(open_store(base), [(read_adapter(folder), 1.0)]) as store:
        for entry, original in zip(store.entries, plain.entries):
            if entry.name == CHANGED["q_proj"]:
                assert entry.byte_range() is None and entry.offset is None
            else:
                assert entry.byte_range()[1:] == original.byte_range()[1:]
        out = export(store.entries, tmp_path / "merged.safetensors")
    with open_store(out) as written:
        for name in written.names:
            assert written.read(name).tobytes() == reference[name].tobytes()


def test_peft_names_with_the_adapter_name_and_without_the_prefix_and_a_base_without_model(tmp_path):
    """``lora_A.default.weight`` (an adapter name kept), no ``base_model.model.`` prefix, and a base saved from the
    inner model (no ``model.``): the same update as PEFT's names on the full base."""
    from safetensors.numpy import save_file
    base = save_base(tmp_path / "base.safetensors")
    folder = save_adapter(tmp_path / "lora", base, r=4, lora_alpha=8, target_modules=["q_proj"])
    reference = peft_merged(base, [(folder, 1.0)])
    with open_store(folder / "adapter_model.safetensors") as saved:
        tensors = {n.replace("base_model.model.", "").replace(".weight", ".default.weight"): saved.read(n)
                   for n in saved.names}
    renamed = write_adapter(tmp_path / "renamed", tensors, json.loads((folder / "adapter_config.json").read_text()))
    inner = tmp_path / "inner.safetensors"
    save_file({k.removeprefix("model."): v for k, v in base_values(base).items()}, str(inner))
    with merged(open_store(inner), [(read_adapter(renamed / "adapter_model.safetensors"), 1.0)]) as store:
        assert store.merged_names == ["layers.0.self_attn.q_proj.weight"]
        assert store.read("layers.0.self_attn.q_proj.weight").tobytes() == reference[CHANGED["q_proj"]].tobytes()


def test_memory_stays_within_three_times_the_tensor(tmp_path):
    """An F16 weight of 16 MiB: the result (1x) and one adapter's float32 update (2x), plus blocks of rows."""
    from safetensors.numpy import save_file
    rng = np.random.default_rng(0)
    rows, cols = 2048, 4096
    save_file({"w.weight": rng.standard_normal((rows, cols), np.float32).astype(np.float16)},
              str(tmp_path / "base.safetensors"))
    folder = write_adapter(tmp_path / "lora", {"base_model.model.w.lora_A.weight": rng.standard_normal((8, cols), np.float32),
                                               "base_model.model.w.lora_B.weight": rng.standard_normal((rows, 8), np.float32)},
                           {"peft_type": "LORA", "r": 8, "lora_alpha": 16})
    nbytes = rows * cols * 2
    with merged(open_store(tmp_path / "base.safetensors"), [(read_adapter(folder), 1.0)]) as store:
        tracemalloc.start()
        try:
            for _ in store.iter_bytes("w.weight"):
                pass
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak <= 3 * nbytes + 3 * STEP_BYTES, peak  # f32 block, its f16 copy and the read buffer


# --- refusals -----------------------------------------------------------------------------------------------------
def _refusal(where, base=None) -> str:
    with pytest.raises((FormatError, RecipeError)) as caught:
        adapter = read_adapter(where)
        merged(open_store(base), [(adapter, 1.0)]).close()
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_dora_is_refused_by_its_config_and_by_its_magnitude_vector(tmp_path):
    base = save_base(tmp_path / "base.safetensors")
    folder = save_adapter(tmp_path / "dora", base, r=2, target_modules=["q_proj"], use_dora=True)
    assert _refusal(folder) == "dora/adapter_config.json: sets use_dora (DoRA), which this merge does not do"
    with open_store(folder / "adapter_model.safetensors") as saved:
        tensors = {n: saved.read(n) for n in saved.names}
    plain = write_adapter(tmp_path / "dora-tensors", tensors)
    assert _refusal(plain) == ("dora-tensors/adapter_model.safetensors: tensor 'base_model.model.model.layers.0."
                               "self_attn.q_proj.lora_magnitude_vector' is DoRA's magnitude vector: DoRA adapters "
                               "are not merged")


def test_embedding_adapter_is_refused(tmp_path):
    base = save_base(tmp_path / "base.safetensors")
    folder = save_adapter(tmp_path / "emb", base, r=2, target_modules=["embed_tokens", "q_proj"])
    assert _refusal(folder) == ("emb/adapter_model.safetensors: tensor 'base_model.model.model.embed_tokens."
                                "lora_embedding_A' belongs to an embedding adapter (lora_embedding_A/B): embedding "
                                "adapters are not merged")


def test_modules_to_save_and_trained_biases_would_need_copying(tmp_path):
    base = save_base(tmp_path / "base.safetensors")
    folder = save_adapter(tmp_path / "mts", base, r=2, target_modules=["q_proj"], modules_to_save=["lm_head"])
    assert _refusal(folder) == ("mts/adapter_model.safetensors: tensor 'base_model.model.lm_head.weight' is a whole "
                                "tensor (PEFT's modules_to_save) that would have to be copied over the base's: not merged")
    folder = save_adapter(tmp_path / "bias", base, r=2, target_modules=["q_proj"], bias="lora_only")
    assert _refusal(folder) == ("bias/adapter_model.safetensors: tensor 'base_model.model.model.layers.0.self_attn."
                                "q_proj.base_layer.bias' is a bias trained with the adapter (bias 'lora_only') that "
                                "would have to be copied over the base's: not merged")


def test_missing_target_is_one_line_naming_both(tmp_path):
    base = save_base(tmp_path / "base.safetensors", drop=CHANGED["q_proj"])
    folder = save_adapter(tmp_path / "lora", save_base(tmp_path / "full.safetensors"), r=2, target_modules=["q_proj"])
    assert _refusal(folder, base) == ("lora/adapter_model.safetensors: 'base_model.model.model.layers.0.self_attn."
                                      "q_proj.lora_A.weight' targets 'model.layers.0.self_attn.q_proj.weight', which "
                                      "base.safetensors does not have")


def test_shape_mismatch_is_one_line_naming_both(tmp_path):
    base = save_base(tmp_path / "base.safetensors", reshape={CHANGED["q_proj"]: (6, 5)})
    folder = save_adapter(tmp_path / "lora", save_base(tmp_path / "full.safetensors"), r=2, target_modules=["q_proj"])
    assert _refusal(folder, base) == ("lora/adapter_model.safetensors: 'base_model.model.model.layers.0.self_attn."
                                      "q_proj.lora_B.weight' @ lora_A gives a [8, 8] update, which does not fit "
                                      "'model.layers.0.self_attn.q_proj.weight' [6, 5] of base.safetensors")


def test_square_weight_of_an_adapter_mixing_linear_and_conv1d_is_refused(tmp_path):
    """PEFT sets fan_in_fan_out per layer class and saves the last value it set: for a square weight of such an
    adapter either orientation could be PEFT's."""
    base = save_base(tmp_path / "base.safetensors")
    folder = save_adapter(tmp_path / "mixed", base, r=2, target_modules=["q_proj", "v_proj", "c_fc"],
                          fan_in_fan_out=True)
    assert _refusal(folder, base) == ("mixed/adapter_model.safetensors: 'base_model.model.model.layers.0.self_attn."
                                      "q_proj.lora_A.weight' updates the square 'model.layers.0.self_attn.q_proj."
                                      "weight', which may be a Linear or a Conv1D: this adapter has both (PEFT chose "
                                      "fan_in_fan_out by the layer's class, which a weights file does not record), so "
                                      "it cannot be merged")


def test_conv_adapter_with_a_kernel_is_refused(tmp_path):
    folder = write_adapter(tmp_path / "conv", {"base_model.model.conv.lora_A.weight": np.zeros((2, 3, 3, 3), np.float32),
                                               "base_model.model.conv.lora_B.weight": np.zeros((4, 2, 1, 1), np.float32)})
    assert _refusal(folder) == ("conv/adapter_model.safetensors: tensor 'base_model.model.conv.lora_A.weight' is a "
                                "Conv adapter with a 3x3 kernel, not 1x1: only Linear-like (1x1) Conv adapters are merged")


def test_base_changing_initialisations_and_other_peft_types_are_refused(tmp_path):
    tensors = {"base_model.model.w.lora_A.weight": np.zeros((2, 3), np.float32),
               "base_model.model.w.lora_B.weight": np.zeros((4, 2), np.float32)}
    pissa = write_adapter(tmp_path / "pissa", tensors, {"peft_type": "LORA", "init_lora_weights": "pissa_niter_4"})
    assert _refusal(pissa) == ("pissa/adapter_config.json: init_lora_weights 'pissa_niter_4': a PiSSA adapter fits the "
                               "base as PiSSA changed it, not the saved base (convert it with PEFT's "
                               "path_initial_model_for_weight_conversion first)")
    ia3 = write_adapter(tmp_path / "ia3", tensors, {"peft_type": "IA3"})
    assert _refusal(ia3) == "ia3/adapter_config.json: is a PEFT 'IA3' adapter: only LORA adapters are merged"


@pytest.mark.parametrize("config, message", [
    (b"{", "is not JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"),
    (b"\xff", "is not UTF-8 text"),
    (b"[1]", "holds list, not a JSON object"),
    (b"[" * 100_000 + b"]" * 100_000, "nests too deeply to be a PEFT config"),
    ({"peft_type": "LORA", "r": "2"}, "field 'r' must be a positive integer, not '2'"),
    ({"peft_type": "LORA", "r": True}, "field 'r' must be a positive integer, not True"),
    ({"peft_type": "LORA", "r": 2, "lora_alpha": float("inf")}, "is not JSON (Infinity is not JSON)"),
    ({"peft_type": "LORA", "r": 2, "use_rslora": "yes"}, "field 'use_rslora' must be true or false, not 'yes'"),
    ({"peft_type": "LORA", "r": 2, "rank_pattern": {"w": 0}}, "field 'rank_pattern'['w'] must be a positive integer, not 0"),
    ({"peft_type": "LORA", "r": 2, "rank_pattern": {"(?<=x)w": 2}},
     "pattern '(?<=x)w' cannot be matched (invalid perl operator: (?<=)"),
    ({"r": 2}, "field 'peft_type' must be \"LORA\", not None"),
])
def test_hostile_configs_are_one_line_naming_file_and_field(tmp_path, config, message):
    tensors = {"base_model.model.w.lora_A.weight": np.zeros((2, 3), np.float32),
               "base_model.model.w.lora_B.weight": np.zeros((4, 2), np.float32)}
    raw = json.dumps(config).encode() if isinstance(config, dict) else config  # float("inf") is dumped as Infinity
    folder = write_adapter(tmp_path / "bad", tensors, raw)
    assert _refusal(folder) == f"bad/adapter_config.json: {message}"


def test_rank_that_disagrees_with_the_config_and_missing_files(tmp_path):
    tensors = {"base_model.model.w.lora_A.weight": np.zeros((2, 3), np.float32),
               "base_model.model.w.lora_B.weight": np.zeros((4, 2), np.float32)}
    folder = write_adapter(tmp_path / "rank", tensors, {"peft_type": "LORA", "r": 4})
    assert _refusal(folder) == ("rank/adapter_model.safetensors: tensor 'base_model.model.w.lora_A.weight' has rank 2 "
                                "but adapter_config.json gives r=4 for 'w' (PEFT would refuse to load it)")
    (tmp_path / "empty").mkdir()
    assert _refusal(tmp_path / "empty") == ("empty/adapter_model.safetensors: no adapter_model.safetensors or "
                                            "adapter_model.bin in this folder: not a saved PEFT adapter")
    (folder / "adapter_config.json").unlink()
    assert _refusal(folder) == ("rank/adapter_config.json: missing: a PEFT adapter is saved with its "
                                "adapter_config.json")


def test_only_float_weights_take_a_merge(tmp_path):
    from safetensors.numpy import save_file
    save_file({"w.weight": np.zeros((4, 3), np.int32)}, str(tmp_path / "base.safetensors"))
    folder = write_adapter(tmp_path / "lora", {"base_model.model.w.lora_A.weight": np.zeros((2, 3), np.float32),
                                               "base_model.model.w.lora_B.weight": np.zeros((4, 2), np.float32)})
    assert _refusal(folder, tmp_path / "base.safetensors") == (
        "lora/adapter_model.safetensors: 'base_model.model.w.lora_A.weight' targets 'w.weight' of base.safetensors, "
        f"which is I32: merges are made into {', '.join(MERGEABLE)} weights")


def test_adapter_saved_as_a_pytorch_file(tmp_path):
    """``adapter_model.bin`` (``save_pretrained(safe_serialization=False)``) is read without running it."""
    base = save_base(tmp_path / "base.safetensors")
    folder = save_adapter(tmp_path / "lora", base, r=4, lora_alpha=8, target_modules=["q_proj"], safe=False)
    assert (folder / "adapter_model.bin").exists() and not (folder / "adapter_model.safetensors").exists()
    reference = peft_merged(base, [(folder, 1.0)])
    with merged(open_store(base), [(read_adapter(folder), 1.0)]) as store:
        _assert_equal_to_peft(store, reference, base_values(base))


def test_a_config_that_is_a_fifo_is_refused_without_waiting_for_it(tmp_path):
    """A shared adapter folder whose adapter_config.json is a FIFO: reading it would wait for ever."""
    import os

    folder = write_adapter(tmp_path / "fifo", {"base_model.model.x.lora_A.weight": np.ones((2, 4), np.float32),
                                                "base_model.model.x.lora_B.weight": np.ones((4, 2), np.float32)})
    (folder / "adapter_config.json").unlink()
    os.mkfifo(folder / "adapter_config.json")
    with pytest.raises(FormatError) as refused:
        read_adapter(folder)
    assert str(refused.value) == "fifo/adapter_config.json: is a FIFO, not a file"
