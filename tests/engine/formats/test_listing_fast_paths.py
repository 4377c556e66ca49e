"""The quick ways of listing a file decide exactly what the careful ways decide.

Opening takes shortcuts (a bracket count before orjson, column-wise checks in C, entries built
by the Struct's ``__init__`` in C); each is checked here against the slower path it stands for,
on inputs hypothesis invents: same entries, or the same refusal in the same words.
"""

from __future__ import annotations

import json
import struct
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


@given(st.text(alphabet='[]{}"ab,:', max_size=60), st.integers(0, 3))
@SETTINGS
def test_bracket_rounds_accept_only_what_the_exact_depth_accepts(text, padding):
    raw = text.encode() + b"[]" * padding
    if safetensors._bracket_levels_at_most_3(raw):  # it may refuse more (unbalanced text), never accept more
        assert safetensors._shallow_exact(raw)


def test_a_deep_header_with_many_brackets_is_not_given_to_orjson():
    three_levels = b'{"x":[' + b"[1]," * 1200 + b"[2]]}"
    assert safetensors._shallow(b'{"a":' + b"[" * 1100 + b"]" * 1100 + b"}") is False
    assert safetensors._shallow(b'{"x":{"a":' + b"[1]," * 1200 + b"[2]]}}".replace(b"[2]]}}", b"1}}")) is True
    assert safetensors._shallow(three_levels.replace(b'{"x":', b'{"x":[', 1) + b"]") is False  # the bracket rounds
    assert safetensors._shallow(three_levels.replace(b'"x"', b'"x[["')) is True  # a bracket in a name: exact pass
    assert safetensors._shallow(b'{"a":' + b"[" * 40 + b"]" * 40 + b"}") is True  # few brackets: orjson copes,
    # and the reference path words what is not a header


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


dtype_names = st.sampled_from(["F32", "F16", "I64", "BOOL", "U8", "F8_E4M3", "C64", "X9"])
dims = st.integers(0, 5) | st.sampled_from([2**63, 2**64, -1, 1.0, True])
descriptor = st.fixed_dictionaries({"dtype": dtype_names, "shape": st.lists(dims, max_size=3),
                                    "data_offsets": st.lists(st.integers(0, 200) | st.just(2**64), min_size=2,
                                                             max_size=3)})


@st.composite
def headers(draw: st.DrawFn) -> tuple[dict, int]:
    """Mostly headers that tile their data (so files open), some with one field wrong."""
    count = draw(st.integers(0, 8))
    header: dict = {}
    position = 0
    for i in range(count):
        if draw(st.integers(0, 5)) == 0:
            header[f"bad.{i}"] = draw(descriptor)
            continue
        shape = draw(st.lists(st.integers(0, 4), max_size=3))
        kind = draw(st.sampled_from([("F32", 4), ("I64", 8), ("U8", 1), ("BOOL", 1)]))
        nbytes = kind[1]
        for d in shape:
            nbytes *= d
        header[f"layer.{i}"] = {"dtype": kind[0], "shape": shape, "data_offsets": [position, position + nbytes]}
        position += nbytes
    if draw(st.booleans()):
        header["__metadata__"] = draw(st.dictionaries(st.text(max_size=3), st.text(max_size=3) | st.integers(),
                                                      max_size=2))
    return header, position + draw(st.sampled_from([0, 0, 0, 1]))


def _listing(path) -> object:
    try:
        with open_store(path) as store:
            return [(e.name, e.dtype.name, e.shape, e.offset, e.nbytes) for e in store.entries], store.metadata
    except FormatError as exc:
        return str(exc)


@given(headers())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
def test_the_orjson_path_lists_or_refuses_as_the_reference_path_does(tmp_path, monkeypatch, case):
    header, data_size = case
    body = json.dumps(header).encode()
    path = tmp_path / "case.safetensors"
    path.write_bytes(struct.pack("<Q", len(body)) + body + bytes(data_size))
    quick = _listing(path)
    with monkeypatch.context() as patch:
        patch.setattr(safetensors, "_shallow", lambda raw: False)  # every header to the reference parser
        reference = _listing(path)
    assert quick == reference


@pytest.mark.parametrize(("body", "refusal"), [
    ('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}',
     "names 'a' twice"),
    ('{"a":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}}', "names 'dtype' twice"),
    ('{"__metadata__":{},"__metadata__":{},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}',
     "names '__metadata__' twice"),
    ('{"a:b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', None),  # a colon in a name is no repeat
])
def test_a_key_given_twice_is_refused_however_the_colons_count(tmp_path, body, refusal):
    path = tmp_path / "twice.safetensors"
    raw = body.encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0")
    if refusal is None:
        with open_store(path) as store:
            assert store.names == ["a:b"]
        return
    with pytest.raises(FormatError, match=refusal):
        open_store(path)
