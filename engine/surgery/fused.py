"""PyTorch modules that fuse in one tensor what Burn keeps apart (tracel-ai/burn#1632, #4043), and back.

``nn.LSTM`` and ``nn.GRU`` stack their gates row after row in ``weight_ih_lN``, ``weight_hh_lN``,
``bias_ih_lN`` and ``bias_hh_lN`` (``_reverse`` for the second direction): gates i, f, g, o for an LSTM,
r, z, n for a GRU. Burn's ``Lstm`` (burn-nn ``rnn/lstm/lstm_module.rs:61-70``) has ``input_gate``,
``forget_gate``, ``output_gate`` and ``cell_gate``; its ``Gru`` (``rnn/gru.rs:60-66``) ``update_gate``,
``reset_gate`` and ``new_gate``; each a ``GateController`` (``rnn/gate_controller.rs:16-21``) of two
Linears, ``input_transform`` and ``hidden_transform``, whose weights are ``[d_input, d_output]``
(``linear.rs:47-53``; the gate Linears use ``LinearLayout::Row``, ``gate_controller.rs:33-46``).
``BiLstm`` (``rnn/lstm/bilstm_module.rs:51-55``) and ``BiGru`` (``rnn/gru.rs:310-314``) hold two of
them, ``forward`` and ``reverse``. ``nn.MultiheadAttention`` fuses its query, key and value projections
in ``in_proj_weight``/``in_proj_bias`` and names the last one ``out_proj``; Burn's
``MultiHeadAttention`` (``attention/mha.rs:73-81``) has ``query``, ``key``, ``value`` and ``output``.
(Line numbers at Burn's main, 2c06be351.)

Only the names and shapes are evidence: the gate count is ``weight_hh``'s rows over its columns (4 an
LSTM, 3 a GRU), and every other tensor of the module must agree. Splitting yields PyTorch-layout
Linears (``[out, in]``) named as Burn names them; the adapter's Linear transpose then makes them Burn's.
Fusing back transposes and stacks in one operation. Burn has no stacked (multi-layer) LSTM or GRU: layer
``N`` of a stack goes to ``MODULE.N`` (a ``Vec`` of them), a convention reported as a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from ..tree import is_index
from .ops import FuseSplit, Op, Rename, SplitFused

LSTM_GATES = ("input_gate", "forget_gate", "cell_gate", "output_gate")  # PyTorch's row order: i, f, g, o
GRU_GATES = ("reset_gate", "update_gate", "new_gate")  # PyTorch's row order: r, z, n
PROJECTIONS = ("query", "key", "value")  # in_proj_weight's row order
_TRANSFORMS = {"ih": "input_transform", "hh": "hidden_transform"}
_SIDES = {v: k for k, v in _TRANSFORMS.items()}
_RNN = re.compile(r"^(?:(?P<module>.*)\.)?(?P<leaf>weight|bias)_(?P<side>ih|hh)_l(?P<layer>[0-9]{1,6})(?P<reverse>_reverse)?$")
_GATE = re.compile(r"^(?:(?P<module>.*)\.)?(?P<gate>input_gate|forget_gate|cell_gate|output_gate|reset_gate|"
                   r"update_gate|new_gate)\.(?P<transform>input_transform|hidden_transform)\.(?P<leaf>weight|bias)$")


@dataclass(frozen=True)
class Part:
    """One tensor a split or fuse makes: its name and shape, the tensors it is made from, and how."""

    name: str
    shape: tuple[int, ...]
    inputs: tuple[str, ...]
    op: Op


@dataclass
class Found:
    """What the fused modules of a source become: the parts, the Linears they prove (module path ->
    reason) and the parts whose place is a convention (name -> (module path, kind, why))."""

    parts: list[Part] = field(default_factory=list)
    linears: dict[str, str] = field(default_factory=dict)
    conventions: dict[str, tuple[str, str, str]] = field(default_factory=dict)


def _join(*segments: str) -> str:
    return ".".join(s for s in segments if s)


def find(names: Sequence[str], shapes: Sequence[tuple[int, ...]], to_burn: bool) -> Found:
    """The splits (``to_burn``) or fuses (Burn to PyTorch) the names and shapes prove."""
    found = Found()
    markers = ("_ih_l", "_hh_l", "in_proj_") if to_burn else ("_gate.", "query.")
    every = "\n".join(names)  # the common case (no marker in any name) at string speed; a false hit only costs the scan
    if not any(marker in every for marker in markers):
        return found
    shape_of = dict(zip(names, shapes))
    if to_burn:
        _split_rnns(shape_of, found)
        _split_attention(shape_of, found)
    else:
        _fuse_rnns(shape_of, found)
        _fuse_attention(shape_of, found)
    return found


# --- PyTorch -> Burn ------------------------------------------------------------------------------------
def _split_rnns(shape_of: dict[str, tuple[int, ...]], found: Found) -> None:
    modules: dict[str, dict[tuple[int, bool, str, str], str]] = {}
    for name in shape_of:
        match = _RNN.match(name)
        if match:
            key = (int(match["layer"]), bool(match["reverse"]), match["leaf"], match["side"])
            modules.setdefault(match["module"] or "", {})[key] = name
    for module, tensors in modules.items():
        shape = _rnn_shape(module, tensors, shape_of)
        if shape is None:
            continue
        gates, hidden, layers, bidirectional = shape
        kind = "LSTM" if len(gates) == 4 else "GRU"
        for (layer, reverse, leaf, side), name in sorted(tensors.items()):
            base = _join(module, str(layer) if layers > 1 else "", ("reverse" if reverse else "forward") if bidirectional else "")
            outputs = tuple(_join(base, gate, _TRANSFORMS[side], leaf) for gate in gates)
            rest = shape_of[name][1:]
            for k, output in enumerate(outputs):
                found.parts.append(Part(output, (hidden, *rest), (name,),
                                        SplitFused(f"{kind} gates", name, outputs, k * hidden, (k + 1) * hidden)))
                found.linears[output.rpartition(".")[0]] = f"a gate of nn.{kind}'s {name.rpartition('.')[2]}"
                if layers > 1:
                    found.conventions[output] = (_join(module, str(layer)), kind, _stack_reason(kind, module, layer))


def _stack_reason(kind: str, module: str, layer: int) -> str:
    burn = "Lstm" if kind == "LSTM" else "Gru"
    return (f"Burn has no stacked {kind}: layer {layer} of nn.{kind} {module or '(top level)'} is placed at "
            f"{_join(module, str(layer))}, as a Vec<{burn}> (or Vec<Bi{burn}>) field would hold it")


def _rnn_shape(module: str, tensors: dict[tuple[int, bool, str, str], str],
               shape_of: dict[str, tuple[int, ...]]) -> tuple[tuple[str, ...], int, int, bool] | None:
    """``(gates, hidden size, layers, bidirectional)`` when every tensor agrees on one LSTM or GRU, else None."""
    if any(n.startswith(_join(module, "weight_hr_l")) for n in shape_of):
        return None  # proj_size: Burn's Lstm has no projection
    layers = 1 + max(layer for layer, _, _, _ in tensors)
    bidirectional = any(reverse for _, reverse, _, _ in tensors)
    hh = shape_of.get(tensors.get((0, False, "weight", "hh"), ""))
    if hh is None or len(hh) != 2 or hh[1] == 0 or hh[0] % hh[1]:
        return None
    count, hidden = hh[0] // hh[1], hh[1]
    if count not in (3, 4):
        return None
    with_bias = (0, False, "bias", "ih") in tensors
    leaves = [("weight", "ih"), ("weight", "hh")] + ([("bias", "ih"), ("bias", "hh")] if with_bias else [])
    if layers * (2 if bidirectional else 1) * len(leaves) != len(tensors):
        return None  # a layer missing (or l99999999: never enumerated)
    wanted = {(layer, reverse, leaf, side) for layer in range(layers) for reverse in ((False, True) if bidirectional
                                                                                      else (False,))
              for leaf, side in leaves}
    if set(tensors) != wanted:
        return None
    for (_, _, leaf, side), name in tensors.items():
        shape = shape_of[name]
        if shape[:1] != (count * hidden,) or len(shape) != (2 if leaf == "weight" else 1) or (
                leaf == "weight" and side == "hh" and shape[1] != hidden):
            return None
    return (LSTM_GATES if count == 4 else GRU_GATES), hidden, layers, bidirectional


def _split_attention(shape_of: dict[str, tuple[int, ...]], found: Found) -> None:
    for name, shape in shape_of.items():
        module, _, leaf = name.rpartition(".")
        if leaf != "in_proj_weight" or len(shape) != 2 or shape[0] % 3 or not shape[0]:
            continue
        size = shape[0] // 3
        bias = _join(module, "in_proj_bias")
        if bias in shape_of and shape_of[bias] != (shape[0],):
            continue
        for fused, rest in ((name, shape[1:]), *(((bias, ()),) if bias in shape_of else ())):
            leaf_out = "weight" if fused == name else "bias"
            outputs = tuple(_join(module, p, leaf_out) for p in PROJECTIONS)
            for k, output in enumerate(outputs):
                found.parts.append(Part(output, (size, *rest), (fused,),
                                        SplitFused("attention q/k/v", fused, outputs, k * size, (k + 1) * size)))
        for p in PROJECTIONS:
            found.linears[_join(module, p)] = "a projection of nn.MultiheadAttention's in_proj_weight"
        for leaf_out in ("weight", "bias"):
            old = _join(module, "out_proj", leaf_out)
            if old in shape_of:
                new = _join(module, "output", leaf_out)
                found.parts.append(Part(new, shape_of[old], (old,), Rename(old, new, "nn.MultiheadAttention out_proj")))
                found.linears[_join(module, "output")] = "nn.MultiheadAttention's out_proj"


# --- Burn -> PyTorch ------------------------------------------------------------------------------------
def _fuse_rnns(shape_of: dict[str, tuple[int, ...]], found: Found) -> None:
    cells: dict[str, dict[tuple[str, str, str], str]] = {}
    for name in shape_of:
        match = _GATE.match(name)
        if match:
            cells.setdefault(match["module"] or "", {})[(match["gate"], match["transform"], match["leaf"])] = name
    kinds = {path: kind for path, tensors in cells.items() if (kind := _cell_kind(tensors, shape_of))}
    for path, kind in kinds.items():
        module, layer, reverse, stacked = _pytorch_place(path, kind, kinds)
        gates = LSTM_GATES if kind == "LSTM" else GRU_GATES
        for transform, side in _SIDES.items():
            for leaf in ("weight", "bias"):
                inputs = tuple(cells[path].get((gate, transform, leaf), "") for gate in gates)
                if not all(inputs):
                    continue
                output = _join(module, f"{leaf}_{side}_l{layer}{'_reverse' if reverse else ''}")
                first = shape_of[inputs[0]]
                shape = (len(gates) * first[-1], first[0]) if leaf == "weight" else (len(gates) * first[0],)
                found.parts.append(Part(output, shape, inputs, FuseSplit(f"{kind} gates", inputs, output,
                                                                          leaf == "weight")))
                if stacked:
                    found.conventions[output] = (module, kind, f"Burn's {path} is read as layer {layer} of one "
                                                               f"multi-layer nn.{kind} {module or '(top level)'}")


def _cell_kind(tensors: dict[tuple[str, str, str], str], shape_of: dict[str, tuple[int, ...]]) -> str | None:
    """"LSTM" or "GRU" when a module holds exactly that cell's gates, each two Linears of one shape."""
    gates = {gate for gate, _, _ in tensors}
    kind = "LSTM" if gates == set(LSTM_GATES) else "GRU" if gates == set(GRU_GATES) else None
    if kind is None:
        return None
    biased = any(leaf == "bias" for _, _, leaf in tensors)
    hidden = None
    for transform in ("hidden_transform", "input_transform"):  # Burn's [in, out]: hidden is [H, H], input [in, H]
        shapes = {shape_of.get(tensors.get((g, transform, "weight"), "")) for g in gates}
        if len(shapes) != 1 or None in shapes:
            return None
        (shape,) = shapes
        hidden = shape[1] if hidden is None and len(shape) == 2 and shape[0] == shape[1] else hidden
        if len(shape) != 2 or hidden is None or shape[1] != hidden:
            return None
        if biased and any(shape_of.get(tensors.get((g, transform, "bias"), "")) != (hidden,) for g in gates):
            return None
    return kind if len(tensors) == len(gates) * 2 * (2 if biased else 1) else None


