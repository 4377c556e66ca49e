"""PEFT LoRA adapters saved by real PEFT for a small real torch model, and PEFT's own merge of them.

``TinyLM`` is named as a Hugging Face causal LM is (``model.embed_tokens``, ``model.layers.0.self_attn.q_proj``,
``lm_head``), with one GPT-2 style ``Conv1D`` (``model.layers.0.mlp.c_fc``, weight stored ``[in, out]``).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import ml_dtypes
import numpy as np
import torch
from peft import LoraConfig, PeftModel, get_peft_model
from peft.tuners.lora import LoraLayer
from safetensors.torch import load_file, save_file
from torch import nn
from transformers.pytorch_utils import Conv1D


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q_proj = nn.Linear(8, 8)
        self.v_proj = nn.Linear(8, 4, bias=False)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_fc = Conv1D(12, 8)  # weight [8, 12]: GPT-2's layout, fan_in_fan_out
        self.down_proj = nn.Linear(12, 8)


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn = Attention()
        self.mlp = MLP()


class Inner(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(16, 8)
        self.patch = nn.Conv2d(8, 6, 1)  # a 1x1 convolution: a Linear on [6, 8]
        self.layers = nn.ModuleList([Layer()])


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = Inner()
        self.lm_head = nn.Linear(8, 16, bias=False)


def save_base(path: Path, dtype: torch.dtype = torch.float32, seed: int = 0, drop: str | None = None,
              reshape: dict[str, tuple[int, ...]] | None = None) -> Path:
    """The base's state dict as SafeTensors (``drop`` one tensor, or give some another shape, to break it)."""
    torch.manual_seed(seed)
    model = TinyLM()
    with torch.no_grad():  # Conv1D starts with zero biases: give every tensor values
        for param in model.parameters():
            param.normal_(0, 0.5)
    state = {k: v.detach().to(dtype).contiguous() for k, v in model.state_dict().items() if k != drop}
    for name, shape in (reshape or {}).items():
        state[name] = torch.randn(shape).to(dtype)
    save_file(state, str(path))
    return path


def _model(base: Path) -> TinyLM:
    state = load_file(str(base))
    model = TinyLM().to(next(iter(state.values())).dtype)
    model.load_state_dict(state)
    return model


def save_adapter(folder: Path, base: Path, seed: int = 1, safe: bool = True, **config) -> Path:
    """PEFT's ``save_pretrained`` of a LoRA adapter on ``base`` made with ``LoraConfig(**config)``, its lora_A and
    lora_B (and lora_B's bias) set to random values (PEFT starts B at zero, which would merge nothing); ``safe``
    False saves adapter_model.bin."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        peft_model = get_peft_model(_model(base), LoraConfig(**config))
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for name, param in peft_model.named_parameters():
                if "lora_" in name:
                    param.copy_(torch.randn(param.shape, generator=generator, dtype=torch.float32).to(param.dtype))
        peft_model.save_pretrained(str(folder), safe_serialization=safe)
    return folder


def peft_merged(base: Path, adapters: list[tuple[Path, float]]) -> dict[str, np.ndarray]:
    """PEFT's ``merge_and_unload`` of the saved adapters, in order, on the saved base: each adapter loaded from its
    folder, its scale set with ``set_scale`` on every LoRA layer (1.0 leaves PEFT's scaling as it is)."""
    names = [f"a{i}" for i in range(len(adapters))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = PeftModel.from_pretrained(_model(base), str(adapters[0][0]), adapter_name=names[0])
        for name, (folder, _) in zip(names[1:], adapters[1:]):
            model.load_adapter(str(folder), adapter_name=name)
        for name, (_, scale) in zip(names, adapters):
            if scale != 1.0:
                for module in model.modules():
                    if isinstance(module, LoraLayer) and name in module.scaling:
                        module.set_scale(name, scale)
        merged = model.merge_and_unload(adapter_names=names)
    return {k: to_numpy(v) for k, v in merged.state_dict().items()}


def to_numpy(tensor: torch.Tensor) -> np.ndarray:
    tensor = tensor.detach().contiguous()
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return tensor.numpy()


def base_values(base: Path) -> dict[str, np.ndarray]:
    return {k: to_numpy(v) for k, v in load_file(str(base)).items()}


def write_adapter(folder: Path, tensors: dict[str, np.ndarray], config: dict | str | bytes | None = None) -> Path:
    """An adapter folder written by hand: ``tensors`` as adapter_model.safetensors, ``config`` as its
    adapter_config.json (a dict as JSON, text or bytes as they are; a plain LoRA config by default)."""
    import json

    from safetensors.numpy import save_file as save_numpy
    folder.mkdir(parents=True, exist_ok=True)
    save_numpy({k: np.ascontiguousarray(v) for k, v in tensors.items()}, str(folder / "adapter_model.safetensors"))
    config = {"peft_type": "LORA", "r": 2, "lora_alpha": 4} if config is None else config
    raw = config if isinstance(config, bytes) else (config if isinstance(config, str) else json.dumps(config)).encode()
    (folder / "adapter_config.json").write_bytes(raw)
    return folder
