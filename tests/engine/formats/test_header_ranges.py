"""The shared header checks of engine/formats/mapped.py (``entries_from_columns`` and ``validate_ranges``), exactly:
every check there is a quick whole-column pass, with a slow pass for the message only when
one fails, so a quick pass that accepts too much, or hands the slow one the wrong value, is seen only in a file
built to slip through it. Each test opens a real file laid out by hand (CBOR by cbor2, JSON by json).

Promises (README, "Limits": Burnpack has Burn's own limits, 10 GiB per tensor; "Hostile and changing files":
every bad file ends in one line naming the file and the problem; "Remote files and the Hugging Face Hub": a
conversion streams the tensors in file order, which is the entries' order) -> tests:
- a dense tensor whose bytes do not fit its dtype x shape is refused even beside a quantized one (whose size is
  taken as stated) -> test_a_dense_tensor_of_the_wrong_size_is_refused_beside_a_quantized_one,
  test_a_quantized_tensor_of_the_right_size_beside_a_dense_one_opens
- a quantized tensor over the 10 GiB limit is refused by the limit, in those words
  -> test_a_quantized_tensor_over_the_limit_is_refused_by_the_limit
- exactly 10 GiB is within the limit: the refusal names the tensor over it, not one at it listed first
  -> test_the_tensor_over_the_limit_is_named_not_one_exactly_at_it
- entries come in data order (by start, then end: an empty tensor at a start before the one that begins there)
  whatever order the header lists them in -> test_entries_come_in_data_order_however_the_header_lists_them
- Burnpack tensors may not overlap, the third with the second as well as the second with the first
  -> test_an_overlap_past_the_second_burnpack_tensor_is_refused_naming_both
- a SafeTensors buffer is tiled from its first byte: a gap before the first tensor is refused
  -> test_a_gap_before_the_first_safetensors_tensor_is_refused
- from 2,048 tensors (the bulk check) a range past 2**63 is refused as past the end, like any other
  -> test_a_range_past_2_63_among_two_thousand_tensors_is_past_the_end
- from 2,048 tensors on the ranges are checked in bulk, with the verdicts and order of a few (each case at 3 and
  at 2,048 tensors): -> test_many_burnpack_tensors_listed_backwards_open_in_data_order,
  test_many_burnpack_tensors_are_refused_as_a_few_are (an overlap past the first tensor, a range past the end),
  test_many_safetensors_ranges_are_refused_as_a_few_are (a gap before the first, a gap between every two, every
  range after the first starting where it ends, a range past the end after empty ones)
"""

from __future__ import annotations

import pytest

from engine import open_store
from tests.helpers.formats_burnpack_files import burn_file, write
from tests.helpers.formats_quantized_files import f32, gen1, i8
from tests.helpers.formats_safetensors_files import write as safetensors_file
from tests.refusals import refusal

LIMIT = 10 << 30  # Burnpack's bytes per tensor (burnpack.MAX_TENSOR_BYTES), spelled here as the README gives it


def quantized(start: int, end: int) -> dict:
    """Four Q8S values packed in a u32 and their F32 scale: 8 bytes (the size is taken as the range states)."""
    return {"dtype": {"QFloat": gen1()}, "shape": [4], "data_offsets": [start, end]}


def test_a_dense_tensor_of_the_wrong_size_is_refused_beside_a_quantized_one(tmp_path) -> None:
    """A quantized dtype has no bit width, so the sizes are compared one by one, the dense ones still checked."""
    tensors = {"q": quantized(0, 8), "w": {"dtype": "F32", "shape": [2], "data_offsets": [8, 12]}}
    path = write(tmp_path, burn_file(tensors, i8(1, 2, 3, 4) + f32(0.5) + f32(1.0)))
    assert refusal(path) == "m.bpk: tensor 'w' has 4 bytes but F32 x [2] needs 8"


def test_a_quantized_tensor_of_the_right_size_beside_a_dense_one_opens(tmp_path) -> None:
    """The same file with the dense tensor whole: the check above is about the size, not the mix of dtypes."""
    tensors = {"q": quantized(0, 8), "w": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}}
    with open_store(write(tmp_path, burn_file(tensors, i8(1, 2, 3, 4) + f32(0.5) + f32(1.0, 2.0)))) as store:
        assert [(e.name, e.nbytes) for e in store.entries] == [("q", 8), ("w", 8)]
        assert store.read("w").tolist() == [1.0, 2.0]


