"""Burnpack's CBOR (engine/formats/cbor.py) byte for byte: what ciborium writes, what Burn's reader refuses.

A Burnpack round trip is byte-exact only if every head and float is the shortest one, as ciborium writes it; the
expected bytes are RFC 8949's (checked against cbor2's canonical encoder, which writes the same shortest forms).
Decoding refuses what Burn never writes, each with its own words.

Promises (README "Formats", Burnpack):
- a Burnpack's metadata is written as Burn writes it (shortest heads and floats, definite lengths) ->
  here::test_integer_heads_are_the_shortest_at_every_boundary, here::test_floats_take_the_shortest_width_that_keeps_them,
  here::test_containers_and_text_are_definite_length_in_order
- metadata nested deeper than Burn's 128 levels, tagged values, bignums and value sharing are refused ->
  here::test_nesting_is_refused_past_128_levels, here::test_what_burn_never_writes_is_refused_in_words,
  here::test_a_bignum_listed_before_plain_values_still_refuses_the_file
"""

from __future__ import annotations

import math
import struct
from pathlib import Path

import cbor2
import pytest

from engine.formats import cbor
from tests.refusals import refusal

HEADS = [(0, "00"), (23, "17"), (24, "1818"), (255, "18ff"), (256, "190100"), (65535, "19ffff"),
         (65536, "1a00010000"), (2**32 - 1, "1affffffff"), (2**32, "1b0000000100000000"),
         (2**64 - 1, "1bffffffffffffffff"), (-1, "20"), (-24, "37"), (-25, "3818"), (-256, "38ff"),
         (-257, "390100"), (-65537, "3a00010000"), (-2**32 - 1, "3b0000000100000000"),
         (-2**64, "3bffffffffffffffff")]


@pytest.mark.parametrize(("value", "expected"), HEADS, ids=[str(v) for v, _ in HEADS])
def test_integer_heads_are_the_shortest_at_every_boundary(value, expected):
    assert cbor.encode(value).hex() == expected
    assert cbor.encode(value) == cbor2.dumps(value)
    assert cbor.decode(cbor.encode(value)) == value


FLOATS = [(0.0, "f90000"), (1.5, "f93e00"), (-2.0, "f9c000"), (65504.0, "f97bff"), (2**-24, "f90001"),
          (float("inf"), "f97c00"), (float("-inf"), "f9fc00"), (65520.0, "fa477ff000"), (100000.0, "fa47c35000"),
          (2**-25, "fa33000000"), (3.4028234663852886e38, "fa7f7fffff"), (1e300, "fb7e37e43c8800759c"),
          (0.1, "fb3fb999999999999a"), (1 / 3, "fb3fd5555555555555")]


@pytest.mark.parametrize(("value", "expected"), FLOATS, ids=[repr(v) for v, _ in FLOATS])
def test_floats_take_the_shortest_width_that_keeps_them(value, expected):
    assert cbor.encode(value).hex() == expected
    assert cbor.encode(value) == cbor2.dumps(value, canonical=True)
    assert cbor.decode(cbor.encode(value)) == value


def test_nan_is_the_half_width_quiet_nan():
    assert cbor.encode(float("nan")).hex() == "f97e00"
    assert math.isnan(cbor.decode(cbor.encode(float("nan"))))


def test_containers_and_text_are_definite_length_in_order():
    value = {"b": [True, False, None], "a": ("x" * 24).encode(), "é": {"n": -1, "t": (1, 2.5)}}
    expected = ("a3" "6162" "83f5f4f6" "6161" "5818" + "78" * 24 + "62c3a9" "a2" "616e" "20" "6174" "8201f94100")
    assert cbor.encode(value).hex() == expected
    assert cbor.encode(bytearray(b"\x00\x01")).hex() == "420001"
    assert cbor.encode("") == b"\x60" and cbor.encode([]) == b"\x80" and cbor.encode({}) == b"\xa0"
    long_text = "y" * 300
    assert cbor.encode(long_text) == b"\x79\x01\x2c" + long_text.encode()
    assert cbor.decode(cbor.encode(value)) == {**value, "é": {"n": -1, "t": [1, 2.5]}}


