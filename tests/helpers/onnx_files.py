"""ONNX files for the tests: models built with ``onnx.helper`` (values raw and in typed fields, every data type the
reader maps, a Conv/Gemm/MatMul graph whose nodes take the initializers), one saved with external data, one
exported by torch, and protobuf bytes written by hand for the hostile files no library writes."""

from __future__ import annotations

import warnings
from pathlib import Path

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

RNG = np.random.default_rng(7)


def _f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def initializers() -> list[TP]:
    """One initializer per way ONNX stores values: raw bytes and each typed field, every data type read."""
    bf16 = _f32(3, 3).astype(ml_dtypes.bfloat16)
    return [
        numpy_helper.from_array(_f32(4, 3, 3, 3), "conv.weight"),  # FLOAT, raw_data
        helper.make_tensor("conv.bias", TP.FLOAT, [4], _f32(4).tolist()),  # FLOAT, float_data
        numpy_helper.from_array(_f32(5, 16).astype(np.float16), "fc.weight"),  # FLOAT16, raw
        helper.make_tensor("fc.bias", TP.FLOAT16, [5], _f32(5).astype(np.float16)),  # FLOAT16, int32_data
        helper.make_tensor("proj.weight", TP.BFLOAT16, [3, 3], bf16.astype(np.float32).tolist()),  # int32_data
        numpy_helper.from_array(_f32(3).astype(ml_dtypes.bfloat16), "proj.bias"),  # BFLOAT16, raw
        helper.make_tensor("shape", TP.INT64, [2], [1, -1]),  # int64_data, a negative value
        helper.make_tensor("scale", TP.DOUBLE, [], [0.125]),  # a scalar in double_data
        numpy_helper.from_array(RNG.standard_normal(6), "double.raw"),
        helper.make_tensor("mask", TP.BOOL, [2, 3], [True, False, True, True, False, False]),
        numpy_helper.from_array(np.array([True, False, True]), "mask.raw"),
        helper.make_tensor("int8", TP.INT8, [5], [-128, -1, 0, 1, 127]),  # negative int32_data: 10-byte varints
        helper.make_tensor("uint8", TP.UINT8, [3], [0, 128, 255]),
        helper.make_tensor("int16", TP.INT16, [3], [-32768, -2, 32767]),
        helper.make_tensor("uint16", TP.UINT16, [2], [0, 65535]),
        helper.make_tensor("int32", TP.INT32, [3], [-(2 ** 31), -5, 2 ** 31 - 1]),
        numpy_helper.from_array(np.array([[1, -2], [3, 4]], np.int32), "int32.raw"),
        helper.make_tensor("uint32", TP.UINT32, [2], [0, 2 ** 32 - 1]),
        helper.make_tensor("uint64", TP.UINT64, [3], [0, 2 ** 63 + 5, 2 ** 64 - 1]),
        helper.make_tensor("complex64", TP.COMPLEX64, [2], [1 + 2j, -3.5 + 0.25j]),
        helper.make_tensor("complex128", TP.COMPLEX128, [1], [1e300 - 1j]),
        helper.make_tensor("f8e4m3", TP.FLOAT8E4M3FN, [4], [0.5, -2.0, 448.0, 0.0]),
        helper.make_tensor("f8e5m2", TP.FLOAT8E5M2, [2], [1.5, -57344.0]),
        numpy_helper.from_array(np.zeros((0, 3), np.float32), "empty"),
        helper.make_tensor("empty.typed", TP.FLOAT, [2, 0], []),
    ]


def graph_nodes() -> list[onnx.NodeProto]:
    """Conv -> Reshape -> Gemm -> MatMul -> Add -> Mul, plus a second node taking ``fc.weight`` (a tied weight)."""
    return [
        helper.make_node("Conv", ["X", "conv.weight", "conv.bias"], ["c"], name="/conv/Conv"),
        helper.make_node("Reshape", ["c", "shape"], ["r"], name="/Reshape"),
        helper.make_node("Gemm", ["r", "fc.weight", "fc.bias"], ["g"], name="/fc/Gemm", transB=1),
        helper.make_node("MatMul", ["g", "proj.weight"], ["m"], name="/proj/MatMul"),
        helper.make_node("Add", ["m", "proj.bias"], ["a"], name="/proj/Add"),
        helper.make_node("Mul", ["a", "scale"], ["Y"], name=""),
        helper.make_node("MatMul", ["Y", "fc.weight"], ["Z"], name="/tied/MatMul"),
    ]