def _pytorch_place(path: str, kind: str, kinds: dict[str, str]) -> tuple[str, int, bool, bool]:
    """Where a Burn cell goes in PyTorch: ``(module, layer, reverse, stacked)``.

    ``X.forward``/``X.reverse`` of one kind are a BiLstm/BiGru at ``X``; ``X.0``, ``X.1``... (two or
    more) a stack at ``X``, which is a reading, not evidence (reported as a guess). A stack of BiLstms needs
    both directions of layers 0 and 1, so that a BiLstm's two directions never land in two modules.
    """
    parent, _, last = path.rpartition(".")
    reverse = bidirectional = False
    if last in ("forward", "reverse") and kinds.get(_join(parent, "reverse" if last == "forward" else "forward")) == kind:
        path, reverse, bidirectional = parent, last == "reverse", True
        parent, _, last = path.rpartition(".")
    if is_index(last):
        directions = ("forward", "reverse") if bidirectional else ("",)
        siblings = [_join(parent, str(n), direction) for n in range(2) for direction in directions]
        if all(kinds.get(s) == kind for s in siblings):
            return parent, int(last), reverse, True
    return path, 0, reverse, False


def _fuse_attention(shape_of: dict[str, tuple[int, ...]], found: Found) -> None:
    for name, shape in shape_of.items():
        module, _, leaf = name.rpartition(".")
        if not module.endswith("query") or leaf != "weight" or len(shape) != 2:
            continue
        owner = module[:-len("query")].rstrip(".")
        if module != _join(owner, "query"):
            continue
        weights = tuple(_join(owner, p, "weight") for p in PROJECTIONS)
        biases = tuple(_join(owner, p, "bias") for p in PROJECTIONS)
        if any(shape_of.get(w) != shape for w in weights) or _join(owner, "output", "weight") not in shape_of:
            continue
        has_bias = [b in shape_of for b in biases]
        if any(has_bias) and not (all(has_bias) and all(shape_of[b] == (shape[1],) for b in biases)):
            continue
        what = "attention q/k/v"
        output = _join(owner, "in_proj_weight")
        found.parts.append(Part(output, (3 * shape[1], shape[0]), weights, FuseSplit(what, weights, output, True)))
        if all(has_bias):
            output = _join(owner, "in_proj_bias")
            found.parts.append(Part(output, (3 * shape[1],), biases, FuseSplit(what, biases, output, False)))
        for leaf_out in ("weight", "bias"):
            old = _join(owner, "output", leaf_out)
            if old in shape_of:
                new = _join(owner, "out_proj", leaf_out)
                found.parts.append(Part(new, shape_of[old], (old,), Rename(old, new, "Burn MultiHeadAttention output")))
        found.linears[_join(owner, "out_proj")] = "Burn MultiHeadAttention's output"