def test_anything_else_is_not_encoded():
    with pytest.raises(TypeError) as caught:
        cbor.encode({"s": {1, 2}})
    assert str(caught.value) == "cannot encode set as CBOR"


def nested(levels: int, leaf) -> bytes:
    value = leaf
    for _ in range(levels):
        value = [value]
    return cbor2.dumps(value)


def test_nesting_is_refused_past_128_levels():
    assert cbor.decode(nested(127, 1)) == nested_value(127, 1)  # 127 lists around a number: 128 levels
    assert cbor.decode(nested(127, [])) == nested_value(127, [])  # an empty list at level 128 holds nothing deeper
    with pytest.raises(ValueError) as caught:
        cbor.decode(nested(128, 1))
    assert str(caught.value) == "CBOR nested deeper than 128 levels"
    with pytest.raises(ValueError) as caught:
        cbor.decode(cbor2.dumps({"a": nested_value(127, {"b": 1})}))
    assert str(caught.value) == "CBOR nested deeper than 128 levels"
    with pytest.raises(ValueError) as caught:
        cbor.decode(nested(500, 1))  # cbor2 itself stops at 400
    assert str(caught.value) == "CBOR nested deeper than 128 levels (over 400)"


def test_text_leaves_deep_down_are_not_levels():
    deep = {"k": nested_value(126, "text")}
    assert cbor.decode(cbor2.dumps(deep)) == deep


def nested_value(levels: int, leaf):
    value = leaf
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(("raw", "words"), [
    (cbor2.dumps(cbor2.CBORTag(28, [1])), "invalid CBOR: CBOR value sharing (tags 28/29), which Burn never writes"),
    (cbor2.dumps(cbor2.CBORTag(29, 0)), "invalid CBOR: CBOR value sharing (tags 28/29), which Burn never writes"),
    (cbor2.dumps(2**64), "CBOR integer wider than 64 bits (Burn writes none)"),
    (cbor2.dumps(-2**64 - 1), "CBOR integer wider than 64 bits (Burn writes none)"),
    (cbor2.dumps({"a": [2**64]}), "CBOR integer wider than 64 bits (Burn writes none)"),
    (cbor2.dumps(cbor2.CBORTag(1, 5)), "CBOR holds a datetime value (a tag Burn never writes)"),
    (cbor2.dumps({"a": cbor2.CBORTag(4000, 1)}), "CBOR holds a CBORTag value (a tag Burn never writes)"),
    (cbor2.dumps({1: 2}), "invalid CBOR: error decoding map: map key must be a text string or byte string, not int"),
], ids=["share-28", "share-29", "bignum", "negative-bignum", "bignum-inside", "datetime", "unknown-tag",
        "int-key"])
def test_what_burn_never_writes_is_refused_in_words(raw, words):
    with pytest.raises(ValueError) as caught:
        cbor.decode(raw)
    assert str(caught.value) == words


def test_cut_short_says_so_in_cbor2s_words():
    with pytest.raises(ValueError) as caught:
        cbor.decode(b"\x82\x01")  # a list of two, one there
    assert str(caught.value).startswith("invalid CBOR: premature end of stream (")


def test_the_widest_integers_burn_writes_are_kept():
    assert cbor.decode(cbor2.dumps([2**64 - 1, -2**64])) == [2**64 - 1, -2**64]


def test_a_bignum_listed_before_plain_values_still_refuses_the_file(tmp_path: Path) -> None:
    """A bignum is refused wherever it sits among plain values: every value is checked, not only up to a plain one."""
    meta = cbor2.dumps({"tensors": {}, "big": 2**64, "plain": 1})
    head = b"NRUB" + struct.pack("<HI", 1, len(meta)) + meta
    path = tmp_path / "m.bpk"
    path.write_bytes(head + bytes(-len(head) % 256))
    assert refusal(path) == "m.bpk: metadata is not valid: CBOR integer wider than 64 bits (Burn writes none)"
