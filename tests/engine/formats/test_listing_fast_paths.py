"""The quick ways of listing a file decide exactly what the careful ways decide.

Opening takes shortcuts (msgspec's typed parse, column-wise checks in C, entries built
by the Struct's ``__init__`` in C); each is checked here against the slower path it stands for,
on inputs hypothesis invents: same entries, or the same refusal in the same words.
"""

from __future__ import annotations

import itertools
import json
import struct
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from engine import dtypes
from engine.errors import FormatError
from engine.formats import open_store
from engine.formats import mapped, safetensors
from engine.store import TensorEntry, make_entries

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


ranges = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), min_size=1, max_size=12)


@given(ranges, st.integers(0, 60), st.booleans())
@SETTINGS
def test_few_ranges_are_judged_as_the_precise_pass_judges_them(pairs, buffer_size, contiguous):
    names = [f"t{i}" for i in range(len(pairs))]
    starts, ends = [p[0] for p in pairs], [p[1] for p in pairs]
    try:
        expected = mapped._explain_ranges("f", list(zip(names, starts, ends)), buffer_size, contiguous=contiguous)
    except FormatError as exc:
        with pytest.raises(FormatError) as got:
            mapped.validate_ranges("f", names, starts, ends, buffer_size, contiguous=contiguous)
        assert str(got.value) == str(exc)
        return
    assert mapped.validate_ranges("f", names, starts, ends, buffer_size, contiguous=contiguous) == expected


def test_an_entry_built_from_columns_is_a_plain_frozen_entry():
    f32 = dtypes.from_safetensors("F32")
    built = make_entries(["a"], [f32], [(2, 3)], [24], [7], [100])[0]
    made = TensorEntry("a", f32, (2, 3), 24, 7, 100)
    assert type(built) is TensorEntry
    assert built == made and hash(built) == hash(made) and repr(built) == repr(made)
    assert replace(built, name="b") == TensorEntry("b", f32, (2, 3), 24, 7, 100)
    with pytest.raises(AttributeError):  # frozen
        built.name = "c"  # type: ignore[misc]


@given(ranges, st.integers(0, 60))
@SETTINGS
def test_ranges_that_tile_as_listed_are_what_the_general_check_accepts_in_that_order(pairs, buffer_size):
    starts, ends = [s for s, _ in pairs], [e for _, e in pairs]
    if mapped._tiles_in_order(starts, ends, buffer_size):
        names = [f"t{i}" for i in range(len(pairs))]
        assert mapped.validate_ranges("f", names, starts, ends, buffer_size, contiguous=True) == list(range(len(pairs)))


@given(st.lists(st.integers(0, 3), min_size=1, max_size=8))
@SETTINGS
def test_sizes_laid_end_to_end_tile_as_listed(sizes):
    ends = list(itertools.accumulate(sizes))
    assert mapped._tiles_in_order([0, *ends[:-1]], ends, ends[-1])


dtype_names = st.sampled_from(["F32", "F16", "I64", "BOOL", "U8", "F8_E4M3", "C64", "X9"])
dims = st.integers(0, 5) | st.sampled_from([2**63, 2**64, -1, 1.0, True])
descriptor = st.fixed_dictionaries({"dtype": dtype_names, "shape": st.lists(dims, max_size=3),
                                    "data_offsets": st.lists(st.integers(0, 200) | st.just(2**64), min_size=2,
                                                             max_size=3)},
                                   optional={"param_id": st.integers(0, 2**64) | st.just([[1]])})


@st.composite
def headers(draw: st.DrawFn) -> tuple[dict, int]:
    """Mostly headers that tile their data (so files open), some with one field wrong."""
    count = draw(st.integers(0, 8))
    header: dict = {}
    position = 0
    for i in range(count):
        if draw(st.integers(0, 5)) == 0:
            bad = header[f"bad.{i}"] = draw(descriptor)
            if draw(st.booleans()):  # a field missing
                del bad[draw(st.sampled_from(["dtype", "shape", "data_offsets"]))]
            continue
        shape = draw(st.lists(st.integers(0, 4), max_size=3))
        kind = draw(st.sampled_from([("F32", 4), ("I64", 8), ("U8", 1), ("BOOL", 1)]))
        nbytes = kind[1]
        for d in shape:
            nbytes *= d
        header[f"layer.{i}"] = {"dtype": kind[0], "shape": shape, "data_offsets": [position, position + nbytes]}
        if draw(st.integers(0, 3)) == 0:  # Burn's own field, which both paths skip
            header[f"layer.{i}"]["param_id"] = draw(st.integers(0, 2**64 - 1))
        position += nbytes
    if draw(st.booleans()):
        header["__metadata__"] = draw(st.dictionaries(st.text(max_size=3), st.text(max_size=3) | st.integers() | st.just({"shape": "x"}),
                                                      max_size=2))
    return header, position + draw(st.sampled_from([0, 0, 0, 1]))


