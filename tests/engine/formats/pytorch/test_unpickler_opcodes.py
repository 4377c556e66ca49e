"""Every opcode the interpreter knows, through both of its loops: a pickle held whole (a zip's data.pkl, read by
index) and a pickle read from a file as it goes (the legacy and tar layouts, whose pickles' lengths are only
known once parsed). Each case checks the value built or the exact message of a refusal. Pickles come from
Python's own ``pickle.dumps`` where it writes the opcode; the opcodes only Python 2 or a forger writes (INST,
PERSID, the extension registry, out-of-band buffers) are built byte by byte.

Promise -> test (README, "PyTorch files": nothing in a file is executed or imported; what is refused):
- a class the reader does not know becomes a placeholder, never imported -> test_inst_builds_a_placeholder_or_an_allowed_value
- the copyreg extension registry is refused -> test_the_extension_registry_is_refused_with_its_code
- out-of-band buffers are refused -> test_out_of_band_buffers_are_refused
- outside data the layout does not have is refused -> test_persistent_ids_go_to_the_layout_or_are_refused
- Python 2 checkpoints read (text opcodes) -> test_python_pickles_read_the_same_through_both_loops
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from numpy._core.multiarray import _reconstruct

from engine.errors import FormatError
from engine.formats.pytorch.allowlist import Placeholder
from engine.formats.pytorch.unpickler import PickleStream, load

LOOPS = ("whole", "streamed")
START = {"whole": 0, "streamed": 3}  # where the pickle starts in what is read


def stream(raw: bytes, loop: str, what: str = "the pickle") -> PickleStream:
    """``raw`` as the zip layout holds it (whole) or as the tar layout streams a member (in steps, from byte 3 of
    a bigger file, so that a refusal naming the byte's place in the file instead of in the pickle is caught)."""
    if loop == "whole":
        return PickleStream.over_bytes("m.pt", raw, what)
    padded = b"abc" + raw + b"tail"
    start = START[loop]
    return PickleStream("m.pt", lambda offset, n: padded[offset:offset + n], start, start + len(raw), what)


def unpickle(raw: bytes, loop: str, persistent_load=None):
    return load(stream(raw, loop), persistent_load)


def refusal(raw: bytes, loop: str, persistent_load=None) -> str:
    """The message: each "byte N" in it counts from the pickle's start, however it is read."""
    with pytest.raises(FormatError) as info:
        unpickle(raw, loop, persistent_load)
    return str(info.value)


def shared_values() -> dict:
    """Values that make pickle write every memo opcode: shared objects (GET), more than 256 of them
    (LONG_BINGET / LONG_BINPUT), tuples of 1, 2 and 3 items, sets, frozensets, bytes, floats and big ints."""
    leaf = ["shared"]
    many = [[i] for i in range(300)]
    return {"a": leaf, "b": leaf, "many": many, "again": many[::-1], "t1": (1,), "t2": (1, leaf), "t3": (1, 2, leaf),
            "t4": (1, 2, 3, 4), "empty": (), "set": {1, 2}, "fs": frozenset({3}), "bytes": b"\x00\xff", "f": -1.5,
            "big": 2**70, "neg": -(2**40), "true": True, "none": None, "text": "é\u20ac", "nested": {"k": [(1,)]},
            "surrogate": "\ud800"}  # a lone surrogate: pickle writes it with surrogatepass


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("protocol", [0, 1, 2, 3, 4, 5])
def test_python_pickles_read_the_same_through_both_loops(loop, protocol):
    value = shared_values()
    got = unpickle(pickle.dumps(value, protocol=protocol), loop)
    assert got == value
    assert got["a"] is got["b"] and got["t2"][1] is got["a"]  # memo: one object, not copies
    assert [id(x) for x in got["again"]] == [id(x) for x in got["many"][::-1]]


@pytest.mark.parametrize("loop", LOOPS)
def test_each_text_takes_its_own_length(loop):
    raw = b"X\x01\x00\x00\x00a" + b"X\x90\x01\x00\x00" + b"b" * 400 + b"\x86."  # protocol 1: no PROTO first
    assert unpickle(raw, loop) == ("a", "b" * 400)
    cut = b"X\x01\x00\x00\x00a" + b"X\xe8\x03\x00\x00" + b"b" * 400  # claims 1,000 bytes, holds 400
    assert refusal(cut, loop) == "m.pt: the pickle is truncated: it needs 1000 bytes at byte 11 but only 400 remain"


@pytest.mark.parametrize("loop", LOOPS)
def test_python2_text_memo_opcodes(loop):
    raw = b"(lp0\nS'x'\np1\nag1\nag0\na."  # a list holding "x", "x" (GET 1) and itself (GET 0)
    got = unpickle(raw, loop)
    assert got[:2] == ["x", "x"] and got[2] is got
    assert refusal(b"(lp-1\n.", loop) == "m.pt: the pickle is malformed (PUT at byte 2): negative memo index"
    assert refusal(b"(lp0\ng7\n.", loop) == "m.pt: the pickle is malformed (GET at byte 5): memo entry 7 was never stored"


@pytest.mark.parametrize("loop", LOOPS)
def test_memo_opcodes_refuse_what_was_never_stored(loop):
    assert refusal(b"\x80\x02N\x94h\x01.", loop) == ("m.pt: the pickle is malformed (BINGET at byte 4): memo entry 1 "
                                                      "was never stored")
    assert unpickle(b"\x80\x02N\x94h\x00\x86.", loop) == (None, None)  # MEMOIZE stores at the next index, 0
    assert refusal(b"\x80\x02j\x00\x01\x00\x00.", loop) == ("m.pt: the pickle is malformed (LONG_BINGET at byte 2): "
                                                            "memo entry 256 was never stored")
    assert unpickle(b"\x80\x02Nr\x00\x01\x00\x000j\x00\x01\x00\x00.", loop) is None  # LONG_BINPUT 256, POP, GET
    assert refusal(b"\x80\x02q\x00.", loop) == "m.pt: the pickle is malformed (BINPUT at byte 2): stack underflow"


@pytest.mark.parametrize("loop", LOOPS)
def test_small_tuples_take_their_items_in_order(loop):
    assert unpickle(b"\x80\x02K\x01\x85.", loop) == (1,)
    assert unpickle(b"\x80\x02K\x01K\x02\x86.", loop) == (1, 2)
    assert unpickle(b"\x80\x02K\x01K\x02K\x03\x87.", loop) == (1, 2, 3)
    assert refusal(b"\x80\x02K\x01K\x02\x87.", loop) == "m.pt: the pickle is malformed (TUPLE3 at byte 6): stack underflow"
    assert refusal(b"\x80\x02(K\x01\x86.", loop) == "m.pt: the pickle is malformed (TUPLE2 at byte 5): stack underflow"


@pytest.mark.parametrize("loop", LOOPS)
def test_inst_builds_a_placeholder_or_an_allowed_value(loop):
    assert unpickle(b"(I1\nI5\nI2\ni__builtin__\nslice\n.", loop) == slice(1, 5, 2)
    net = unpickle(b"(I7\ni__main__\nNet\n.", loop)
    assert isinstance(net, Placeholder) and (net.qualname, net.args) == ("__main__.Net", (7,))
    assert unpickle("(i__main__\nCaf\u00e9\n.".encode(), loop).qualname == "__main__.Caf\u00e9"  # names are UTF-8
    assert refusal(b"(I1\nI2\nI3\nI4\ni__builtin__\nslice\n.", loop) == (
        "m.pt: the pickle is malformed (INST at byte 13): slice takes 1 to 3 arguments, got 4")
    assert refusal(b"(i__builtin__\nslice\n.", loop) == (
        "m.pt: the pickle is malformed (INST at byte 1): slice takes 1 to 3 arguments, got 0")
    assert refusal(b"(I1\nisubprocess\nPopen\n.", loop) == (
        "m.pt: refused to load the global subprocess.Popen: a weights file never needs it, and unpickling it could run code")


@pytest.mark.parametrize("loop", LOOPS)
def test_reduce_obj_and_newobj_call_only_allowed_globals(loop):
    assert unpickle(b"\x80\x02(c__builtin__\nslice\nK\x01K\x02o.", loop) == slice(1, 2)
    assert refusal(b"\x80\x02(o.", loop) == "m.pt: the pickle is malformed (OBJ at byte 3): OBJ without a class"
    assert refusal(b"\x80\x02(K\x01o.", loop) == ("m.pt: the pickle is malformed (OBJ at byte 5): OBJ on int, "
                                                 "which is not an allowed global")
    assert unpickle(b"\x80\x04c__builtin__\nslice\nK\x03\x85}\x92.", loop) == slice(3)
    assert refusal(b"\x80\x02K\x01)R.", loop) == ("m.pt: the pickle is malformed (REDUCE at byte 5): REDUCE on int, "
                                               "which is not an allowed global")
    assert refusal(b"\x80\x02c__builtin__\nslice\nK\x01R.", loop) == (
        "m.pt: the pickle is malformed (REDUCE at byte 23): REDUCE arguments must be a tuple")
    assert refusal(b"\x80\x04c__builtin__\nslice\nK\x03\x85}K\x01K\x02s\x92.", loop) == (
        "m.pt: the pickle is malformed (NEWOBJ_EX at byte 30): NEWOBJ_EX with keyword arguments")
    assert refusal(b"\x80\x04c__builtin__\nslice\nK\x03}\x92.", loop) == (
        "m.pt: the pickle is malformed (NEWOBJ_EX at byte 24): NEWOBJ_EX arguments must be a tuple")
    assert refusal(b"\x80\x04K\x03)}\x92.", loop) == ("m.pt: the pickle is malformed (NEWOBJ_EX at byte 6): NEWOBJ_EX "
                                                      "on int, which is not an allowed global")
    assert refusal(b"\x80\x02c__builtin__\nslice\nK\x03\x81.", loop) == (
        "m.pt: the pickle is malformed (NEWOBJ at byte 23): NEWOBJ arguments must be a tuple")
    assert refusal(b"\x80\x02K\x03)\x81.", loop) == ("m.pt: the pickle is malformed (NEWOBJ at byte 5): NEWOBJ on int, "
                                                    "which is not an allowed global")


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize(("raw", "code"), [(b"\x82\x07", 7), (b"\x83\x01\x02", 0x201), (b"\x84\xff\xff\xff\xff", -1)])
def test_the_extension_registry_is_refused_with_its_code(loop, raw, code):
    assert refusal(b"\x80\x02" + raw + b".", loop) == (f"m.pt: the pickle uses the copyreg extension registry (code "
                                                        f"{code}), which a weights file never needs")


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("opcode", [b"\x97", b"\x98"])
def test_out_of_band_buffers_are_refused(loop, opcode):
    assert refusal(b"\x80\x05" + opcode + b".", loop) == ("m.pt: the pickle uses out-of-band buffers (pickle protocol "
                                                          "5), which a weights file never needs")


@pytest.mark.parametrize("loop", LOOPS)
def test_persistent_ids_go_to_the_layout_or_are_refused(loop):
    seen = []

    def persistent_load(pid):
        seen.append(pid)
        return f"storage {pid}"

    assert unpickle(b"(Pkey 0\nPkey 1\nl.", loop, persistent_load) == ["storage key 0", "storage key 1"]
    assert unpickle(b"\x80\x02X\x01\x00\x00\x00kQ.", loop, persistent_load) == "storage k"
    assert seen == ["key 0", "key 1", "k"]
    assert refusal(b"Pkey 0\n.", loop) == ("m.pt: the pickle refers to outside data (persistent id 'key 0'), which "
                                           "this layout does not have")
    assert refusal(b"\x80\x02K\x05Q.", loop) == ("m.pt: the pickle refers to outside data (persistent id 5), which "
                                                 "this layout does not have")


@pytest.mark.parametrize("loop", LOOPS)
def test_a_long_of_no_bytes_is_zero(loop):
    """Python 2 pickled ``0L`` as LONG1 with no bytes; LONG4 may say the same. A length of 0 is no refusal."""
    assert unpickle(b"\x80\x02\x8a\x00.", loop) == 0
    assert unpickle(b"\x80\x02\x8b\x00\x00\x00\x00.", loop) == 0


@pytest.mark.parametrize("loop", LOOPS)
def test_text_and_float_opcodes(loop):
    assert unpickle(b"V\\u20ac a\n.", loop) == "\u20ac a"  # UNICODE: raw-unicode-escape
    assert unpickle(b"F-2.25\n.", loop) == -2.25
    assert unpickle(b"\x80\x02G\xc0\x02\x00\x00\x00\x00\x00\x00.", loop) == -2.25  # BINFLOAT, big-endian
    assert unpickle(b"I00\n.", loop) is False and unpickle(b"I01\n.", loop) is True and unpickle(b"I-3\n.", loop) == -3
    assert unpickle(b"L-12L\n.", loop) == -12 and unpickle(b"L7\n.", loop) == 7
    assert refusal(b"L12XL\n.", loop) == ("m.pt: the pickle is malformed (LONG at byte 0): invalid literal for int() "
                                          "with base 10: b'12X'")
    assert unpickle(b"S'a\\x00'\n.", loop) == "a\x00"
    assert unpickle(b"S\"\xe9\"\n.", loop) == "\xe9"  # not UTF-8: Latin-1, as torch.load reads Python 2 text
    assert refusal(b"Sab\n.", loop) == "m.pt: the pickle is malformed (STRING at byte 0): STRING argument is not quoted"
    assert refusal(b"S'\n.", loop) == "m.pt: the pickle is malformed (STRING at byte 0): STRING argument is not quoted"
    assert unpickle(b"S''\n.", loop) == "" and unpickle(b"S'a'\r\n.", loop) == "a"  # Windows line ends too
    for unquoted in (b"S'a\"\n.", b"S'a' \n.", b"S'a'X\n.", b"Sa\n."):
        assert refusal(unquoted, loop) == ("m.pt: the pickle is malformed (STRING at byte 0): STRING argument is "
                                           "not quoted")
    assert unpickle(b"\x80\x02T\x02\x00\x00\x00ab.", loop) == "ab"  # BINSTRING
    assert unpickle(b"\x80\x02U\x02\xc3\xa9.", loop) == "\xe9"  # SHORT_BINSTRING, UTF-8
    assert unpickle(b"\x80\x02C\x02ab.", loop) == b"ab"
    assert unpickle(b"\x80\x04\x8d\x01\x00\x00\x00\x00\x00\x00\x00a.", loop) == "a"
    assert unpickle(b"\x80\x04\x8e\x01\x00\x00\x00\x00\x00\x00\x00a.", loop) == b"a"
    assert unpickle(b"\x80\x05\x96\x01\x00\x00\x00\x00\x00\x00\x00a.", loop) == b"a"
    assert refusal(b"\x80\x02T\xff\xff\xff\xff.", loop) == ("m.pt: the pickle is malformed (BINSTRING at byte 2): "
                                                          "negative length")


@pytest.mark.parametrize("loop", LOOPS)
def test_stack_and_mark_opcodes(loop):
    assert unpickle(b"\x80\x02K\x01K\x020.", loop) == 1  # POP
    assert unpickle(b"\x80\x02K\x01(0.", loop) == 1  # POP of a bare MARK
    assert unpickle(b"\x80\x02K\x01(K\x02K\x031.", loop) == 1  # POP_MARK
    assert unpickle(b"\x80\x02]K\x01a2\x86.", loop) == ([1], [1])  # DUP: the same list twice
    assert refusal(b"\x80\x021.", loop) == "m.pt: the pickle is malformed (POP_MARK at byte 2): no MARK to pop to"
    assert refusal(b"\x80\x02(2.", loop) == "m.pt: the pickle is malformed (DUP at byte 3): stack underflow"
    assert refusal(b"\x80\x02K\x01(.", loop) == "m.pt: the pickle is malformed (STOP at byte 5): STOP with a malformed stack"
    assert refusal(b"\x80\x02K\x01K\x01.", loop) == "m.pt: the pickle is malformed (STOP at byte 6): STOP with a malformed stack"


@pytest.mark.parametrize("loop", LOOPS)
def test_containers_refuse_the_wrong_target(loop):
    assert unpickle(b"\x80\x02(K\x01K\x02d.", loop) == {1: 2}
    assert refusal(b"\x80\x02(K\x01d.", loop) == "m.pt: the pickle is malformed (DICT at byte 5): DICT with an odd number of items"
    assert refusal(b"\x80\x02}(K\x01u.", loop) == ("m.pt: the pickle is malformed (SETITEMS at byte 6): SETITEMS with an "
                                                  "odd number of items")
    assert refusal(b"\x80\x02NK\x01K\x02s.", loop) == ("m.pt: the pickle is malformed (SETITEM at byte 7): SETITEM on "
                                                      "NoneType, not a dict")
    assert refusal(b"\x80\x02](K\x01\x90.", loop) == ("m.pt: the pickle is malformed (ADDITEMS at byte 6): ADDITEMS on "
                                                     "list, not a set")
    assert unpickle(b"\x80\x04\x8f(K\x01K\x02\x90.", loop) == {1, 2}
    assert refusal(b"\x80\x02N(K\x01e.", loop) == "m.pt: the pickle is malformed (APPENDS at byte 6): APPEND to NoneType, not a list"
    assert refusal(b"\x80\x02}K\x01a.", loop) == ("m.pt: the pickle is malformed (APPEND at byte 5): APPEND to dict, "
                                                 "not a list")
    assert refusal(b"\x80\x02NN}b.", loop) == "m.pt: the pickle is malformed (BUILD at byte 5): BUILD on NoneType, which takes no state"
    assert refusal(b"\x80\x02}K\x01b.", loop) == ("m.pt: the pickle is malformed (BUILD at byte 5): BUILD on a dict "
                                                 "with a state that is not attributes")
    assert unpickle(b"\x80\x02}}b.", loop) == {}  # an OrderedDict's _metadata: an attribute, not an item
    assert refusal(b"\x80\x02K\x01}b.", loop) == ("m.pt: the pickle is malformed (BUILD at byte 5): BUILD on int, "
                                                 "which takes no state")


class NumpyArrayState:
    """Pickles as numpy pickles an array: _reconstruct, then BUILD with (version, shape, dtype, fortran, data)."""

    def __init__(self, state: tuple):
        self.state = state

    def __reduce__(self):
        return _reconstruct, (np.ndarray, (0,), b"b"), self.state


@pytest.mark.parametrize("loop", LOOPS)
def test_a_numpy_array_in_a_pickle_is_checked_like_a_tensor(loop):
    array = unpickle(pickle.dumps(NumpyArrayState((1, (3,), np.dtype("<f4"), False, b"\0" * 12)), protocol=2), loop)
    assert (array.tensor.shape, array.tensor.storage.data) == ((3,), bytes(12))
    huge = pickle.dumps(NumpyArrayState((1, (2**62, 4), np.dtype("<f4"), False, b"")), protocol=2)
    assert refusal(huge, loop) == "m.pt: a tensor of size [4611686018427387904, 4] is larger than any array can be"


@pytest.mark.parametrize("loop", LOOPS)
def test_a_placeholder_takes_items_list_items_and_state(loop):
    raw = (b"\x80\x02c__main__\nD\n)\x81(K\x01K\x02u(K\x03e}X\x01\x00\x00\x00aK\x04sb.")
    got = unpickle(raw, loop)
    assert (got.qualname, got.items, got.listitems, got.state) == ("__main__.D", {1: 2}, [3], {"a": 4})
    got = unpickle(b"\x80\x02c__main__\nD\n)\x81K\x01K\x02sK\x03a.", loop)
    assert (got.items, got.listitems) == ({1: 2}, [3])


@pytest.mark.parametrize("loop", LOOPS)
def test_truncation_and_unknown_opcodes_say_where(loop):
    assert refusal(b"\x80\x02", loop) == "m.pt: the pickle is truncated: it needs 1 bytes at byte 2 but only 0 remain"
    assert refusal(b"\x80\x02\xff", loop) == "m.pt: the pickle has an unknown opcode b'\\xff' at byte 2"
    assert refusal(b"\x80\x02C\x05ab", loop) == "m.pt: the pickle is truncated: it needs 5 bytes at byte 4 but only 2 remain"
    assert refusal(b"Vabc", loop) == "m.pt: the pickle is truncated inside a text argument"
    # every argument cut short says so, whichever loop decodes it
    cut = {b"X\x01\x00": (4, 3, 2), b"X\x05\x00\x00\x00ab": (5, 7, 2), b"K": (1, 3, 0), b"M\x01": (2, 3, 1),
           b"J\x01\x02\x03": (4, 3, 3), b"h": (1, 3, 0), b"j\x00\x00": (4, 3, 2), b"q": (1, 3, 0),
           b"N}r\x00\x00\x00": (4, 5, 3), b"\x8c\x03ab": (3, 4, 2)}
    for body, (n, at, left) in cut.items():
        assert refusal(b"\x80\x02" + body, loop) == (f"m.pt: the pickle is truncated: it needs {n} bytes at byte {at} "
                                                      f"but only {left} remain"), body
    with pytest.raises(FormatError) as info:
        load(stream(b"\x80\x02", loop, what="data.pkl"))
    assert str(info.value) == "m.pt: data.pkl is truncated: it needs 1 bytes at byte 2 but only 0 remain"
