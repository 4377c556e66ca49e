"""Integers written as text (pickle protocol 0's INT and LONG, and its memo indices) are held to the limit of the
binary LONG opcodes: without the check a 4,000-digit text integer would open, where README promises 1,024 bytes
at most. The length is checked before Python parses the text
(int() of decimal text is quadratic in its digits, and PYTHONINTMAXSTRDIGITS=0 lifts Python's own cap).

Promise (README, "Limits": integers in a pickle are at most 1,024 bytes) -> tests:
- text integers at the limit read as pickle reads them, one past is refused
  -> test_text_integers_at_the_limit_read_as_pickle_reads_them_and_one_past_is_refused
- a text integer far past the limit is refused by its length, even with Python's digit cap lifted
  -> test_a_text_integer_far_past_the_limit_is_refused_by_its_length
- a memo index written as text is held to the same limit -> test_a_memo_index_written_as_text_is_held_to_the_limit
- the limit holds in a file, streamed or read whole -> test_a_file_holding_a_text_integer_past_the_limit_is_refused
"""

from __future__ import annotations

import pickle
import sys
import zipfile
from pathlib import Path

import pytest

from engine import FormatError
from engine.formats.pytorch.unpickler import PickleStream, load
from tests.refusals import refusal

BOUND = 2**8191  # a LONG4 of 1,024 bytes holds [-BOUND, BOUND)


def int_text(value: int) -> bytes:
    return b"I" + str(value).encode() + b"\n"


def long_text(value: int) -> bytes:
    return b"L" + str(value).encode() + b"L\n"


def unpickle(raw: bytes) -> object:
    return load(PickleStream.over_bytes("x.pt", raw))


def refused(raw: bytes) -> str:
    with pytest.raises(FormatError) as info:
        unpickle(raw)
    return str(info.value)


def message(characters: int) -> str:
    return (f"x.pt: the pickle holds an integer written as {characters} characters of text, over the limit of 1024 "
            "bytes (no weights file needs one)")


@pytest.mark.parametrize("opcode", [int_text, long_text])
def test_text_integers_at_the_limit_read_as_pickle_reads_them_and_one_past_is_refused(opcode) -> None:
    for value in (BOUND - 1, -BOUND):  # -BOUND is the widest text: the sign and 2,466 digits
        raw = opcode(value) + b"."
        assert unpickle(raw) == pickle.loads(raw) == value
    for value in (BOUND, -BOUND - 1):
        digits = len(str(value))
        assert refused(opcode(value) + b".") == message(digits)


def test_a_text_integer_far_past_the_limit_is_refused_by_its_length() -> None:
    assert refused(b"I" + b"7" * 5_000 + b"\n.") == message(5_000)  # not Python's own "Exceeds the limit"
    cap = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # Python's own cap lifted: only the reader's limit stands
    try:
        assert refused(b"I" + b"7" * 200_000 + b"\n.") == message(200_000)
        assert refused(b"I-" + b"7" * 3_000 + b"\n.") == message(3_001)
    finally:
        sys.set_int_max_str_digits(cap)


def test_a_memo_index_written_as_text_is_held_to_the_limit() -> None:
    assert unpickle(b"I5\np" + str(BOUND - 1).encode() + b"\n0g" + str(BOUND - 1).encode() + b"\n.") == 5
    index = str(BOUND).encode()
    assert refused(b"I5\np" + index + b"\n.") == message(len(index))
    assert refused(b"I5\np0\n0g" + index + b"\n.") == message(len(index))


def test_a_file_holding_a_text_integer_past_the_limit_is_refused(tmp_path: Path) -> None:
    data = b"\x80\x02}(X\x01\x00\x00\x00aL" + b"9" * 4000 + b"L\nu."
    streamed = tmp_path / "a.pt"
    streamed.write_bytes(data)
    whole = tmp_path / "b.pt"
    with zipfile.ZipFile(whole, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("b/data.pkl", data)
        archive.writestr("b/version", "3\n")
    assert refusal(streamed) == ("a.pt: the pickle holds an integer written as 4000 characters of text, over the "
                                 "limit of 1024 bytes (no weights file needs one)")
    assert refusal(whole) == ("b.pt: data.pkl holds an integer written as 4000 characters of text, over the limit "
                              "of 1024 bytes (no weights file needs one)")