def _not_fast(*args: object) -> None:
    raise safetensors._NotFast


def _listing(path) -> object:
    try:
        with open_store(path) as store:
            return [(e.name, e.dtype.name, e.shape, e.offset, e.nbytes) for e in store.entries], store.metadata
    except FormatError as exc:
        return str(exc)


@given(headers())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
def test_the_msgspec_path_lists_or_refuses_as_the_reference_path_does(tmp_path, monkeypatch, case):
    header, data_size = case
    body = json.dumps(header).encode()
    path = tmp_path / "case.safetensors"
    path.write_bytes(struct.pack("<Q", len(body)) + body + bytes(data_size))
    quick = _listing(path)
    with monkeypatch.context() as patch:
        patch.setattr(safetensors, "_parse_fast", _not_fast)  # every header to the reference parser
        reference = _listing(path)
    assert quick == reference


@pytest.mark.parametrize(("body", "refusal"), [
    ('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}',
     "names 'a' twice"),
    ('{"a":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}}', "names 'dtype' twice"),
    ('{"__metadata__":{},"__metadata__":{},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}',
     "names '__metadata__' twice"),
    ('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"param_id":5,"shape":[1]}}', "names 'shape' twice"),
    ('{"__metadata__":{"k":"x","k":"y"},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', None),  # as json does
    ('{"a:b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', None),  # a colon in a name is no repeat
])
def test_a_key_given_twice_is_refused_however_the_colons_count(tmp_path, body, refusal):
    path = tmp_path / "twice.safetensors"
    raw = body.encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0")
    if refusal is None:
        with open_store(path) as store:
            assert store.names == [json.loads(body).popitem()[0]]
            assert store.metadata == json.loads(body).get("__metadata__", {})  # a repeated metadata key: the last
        return
    with pytest.raises(FormatError, match=refusal):
        open_store(path)


def test_a_deep_unknown_field_is_refused_on_a_small_thread_stack_not_a_crash(tmp_path):
    """msgspec skips an unknown field without building it, but still counts its depth against Python's
    recursion limit: 100,000 levels on a worker thread's 256 KiB stack are a refusal, not a crash."""
    deep = b"[" * 100_000 + b"]" * 100_000
    raw = b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"param_id":' + deep + b"}}"
    path = tmp_path / "deep.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0")
    outcome: list[object] = []

    def open_it() -> None:
        outcome.append(_listing(path))

    previous = threading.stack_size(256 * 1024)
    try:
        worker = threading.Thread(target=open_it)
        worker.start()
        worker.join()
    finally:
        threading.stack_size(previous)
    assert outcome == ["deep.safetensors: header is nested deeper than 64 levels (100002 levels)"]


@pytest.mark.parametrize("text", [b'"\xff"', b'"\xed\xa0\x80"', b'"\xc0\x80"'])
def test_an_unknown_field_that_is_not_utf8_is_refused_as_the_reference_path_refuses_it(tmp_path, monkeypatch, text):
    """msgspec skips an unknown field's text without decoding it: the fast path must not accept it unread."""
    raw = b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"param_id":' + text + b"}}"
    path = tmp_path / "text.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0")
    quick = _listing(path)
    monkeypatch.setattr(safetensors, "_parse_fast", _not_fast)
    assert quick == _listing(path)
    assert "is not valid UTF-8" in quick


@given(headers(), st.randoms(use_true_random=False))
@SETTINGS
def test_entries_built_as_written_are_the_column_checks_entries(case, rng):
    """The few-pass build takes only headers the column checks accept, with the same entries."""
    header, data_size = case
    header.pop("__metadata__", None)
    items = list(header.items())
    if rng.random() < 0.3:  # ranges not listed in data order: left to the column checks
        rng.shuffle(items)
    raw = json.dumps(dict(items)).encode()
    try:
        decoded = safetensors._HEADER.decode(raw)
    except Exception:  # a value msgspec refuses goes to the reference path before either build
        return
    names, descriptors = list(decoded), list(decoded.values())
    quick = safetensors._entries_as_written(names, descriptors, 100, data_size)
    try:
        full = safetensors._entries_in_columns("f", names, descriptors, 100, data_size)
    except safetensors._NotFast:
        assert quick is None
        return
    if full and [e.name for e in full] == names and all(e.nbytes for e in full):  # in data order, none empty
        assert quick == full
    else:
        assert quick is None