EXPECTED_USERS = {
    "conv.weight": [("/conv/Conv", "Conv", 1)], "conv.bias": [("/conv/Conv", "Conv", 2)],
    "shape": [("/Reshape", "Reshape", 1)],
    "fc.weight": [("/fc/Gemm", "Gemm", 1), ("/tied/MatMul", "MatMul", 1)], "fc.bias": [("/fc/Gemm", "Gemm", 2)],
    "proj.weight": [("/proj/MatMul", "MatMul", 1)], "proj.bias": [("/proj/Add", "Add", 1)],
    "scale": [("", "Mul", 1)],
}


def model(tensors: list[TP] | None = None, nodes: list[onnx.NodeProto] | None = None) -> onnx.ModelProto:
    graph = helper.make_graph(graph_nodes() if nodes is None else nodes, "tiny",
                              [helper.make_tensor_value_info("X", TP.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("Z", TP.FLOAT, None)],
                              initializer=initializers() if tensors is None else tensors)
    made = helper.make_model(graph, producer_name="store-studio-tests", producer_version="1.0",
                             opset_imports=[helper.make_opsetid("", 17)])
    made.metadata_props.add(key="author", value="tests")
    return made


def write_model(path: Path) -> Path:
    onnx.save_model(model(), str(path))
    return path


def write_external(folder: Path) -> Path:
    """The model with every initializer's values in ``weights.bin`` next to it (onnx moves typed ones there too)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "external.onnx"
    onnx.save_model(model(), str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=0)
    return path


def write_torch(folder: Path) -> Path:
    """A small nn.Sequential exported by torch's ONNX exporter (the TorchScript one: it needs no onnxscript)."""
    import torch
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                              torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 5), torch.nn.Tanh(),
                              torch.nn.Linear(5, 2)).eval()
    path = folder / "torch.onnx"
    with warnings.catch_warnings():  # the TorchScript exporter's deprecation notices
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(net, (torch.randn(1, 3, 8, 8),), str(path), dynamo=False, input_names=["x"],
                          output_names=["y"], do_constant_folding=False)
    return path


# --- protobuf by hand -------------------------------------------------------------------------------------------

def varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def field(number: int, wire: int, payload: bytes | int) -> bytes:
    """One protobuf field: a varint value (wire 0), length-prefixed bytes (wire 2) or raw bytes (wire 1 and 5)."""
    key = varint(number << 3 | wire)
    if wire == 0:
        return key + varint(payload)  # type: ignore[arg-type]
    if wire == 2:
        return key + varint(len(payload)) + payload  # type: ignore[arg-type]
    return key + payload  # type: ignore[operator]


def text(number: int, value: str) -> bytes:
    return field(number, 2, value.encode())


def tensor_message(name: str, data_type: int = TP.FLOAT, dims: tuple[int, ...] = (2,),
                   raw: bytes | None = bytes(8), extra: bytes = b"") -> bytes:
    """A TensorProto: dims, data_type, name, raw_data (two F32 zeros unless given; none for None), ``extra``."""
    dims_bytes = b"".join(field(1, 0, d) for d in dims)
    return dims_bytes + field(2, 0, data_type) + text(8, name) + (b"" if raw is None else field(9, 2, raw)) + extra


def model_bytes(*graph_fields: bytes, before_graph: bytes = b"") -> bytes:
    """A ModelProto: ir_version 8, a producer name, ``before_graph``, then a graph of ``graph_fields``."""
    graph = text(2, "hand") + b"".join(graph_fields)
    return field(1, 0, 8) + text(2, "hand-written") + before_graph + field(7, 2, graph)


def initializer(message: bytes) -> bytes:
    return field(5, 2, message)
