"""The opcode interpreter agrees with pickle on plain data, for every protocol, and fails only
with FormatError on damaged input."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from engine.errors import FormatError
from engine.formats.pytorch.unpickler import PickleStream, load

leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(), st.binary())
data = st.recursive(leaves, lambda kids: st.one_of(
    st.lists(kids, max_size=4), st.tuples(kids, kids), st.dictionaries(st.text(max_size=5), kids, max_size=4),
    st.frozensets(st.integers(), max_size=3)), max_leaves=20)


def unpickle(raw: bytes):
    return load(PickleStream.over_bytes("x.pt", raw))


@settings(max_examples=150, deadline=None)
@given(data, st.integers(0, 5))
def test_plain_data_matches_pickle(value, protocol: int) -> None:
    raw = pickle.dumps(value, protocol=protocol)
    assert unpickle(raw) == pickle.loads(raw)


@settings(max_examples=300, deadline=None)
@given(data, st.integers(2, 5), st.data())
def test_damaged_pickles_fail_only_with_format_error(value, protocol: int, draw) -> None:
    raw = bytearray(pickle.dumps({"a": value, "b": [value]}, protocol=protocol))
    for _ in range(draw.draw(st.integers(1, 4))):
        raw[draw.draw(st.integers(0, len(raw) - 1))] = draw.draw(st.integers(0, 255))
    cut = draw.draw(st.integers(1, len(raw)))
    try:
        unpickle(bytes(raw[:cut]))
    except FormatError:
        pass


def test_python2_style_text_opcodes() -> None:
    raw = b"(dp0\nS'a'\np1\nI01\nsS'b'\np2\nL12L\nsS'c'\nF1.5\nsS'd'\n(lp3\nI1\naI2\nas."
    assert unpickle(raw) == {"a": True, "b": 12, "c": 1.5, "d": [1, 2]}


@pytest.mark.parametrize(("raw", "problem"), [
    (b"\x80\x02\x82\x01.", "extension registry"),
    (b"\x80\x05\x97.", "out-of-band buffers"),
    (b"\x80\x09N.", "protocol 9"),
    (b"\x80\x02h\x05.", "memo entry 5 was never stored"),
    (b"\x80\x02R.", "stack underflow"),
    (b"\x80\x02N}b.", "BUILD on NoneType"),
    (b"\x80\x02NNa.", "APPEND to NoneType"),
    (b"\x80\x02\xff", "unknown opcode"),
    (b"\x80\x02X\xff\xff\xff\x7f", "truncated"),
    (b"\x80\x02\x8e\xff\xff\xff\xff\xff\xff\xff\x7f", "truncated"),
    (b"\x80\x02(]\x91.", "unhashable"),
    (b"\x80\x02ccollections\nOrderedDict\nN\x85R.", "not iterable"),
    (b"\x80\x02c_codecs\nencode\nX\x01\x00\x00\x00aX\x05\x00\x00\x00rot13\x86R.", "only allowed from text to latin1"),
])
def test_malformed_pickles_say_why(raw: bytes, problem: str) -> None:
    with pytest.raises(FormatError, match=problem):
        unpickle(raw)


def test_allowed_globals_build_plain_values(tmp_path: Path) -> None:
    raw = pickle.dumps({"s": {1, 2}, "f": frozenset([3]), "sl": slice(1, 5, 2), "b": b"\x00\xff"}, protocol=2)
    assert unpickle(raw) == {"s": {1, 2}, "f": frozenset([3]), "sl": slice(1, 5, 2), "b": b"\x00\xff"}


def test_many_small_frozensets_with_equal_hashes_across_them_are_not_a_hash_flood(tmp_path):
    """Each frozenset counts its own equal hashes: 199 sets sharing the item 0 are not 199 equal keys in one."""
    import pickle

    from engine import open_store

    path = tmp_path / "sets.pt"
    path.write_bytes(pickle.dumps([frozenset({0, i}) for i in range(1, 200)], protocol=4))
    with open_store(path) as store:
        assert len(store.values) == 199 and store.values[-1] == [0, 199]


def _through_the_stream(raw: bytes):
    """The interpreter's general loop (a file-backed stream: every opcode through its handler)."""
    return load(PickleStream("x.pt", lambda offset, n: raw[offset:offset + n], 0, len(raw)))


def _outcome(read, raw: bytes) -> str:
    try:
        return "value " + repr(read(raw))
    except FormatError as exc:
        return "refused " + str(exc)


@settings(max_examples=300, deadline=None)
@given(data, st.integers(0, 5), st.data())
def test_the_in_memory_loop_decides_as_the_handlers_do(value, protocol: int, draw) -> None:
    """The loop that decodes common opcodes by index gives the same value, or the same message, as the
    handlers do, on whole and on damaged pickles (truncated anywhere, bytes changed)."""
    raw = bytearray(pickle.dumps({"a": value, "b": [value, (value,)], "c": (1, 2, 3)}, protocol=protocol))
    for _ in range(draw.draw(st.integers(0, 3))):
        raw[draw.draw(st.integers(0, len(raw) - 1))] = draw.draw(st.integers(0, 255))
    raw = bytes(raw[:draw.draw(st.integers(1, len(raw)))])
    assert _outcome(unpickle, raw) == _outcome(_through_the_stream, raw)


def test_a_state_dict_reads_the_same_through_both_loops(tmp_path: Path) -> None:
    import io
    import zipfile

    import torch
    buffer = io.BytesIO()
    torch.save({"w": torch.ones(2, 3), "b": torch.zeros(3), "n": torch.tensor(5)}, buffer)
    with zipfile.ZipFile(buffer) as archive:
        raw = archive.read(next(n for n in archive.namelist() if n.endswith("data.pkl")))
    from engine.formats.pytorch.tensors import storage_from_pid
    seen: list = []

    def storage(pid):
        seen.append(pid)
        return storage_from_pid("x.pt", pid, legacy=False)[0]

    outcomes = [load(stream, storage) for stream in
                (PickleStream.over_bytes("x.pt", raw), PickleStream("x.pt", lambda o, n: raw[o:o + n], 0, len(raw)))]
    assert repr(outcomes[0]) == repr(outcomes[1])
    assert [(name, tensor.shape) for name, tensor in outcomes[0].items()] == [("w", (2, 3)), ("b", (3,)), ("n", ())]
    assert seen[:3] == seen[3:] and len(seen) == 6