def test_a_header_of_35615_bytes_is_safetensors_not_a_gzip(tmp_path):
    """Such a header's length starts with gzip's two magic bytes (1f 8b); the safetensors library reads it."""
    from safetensors import safe_open
    body = {"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "__metadata__": {"pad": ""}}
    pad = 0x8B1F - len(json.dumps(body, separators=(",", ":")))
    body["__metadata__"]["pad"] = "x" * pad
    raw = json.dumps(body, separators=(",", ":")).encode()
    path = tmp_path / "gzip_like.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + struct.pack("<2f", 1.5, -2.0))
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    with safe_open(path, "np") as reference:
        assert list(reference.keys()) == ["w"]
    with open_store(path) as store:
        assert (store.format, store.names, store.read("w").tolist()) == ("safetensors", ["w"], [1.5, -2.0])


def test_a_header_length_over_the_limit_is_still_refused_by_the_safetensors_reader(tmp_path):
    raw = b'{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'
    path = tmp_path / "long.safetensors"
    path.write_bytes(struct.pack("<Q", 100_000_001) + raw + b"\0")
    with pytest.raises(FormatError, match="header claims 100000001 bytes, over the limit of 100000000"):
        open_store(path)


@pytest.mark.parametrize(("names", "refusal"), [
    (["a", "b", "a"], "tensor name 'a' appears twice"),
    (["a", "\ud800"], "tensor name '\\\\ud800' holds a lone surrogate"),
])
def test_a_name_index_built_at_the_first_lookup_refuses_what_one_built_at_open_refuses(names, refusal):
    from engine.store import Store
    f32 = dtypes.from_safetensors("F32")
    entries = [TensorEntry(name, f32, (1,), 4) for name in names]
    with pytest.raises(FormatError, match=refusal):
        Store("m.safetensors", entries)
    lazy = Store("m.safetensors", entries, names_checked=True)  # the format vouched, wrongly: the index still says
    assert lazy.names == names
    with pytest.raises(FormatError, match=refusal):
        lazy.entry("a")
    with pytest.raises(FormatError, match=refusal):
        "b" in lazy  # noqa: B015


def test_a_safetensors_store_finds_its_tensors_by_name_without_an_index_made_at_open(tmp_path):
    path = tmp_path / "two.safetensors"
    raw = b'{"b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}'
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\x07\x08\x09")
    with open_store(path) as store:
        assert store._index is None
        assert store.read("a").tolist() == [8, 9] and "b" in store and "c" not in store
        with pytest.raises(KeyError, match="two.safetensors has no tensor 'c'"):
            store.entry("c")


@pytest.mark.parametrize("repeat", [True, False])
def test_a_name_given_twice_in_a_long_header_is_refused(tmp_path, repeat):
    """200 tensors, then the first one's name again: the colon count finds the repeat past the first kilobytes."""
    tensors = "".join(f'"t{i}":{{"dtype":"U8","shape":[1],"data_offsets":[{i},{i + 1}]}},' for i in range(200))
    last = '"t0"' if repeat else '"t200"'
    raw = ("{" + tensors + last + ':{"dtype":"U8","shape":[1],"data_offsets":[200,201]}}').encode()
    assert len(raw) > 4096
    path = tmp_path / "long.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(201))
    if repeat:
        with pytest.raises(FormatError, match="header names 't0' twice"):
            open_store(path)
    else:
        with open_store(path) as store:
            assert len(store) == 201 and store.entries[-1].offset == 8 + len(raw) + 200


def test_metadata_naming_a_dtype_field_lists_as_the_reference_path_lists_it(tmp_path, monkeypatch):
    """``__metadata__`` is decoded as a descriptor too: text under "dtype" that is no dtype's name is not
    refused, the reference path reads the header instead."""
    raw = b'{"__metadata__":{"dtype":"bfloat16"},"w":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}'
    path = tmp_path / "meta.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(4))
    quick = _listing(path)
    monkeypatch.setattr(safetensors, "_parse_fast", _not_fast)
    assert quick == _listing(path) == ([("w", "F16", (2,), 8 + len(raw), 4)], {"dtype": "bfloat16"})
