"""Hypothesis-built headers and tensor views: whatever they say, readers answer with data or a FormatError.

The mutation fuzzer starts from real files; these strategies reach what mutation rarely does:
wholly invented descriptors, every dtype spelling, huge and negative numbers, many dimensions,
and (for PyTorch) views whose offset, size and stride disagree with their storage.
"""

from __future__ import annotations

import json
import struct
import tempfile
from pathlib import Path

import cbor2
import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from engine import open_store
from tests.helpers.hard_fuzzing import check_input, pytorch_helpers, to_json

SETTINGS = settings(max_examples=150, deadline=None,  # derandomized in CI by the profile in tests/conftest.py
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

HUGE = st.sampled_from([2**31, 2**32, 2**53, 2**62, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 10**30])
SMALL = st.integers(0, 16)
plain = st.recursive(st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=6),
                     lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                     max_leaves=8)
shapes = st.lists(SMALL | HUGE, max_size=5) | st.lists(st.just(1), min_size=60, max_size=70) | plain
offsets = st.lists(st.integers(-2, 3000) | HUGE, min_size=2, max_size=2) | plain


def descriptors(dtypes: st.SearchStrategy) -> st.SearchStrategy:
    return st.fixed_dictionaries({"dtype": dtypes | plain, "shape": shapes, "data_offsets": offsets}) | plain


def consistent(spellings: dict, data_len: int) -> st.SearchStrategy:
    """Descriptors that agree with their dtype and lie inside the data, so reads really happen."""
    @st.composite
    def build(draw: st.DrawFn) -> dict:
        spelling, size = draw(st.sampled_from(sorted(spellings.items(), key=str)))
        shape = draw(st.lists(st.integers(0, 4), max_size=3))
        nbytes = size * int(np.prod(shape)) if shape else size
        start = draw(st.integers(0, max(0, data_len - nbytes)))
        return {"dtype": json.loads(spelling), "shape": shape, "data_offsets": [start, start + nbytes]}
    return build()


BURN_DTYPES = {'"F32"': 4, '"F16"': 2, '"BF16"': 2, '"I64"': 8, '"U8"': 1, '"Bool"': 1, '"Flex32"': 4,
               '{"Bool": "U32"}': 4, '{"Bool": "Native"}': 1, '{"QFloat": {"value": "Q8S"}}': 1}
ST_DTYPES = {'"F32"': 4, '"F64"': 8, '"BF16"': 2, '"BOOL"': 1, '"I8"': 1, '"F8_E4M3"': 1, '"F8_E8M0"': 1,
             '"C64"': 8, '"U64"': 8}


def check_bytes(content: bytes, suffix: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"case{suffix}"
        path.write_bytes(content)
        event(check_input(path))  # --hypothesis-show-statistics: how many cases read data, not just refused


@SETTINGS
@given(tensors=st.dictionaries(st.text(max_size=8), descriptors(st.sampled_from([json.loads(d) for d in BURN_DTYPES]))
                               | consistent(BURN_DTYPES, 512), max_size=5),
       extra=st.dictionaries(st.sampled_from(["metadata", "scalars"]), plain, max_size=2),
       data=st.binary(max_size=512))
def test_invented_burnpack_headers_read_or_raise_format_error(tensors: dict, extra: dict, data: bytes) -> None:
    meta = cbor2.dumps({"tensors": tensors, **extra})
    head = b"NRUB" + struct.pack("<HI", 1, len(meta)) + meta
    check_bytes(head + bytes(-len(head) % 256) + data, ".bpk")


@SETTINGS
@given(tensors=st.dictionaries(st.text(max_size=8), descriptors(st.sampled_from([json.loads(d) for d in ST_DTYPES]))
                               | consistent(ST_DTYPES, 256), max_size=5),
       metadata=st.none() | plain, data=st.binary(max_size=256))
def test_invented_safetensors_headers_read_or_raise_format_error(tensors: dict, metadata: object, data: bytes) -> None:
    header = {**({"__metadata__": metadata} if metadata is not None else {}), **tensors}
    text = to_json(header).encode()
    check_bytes(struct.pack("<Q", len(text)) + text + data, ".safetensors")


@st.composite
def views(draw: st.DrawFn) -> tuple[int, int, int, tuple, tuple]:
    """(storage numel, elements stored, offset, size, stride): mostly plausible, sometimes forged."""
    ndim = draw(st.integers(0, 3) | st.just(5))
    small = st.integers(0, 4)
    size = tuple(draw(st.lists(small | st.sampled_from([2**31, 2**62]), min_size=ndim, max_size=ndim)))
    stride = tuple(draw(st.lists(st.integers(0, 6) | st.sampled_from([-1, 2**40, 2**62]), min_size=ndim,
                                 max_size=ndim)))
    if draw(st.integers(0, 9)) == 0:  # a mismatched stride list
        stride = stride + (1,)
    numel = draw(st.integers(0, 40))
    stored = draw(st.just(numel) | st.integers(0, 40))
    offset = draw(st.integers(0, 8) | st.sampled_from([-1, 39, 2**62]))
    return numel, stored, offset, size, stride


@SETTINGS
@given(view=views(), layout=st.sampled_from(["zip", "legacy"]))
def test_forged_pytorch_views_read_only_their_storage_or_raise_format_error(view: tuple, layout: str) -> None:
    """A view that is read must hold exactly the storage elements its offset and strides name."""
    helpers = pytorch_helpers()
    numel, stored, offset, size, stride = view
    values = np.arange(1, stored + 1, dtype="<f4")
    view = helpers.Tensor(helpers.Storage("0", numel), offset, size, stride)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "case.pt"
        if layout == "zip":
            helpers.zip_checkpoint(path, {"t": view}, {"0": values.tobytes()})
        else:
            helpers.legacy_checkpoint(path, {"t": view}, {"0": (stored, values.tobytes())})
        outcome = check_input(path)
        event(outcome)
        if outcome == "clean":
            with open_store(path) as store:
                got = store.read("t")
            for index in np.ndindex(got.shape) if got.size else ():
                element = offset + sum(i * s for i, s in zip(index, stride))
                assert 0 <= element < min(numel, stored), f"{index} reads element {element} of {min(numel, stored)}"
                assert got[index] == values[element]