@pytest.mark.parametrize("over", [1, 4, 8], ids=["1 byte", "4 bytes", "8 bytes"])
def test_a_quantized_tensor_over_the_limit_is_refused_by_the_limit(tmp_path, over) -> None:
    """Its size in bits is its bytes x 8 (whole bytes, whatever the remainder of the byte count)."""
    size = LIMIT + over
    path = write(tmp_path, burn_file({"q": quantized(0, size)}, bytes(8)))
    assert refusal(path) == f"m.bpk: tensor 'q' spans {size} bytes, over the limit of 10 GiB per tensor"


def test_the_tensor_over_the_limit_is_named_not_one_exactly_at_it(tmp_path) -> None:
    """'exact' (10 GiB, within the limit) is listed first; neither needs its bytes present to be judged."""
    tensors = {"exact": {"dtype": "U8", "shape": [LIMIT], "data_offsets": [0, LIMIT]},
               "over": {"dtype": "U8", "shape": [LIMIT + 1], "data_offsets": [0, LIMIT + 1]}}
    path = write(tmp_path, burn_file(tensors, bytes(8)))
    assert refusal(path) == f"m.bpk: tensor 'over' spans {LIMIT + 1} bytes, over the limit of 10 GiB per tensor"


def test_entries_come_in_data_order_however_the_header_lists_them(tmp_path) -> None:
    """Listed 'tail' (empty, at 8), 'a' (0..8), 'head' (empty, at 0): in data order 'head' comes first (it starts
    where 'a' does but ends before it), then 'a', then 'tail' (it ends where 'a' does but starts after it)."""
    tensors = {"tail": {"dtype": "F32", "shape": [0], "data_offsets": [8, 8]},
               "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
               "head": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}}
    with open_store(write(tmp_path, burn_file(tensors, f32(1.5, -2.0)))) as store:
        assert [e.name for e in store.entries] == ["head", "a", "tail"]
        assert store.read("a").tolist() == [1.5, -2.0] and store.read("tail").shape == (0,)


def test_an_overlap_past_the_second_burnpack_tensor_is_refused_naming_both(tmp_path) -> None:
    tensors = {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
               "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]},
               "c": {"dtype": "F32", "shape": [2], "data_offsets": [12, 20]}}
    path = write(tmp_path, burn_file(tensors, bytes(20)))
    assert refusal(path) == "m.bpk: tensors 'b' and 'c' overlap (at byte 12)"


@pytest.mark.parametrize("gap", [1, 4])
def test_a_gap_before_the_first_safetensors_tensor_is_refused(tmp_path, gap) -> None:
    """The rest tiles (each starts where the one before it ends, the last at the buffer's end): only the start
    is wrong."""
    header = {"a": {"dtype": "U8", "shape": [4], "data_offsets": [gap, gap + 4]},
              "b": {"dtype": "U8", "shape": [2], "data_offsets": [gap + 4, gap + 6]}}
    path = safetensors_file(tmp_path, header, bytes(gap + 6))
    words = f"tensor 'a' leaves a gap before the previous tensor (starts at {gap}, expected 0)"
    assert refusal(path) == f"m.safetensors: {words}"


def test_a_range_past_2_63_among_two_thousand_tensors_is_past_the_end(tmp_path) -> None:
    """2,048 one-byte tensors back to back, and one 4-byte tensor at 2**63 (CBOR holds it; a numpy int64 does not)."""
    tensors = {f"t{i:04d}": {"dtype": "U8", "shape": [1], "data_offsets": [i, i + 1]} for i in range(2048)}
    tensors["far"] = {"dtype": "U8", "shape": [4], "data_offsets": [2**63, 2**63 + 4]}
    path = write(tmp_path, burn_file(tensors, bytes(2048)))
    assert refusal(path) == f"m.bpk: file is truncated or its header is wrong: tensor 'far' ends at byte {2**63 + 4}, past the end of the data (2048 bytes)"


COUNTS = [3, 2048]  # the Python check, and the bulk one (mapped.BULK)


