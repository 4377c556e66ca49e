"""The bundled recipe ``gguf-llama-to-hf`` (engine/surgery/recipes, ``ops.UnpermuteRotary``): llama.cpp's tensor
names back to Hugging Face's, as gguf's own name map pairs them, and the q/k row order llama.cpp's converter gives
for its rotary embedding undone as a named operation, on quantized rows too (whole rows move, blocks stay).
Without it a llama.cpp model reaches Burn under names no Hugging Face port uses, with q and k rows scrambled:
it loads and then produces nonsense."""

from __future__ import annotations

import gguf
import numpy as np
import pytest

from engine import RecipeError, open_store
from engine.surgery import Recipe, as_rust, plan
from tests.helpers.engine_cli_run import run
from tests.helpers.gguf_files import HF_SHAPES, write_llama_gguf

@pytest.mark.parametrize("quantized", [False, True], ids=["f32", "q8_0"])
def test_the_recipe_gives_hugging_face_names_and_rows(tmp_path, quantized):
    model = tmp_path / "llama.gguf"
    expected = write_llama_gguf(model, quantized)
    out = tmp_path / "hf.safetensors"
    done = run("convert", str(model), str(out), "--recipe", "gguf-llama-to-hf", "--dequantize-to", "f32")
    assert done.returncode == 0, done.stderr
    with open_store(out) as store:
        assert sorted(e.name for e in store.entries) == sorted(HF_SHAPES)  # rope_freqs left out
        for name, values in expected.items():
            assert store.read(name).tobytes() == values.tobytes(), name


def test_quantized_rows_move_whole_into_a_burnpack(tmp_path):
    model = tmp_path / "llama.gguf"
    expected = write_llama_gguf(model, quantized=True)
    out = tmp_path / "llama.bpk"
    done = run("convert", str(model), str(out), "--recipe", "gguf-llama-to-hf")
    assert done.returncode == 0, done.stderr
    with open_store(out) as store:
        q = store.entry("model.layers.1.self_attn.q_proj.weight")
        assert q.dtype.kind == "quantized" and q.dtype.quant_scheme.value == "Q8S"
        for name in ("model.layers.1.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight"):
            assert store.read(name).tobytes() == expected[name].tobytes(), name


def test_the_plan_names_the_operation_and_its_head_counts(tmp_path):
    model = tmp_path / "llama.gguf"
    write_llama_gguf(model, quantized=True)
    recipe = Recipe.load("gguf-llama-to-hf")
    with open_store(model) as store:
        result = plan([store], recipe)
        by_name = {t.name: t for t in result.tensors}
        assert by_name["model.layers.0.self_attn.q_proj.weight"].operations == [
            "undo llama.cpp's rotary row order (4 heads of 16 rows)",
            "rename blk.0.attn_q.weight -> model.layers.0.self_attn.q_proj.weight (remap)"]
        assert by_name["model.layers.0.self_attn.k_proj.weight"].operations[0] == \
            "undo llama.cpp's rotary row order (2 heads of 16 rows)"
        assert not any("rotary" in op for op in by_name["model.layers.0.self_attn.v_proj.weight"].operations)
    rust = as_rust(recipe)
    assert "// Store Studio only: llama.cpp's rotary row order undone on ^blk\\.\\d+\\.attn_q\\.(weight|bias)$" in rust


def test_a_file_without_head_counts_or_with_rows_that_do_not_split_is_one_line(tmp_path):
    path = tmp_path / "bare.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tensor("blk.0.attn_q.weight", np.zeros((8, 32), np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    recipe = Recipe.load("gguf-llama-to-hf")
    with open_store(path) as store, pytest.raises(RecipeError) as refused:
        plan([store], recipe)
    assert str(refused.value) == (f"{path}: rotary_rows '^blk\\.\\d+\\.attn_q\\.(weight|bias)$' counts heads by "
                                  "llama.attention.head_count, and the file has none of them")
    fixed = Recipe.from_json({"version": 1, "rotary_rows": [{"pattern": "attn_q", "heads": [3]}]})
    with open_store(path) as store, pytest.raises(RecipeError) as refused:
        plan([store], fixed)
    assert str(refused.value) == (f"{path}: tensor 'blk.0.attn_q.weight' has 8 rows, which do not split into 3 "
                                  "heads of row pairs (rotary_rows)")


def test_a_rotary_rule_round_trips_through_json_and_bad_ones_are_refused():
    doc = {"version": 1, "rotary_rows": [{"pattern": "q$", "heads": ["a.b", 8]}]}
    assert Recipe.from_json(doc).to_json() == doc
    for bad, words in (({"pattern": "q$"}, "rotary_rows[0] must be"), ({"pattern": "(", "heads": [2]}, "("),
                       ({"pattern": "q", "heads": [0]}, "heads must be positive numbers or metadata keys")):
        with pytest.raises(RecipeError) as refused:
            Recipe.from_json({"version": 1, "rotary_rows": [bad]})
        assert words in str(refused.value)