def one_byte_each(count: int, *, empty: int = 0) -> dict:
    """``count`` U8 tensors of one byte each at 0, 2, 4, ... (a gap after each), and ``empty`` empty ones."""
    tensors = {f"t{i:04d}": {"dtype": "U8", "shape": [1], "data_offsets": [2 * i, 2 * i + 1]} for i in range(count)}
    tensors.update({f"e{i:04d}": {"dtype": "U8", "shape": [0], "data_offsets": [2 * i, 2 * i]} for i in range(empty)})
    return tensors


@pytest.mark.parametrize("count", COUNTS)
def test_many_burnpack_tensors_listed_backwards_open_in_data_order(tmp_path, count) -> None:
    """One-byte tensors with gaps (Burn aligns), empty ones at the same starts, all listed last first."""
    tensors = dict(reversed(one_byte_each(count, empty=count).items()))
    path = write(tmp_path, burn_file(tensors, bytes(range(256)) * (2 * count // 256 + 1)))
    with open_store(path) as store:
        names = [e.name for e in store.entries]
        assert names == [n for i in range(count) for n in (f"e{i:04d}", f"t{i:04d}")]
        assert [store.read(f"t{i:04d}").tolist() for i in (0, 1, count - 1)] == [[0], [2], [(2 * count - 2) % 256]]


def u8(start: int, end: int) -> dict:
    return {"dtype": "U8", "shape": [end - start], "data_offsets": [start, end]}


def back_to_back(count: int) -> dict:
    return {f"t{i:04d}": u8(i, i + 1) for i in range(count)}


@pytest.mark.parametrize("count", COUNTS)
@pytest.mark.parametrize("case", ["overlap past the first", "past the end"])
def test_many_burnpack_tensors_are_refused_as_a_few_are(tmp_path, case, count) -> None:
    """Back to back one-byte tensors; the last one spoiled: two bytes from the one before it, or one byte short."""
    tensors, last, before = back_to_back(count), f"t{count - 1:04d}", f"t{count - 2:04d}"
    if case == "overlap past the first":
        tensors[last] = u8(count - 2, count)
        words = f"tensors {before!r} and {last!r} overlap (at byte {count - 2})"
    else:
        words = f"file is truncated or its header is wrong: tensor {last!r} ends at byte {count}, past the end of the data ({count - 1} bytes)"
    size = count if case == "overlap past the first" else count - 1
    assert refusal(write(tmp_path, burn_file(tensors, bytes(size)))) == f"m.bpk: {words}"


def spoiled_safetensors(case: str, count: int) -> tuple[dict, int, str]:
    """``count`` tensors, their buffer's size and the refusal, for each way a tiling can go wrong."""
    if case.startswith("gap of"):
        gap = int(case.split()[-1])
        header = {f"t{i:04d}": u8(gap + i, gap + i + 1) for i in range(count)}
        words = f"tensor 't0000' leaves a gap before the previous tensor (starts at {gap}, expected 0)"
        return header, gap + count, words
    if case == "gap after each":
        header = {f"t{i:04d}": u8(2 * i, 2 * i + 1) for i in range(count)}
        return header, 2 * count - 1, "tensor 't0001' leaves a gap before the previous tensor (starts at 2, expected 1)"
    if case == "all start where the first ends":
        header = {"t0000": u8(0, 1), **{f"t{i:04d}": u8(1, 2) for i in range(1, count)}}
        return header, 2, "tensor 't0002' overlaps the previous tensor (starts at 1, expected 2)"
    last = f"t{count - 1:04d}"  # past the end, after empty tensors at the end of the buffer
    header = {"t0000": u8(0, 1), "t0001": u8(1, 2), **{f"t{i:04d}": u8(2, 2) for i in range(2, count - 1)},
              last: u8(2, 4)}
    return header, 2, f"file is truncated or its header is wrong: tensor {last!r} ends at byte 4, past the end of the data (2 bytes)"


@pytest.mark.parametrize("count", COUNTS)
@pytest.mark.parametrize("case", ["gap of 1", "gap of 4", "gap after each", "all start where the first ends",
                                  "past the end after empty ones"])
def test_many_safetensors_ranges_are_refused_as_a_few_are(tmp_path, case, count) -> None:
    """Each spoils the tiling in one way only (the rest would pass the quick check): the precise pass names it."""
    header, size, words = spoiled_safetensors(case, count)
    path = safetensors_file(tmp_path, header, bytes(size))
    assert refusal(path) == f"m.safetensors: {words}"
