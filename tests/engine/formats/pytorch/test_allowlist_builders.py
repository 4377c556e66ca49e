"""The allowlist's builders, read as torch reads them: numpy arrays, scalars and dtypes, torch.Size,
devices, parameters, tensor rebuilds and copyreg reconstructors, as torch.save and pickle write them, and the
words of every refusal when a forged pickle gives them the wrong arguments.

Promises (README, "PyTorch files") -> tests:
- numpy arrays, scalars and dtypes inside a checkpoint read as numpy holds them (C and Fortran order, empty,
  Python 2 text data) -> test_numpy_arrays_read_as_numpy_holds_them, test_python2_numpy_text_data_reads,
  test_numpy_dtype_state_of_any_plain_byte_order_reads
- object arrays are refused (they hold more pickled code) -> test_an_object_array_is_refused_in_words
- torch.Size, devices and parameters read as their values -> test_sizes_devices_and_parameters_read_as_values
- protocol 2's ``bytes()`` and ``bytes(b"...")`` read as their bytes -> test_bytes_calls_read_as_their_bytes
- protocol 2's ``_codecs.encode(text, 'latin1')`` reads as Python reads it (and a call without a codec as UTF-8)
  -> test_codecs_encode_reads_as_python_reads_it
- an unknown class is kept as a placeholder with its state (protocol 0/1 copyreg reconstructors too)
  -> test_copyreg_reconstructors_keep_their_state
- a forged pickle is refused in one line naming the file and what is wrong
  -> test_wrong_arguments_are_refused_in_words, test_a_bad_view_names_the_file_through_every_rebuild
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from engine.errors import FormatError
from engine.formats import open_store
from tests.helpers.pytorch_pickle_builders import (
    DTYPE_F8,
    EMPTY_HOOKS,
    STORAGE,
    call,
    checkpoint,
    in_dict,
    op_global,
    pickle_file,
    plain,
    refusal,
    tensor_v2,
)


@pytest.mark.parametrize(("ops", "words"), [
    (call(op_global("torch", "Size"), plain([1, 2]), plain(3)), "torch.Size takes 1 to 1 arguments, got 2"),
    (call(op_global("torch", "Size"), plain(["a"])), "torch.Size takes a list of whole numbers"),
    (call(op_global("torch", "device"), plain("cpu"), plain(0), plain(1)), "torch.device takes 1 to 2 arguments, got 3"),
    (call(op_global("torch", "device"), plain(1)), "torch.device takes a name and an optional index"),
    (call(op_global("builtins", "set"), plain([1]), plain([2])), "set takes 0 to 1 arguments, got 2"),
    (call(op_global("builtins", "frozenset"), plain([1]), plain([2])), "frozenset takes 0 to 1 arguments, got 2"),
    (call(op_global("builtins", "bytes"), plain(5)), "bytes() is only allowed without arguments"),
    (call(op_global("_codecs", "encode"), plain("a"), plain("latin1"), plain("strict")),
     "_codecs.encode takes 1 to 2 arguments, got 3"),
    (call(op_global("_codecs", "encode"), plain("a"), plain("rot13")),
     "_codecs.encode is only allowed from text to latin1, got ['rot13']"),
    (call(op_global("_codecs", "encode"), plain(5)), "_codecs.encode is only allowed from text to latin1, got utf-8"),
    (call(op_global("builtins", "bytes"), plain(b"a"), plain(b"b")), "bytes takes 0 to 1 arguments, got 2"),
    (call(op_global("numpy", "dtype"), plain("f8"), plain(False), plain(True), plain(0)),
     "numpy.dtype takes 1 to 3 arguments, got 4"),
    (call(op_global("numpy", "dtype")), "numpy.dtype takes 1 to 3 arguments, got 0"),
    (call(op_global("numpy.core.multiarray", "scalar"), DTYPE_F8, plain(b"\0" * 8), plain(0)),
     "numpy scalar takes 2 to 2 arguments, got 3"),
    (call(op_global("numpy.core.multiarray", "scalar"), plain(1), plain(b"\0" * 8)),
     "numpy scalar is not a dtype and its raw bytes"),
    (call(op_global("numpy.core.multiarray", "scalar"), DTYPE_F8, plain(5)), "numpy scalar is not a dtype and its raw bytes"),
    (call(op_global("numpy.core.multiarray", "scalar"), DTYPE_F8, plain(b"\0" * 7)),
     "numpy scalar is not a dtype and its raw bytes"),
    (call(op_global("numpy.core.multiarray", "_reconstruct"), op_global("numpy", "ndarray"), plain((0,)), plain(b"b"),
          plain(0)), "numpy _reconstruct takes 3 to 3 arguments, got 4"),
    (call(op_global("numpy.core.multiarray", "_reconstruct"), op_global("torch", "Size"), plain((0,)), plain(b"b")),
     "numpy _reconstruct of torch.Size, not numpy.ndarray"),
    (call(op_global("copyreg", "_reconstructor"), op_global("m", "C"), op_global("builtins", "object"), plain(None),
          plain(0)), "copyreg._reconstructor takes 3 to 3 arguments, got 4"),
    (call(op_global("copyreg", "_reconstructor"), op_global("torch", "Size"), op_global("builtins", "object"),
          plain(None)), "copyreg._reconstructor of torch.Size, which is not a class"),
    (call(op_global("copyreg", "_reconstructor"), plain(1), op_global("builtins", "object"), plain(None)),
     "copyreg._reconstructor of 1, which is not a class"),
    (call(op_global("copyreg", "_reconstructor"), op_global("m", "C"), plain(1), plain(None)),
     "copyreg._reconstructor from base 1, which is not a builtin type"),
    (call(op_global("copyreg", "_reconstructor"), op_global("m", "C"), op_global("m", "Base"), plain(None)),
     "copyreg._reconstructor from base m.Base, which is not a builtin type"),
])
def test_wrong_arguments_are_refused_in_words(tmp_path: Path, ops: bytes, words: str) -> None:
    assert refusal(pickle_file(tmp_path / "forged.pt", ops)) == words


def test_bytes_calls_read_as_their_bytes(tmp_path: Path) -> None:
    """``bytes()`` is how protocol 2 spells empty bytes; a call with bytes (as a forger might write) is them."""
    ops = (b"}" + plain("empty") + call(op_global("builtins", "bytes")) + b"s"
           + plain("ab") + call(op_global("__builtin__", "bytes"), plain(b"ab")) + b"s")
    with open_store(pickle_file(tmp_path / "bytes.pt", ops)) as store:
        assert store.values == {"empty": "", "ab": "6162"}


def test_codecs_encode_reads_as_python_reads_it(tmp_path: Path) -> None:
    """Both spellings of latin-1, and a call without a codec, which Python's _codecs.encode (torch.load's) encodes
    as UTF-8: the same bytes as pickle.loads gives."""
    encode = op_global("_codecs", "encode")
    items = {"latin1": call(encode, plain("\xe9"), plain("latin1")), "latin-1": call(encode, plain("\xe9"), plain("latin-1")),
             "default": call(encode, plain("\xe9\u20ac"))}
    ops = b"}" + b"".join(plain(key) + value + b"s" for key, value in items.items())
    path = pickle_file(tmp_path / "codecs.pt", ops)
    loaded = pickle.loads(path.read_bytes())
    assert loaded == {"latin1": b"\xe9", "latin-1": b"\xe9", "default": "\xe9\u20ac".encode()}
    with open_store(path) as store:
        assert store.values == {key: value.hex() for key, value in loaded.items()}


def numpy_array(state: bytes) -> bytes:
    """``_reconstruct(ndarray, (0,), b'b')`` then BUILD ``state``."""
    return call(op_global("numpy.core.multiarray", "_reconstruct"), op_global("numpy", "ndarray"), plain((0,)),
                plain(b"b")) + state + b"b"


def dtype_with_state(state: tuple) -> bytes:
    return call(op_global("numpy", "dtype"), plain("f8"), plain(False), plain(True)) + plain(state) + b"b"


@pytest.mark.parametrize(("ops", "words"), [
    (numpy_array(plain((1, (1,), 2, False, b"\0" * 8))), "numpy array state lacks a numpy dtype"),
    (numpy_array(plain((1, (1,)))), "numpy array state is not (version, shape, dtype, fortran, data)"),
    (numpy_array(plain([1, (1,), 2, False, b"\0" * 8])), "numpy array state is not (version, shape, dtype, fortran, data)"),
    (numpy_array(b"(" + plain(1) + plain((1,)) + DTYPE_F8 + plain(False) + plain(5) + b"t"),
     "numpy array data is not raw bytes"),
    (numpy_array(b"(" + plain(1) + plain((-1,)) + DTYPE_F8 + plain(False) + plain(b"") + b"t"),
     "numpy array shape is not a list of sizes"),
    (numpy_array(b"(" + plain(1) + plain(3) + DTYPE_F8 + plain(False) + plain(b"") + b"t"),
     "numpy array shape is not a list of sizes"),
    (numpy_array(b"(" + plain(1) + plain((2,)) + DTYPE_F8 + plain(False) + plain(b"\0" * 8) + b"t"),
     "numpy array data has 8 bytes, its shape needs 16"),
    (dtype_with_state((3, "<", None, None)), "numpy dtype state is not that of a plain numeric dtype"),
    (dtype_with_state([3, "<", None, None, None, -1, -1, 0]), "numpy dtype state is not that of a plain numeric dtype"),
    (dtype_with_state((3, "<", None, ("a",), None, -1, -1, 0)), "numpy dtype state is not that of a plain numeric dtype"),
    (dtype_with_state((3, "<", None, None, {"a": 1}, -1, -1, 0)), "numpy dtype state is not that of a plain numeric dtype"),
    (dtype_with_state((3, "!", None, None, None, -1, -1, 0)), "numpy dtype byte order '!' is unknown"),
])
def test_forged_numpy_states_are_refused_in_words(tmp_path: Path, ops: bytes, words: str) -> None:
    assert refusal(pickle_file(tmp_path / "numpy.pt", in_dict("a", ops))) == words


@pytest.mark.parametrize("order", ["<", "|", "=", ">"])
def test_numpy_dtype_state_of_any_plain_byte_order_reads(tmp_path: Path, order: str) -> None:
    """A dtype's BUILD state of five items (numpy writes eight) with each byte order numpy writes."""
    scalar = call(op_global("numpy.core.multiarray", "scalar"), dtype_with_state((3, order, None, None, None)),
                  plain(np.array(0.5, ">f8" if order == ">" else "<f8").tobytes()))
    with open_store(pickle_file(tmp_path / "order.pt", in_dict("best", scalar))) as store:
        assert store.values == {"best": 0.5}


def test_a_scalar_of_a_one_argument_dtype_reads(tmp_path: Path) -> None:
    scalar = call(op_global("numpy.core.multiarray", "scalar"), DTYPE_F8, plain(np.float64(0.25).tobytes()))
    with open_store(pickle_file(tmp_path / "one.pt", in_dict("x", scalar))) as store:
        assert store.values == {"x": 0.25}


def test_python2_numpy_text_data_reads(tmp_path: Path) -> None:
    """Python 2 pickled an array's and a scalar's raw bytes as text: each character is one byte (latin-1)."""
    raw = np.arange(3, dtype="<f8").tobytes()
    array = numpy_array(b"(" + plain(1) + plain((3,)) + DTYPE_F8 + plain(False) + plain(raw.decode("latin-1")) + b"t")
    scalar = call(op_global("numpy.core.multiarray", "scalar"), DTYPE_F8, plain(np.float64(-2.5).tobytes()
                                                                                 .decode("latin-1")))
    ops = b"}(" + plain("arr") + array + plain("x") + scalar + b"u"
    with open_store(pickle_file(tmp_path / "py2.pt", ops)) as store:
        assert store.names == ["arr"] and store.read("arr").tolist() == [0.0, 1.0, 2.0]
        assert store.values == {"x": -2.5}


def test_a_four_item_array_state_reads(tmp_path: Path) -> None:
    """numpy's oldest array state has no version: (shape, dtype, fortran, data)."""
    array = numpy_array(b"(" + plain((2,)) + DTYPE_F8 + plain(False) + plain(np.array([7.0, 8.0]).tobytes()) + b"t")
    with open_store(pickle_file(tmp_path / "four.pt", in_dict("a", array))) as store:
        assert store.read("a").tolist() == [7.0, 8.0]


def test_an_array_without_state_is_refused(tmp_path: Path) -> None:
    ops = in_dict("a", call(op_global("numpy.core.multiarray", "_reconstruct"), op_global("numpy", "ndarray"),
                            plain((0,)), plain(b"b")))
    with pytest.raises(FormatError) as caught:
        open_store(pickle_file(tmp_path / "bare.pt", ops))
    assert caught.value.problem == "a numpy array in the checkpoint has no data"


def test_numpy_arrays_read_as_numpy_holds_them(tmp_path: Path) -> None:
    arrays = {"c3": np.arange(24, dtype="<i4").reshape(2, 3, 4), "f3": np.asfortranarray(np.arange(24.0).reshape(2, 3, 4)),
              "f2": np.asfortranarray(np.arange(6, dtype="<u2").reshape(2, 3)), "empty": np.zeros((0, 3), "<f4"),
              "same_a": np.ones(3, "<f4"), "same_b": np.full(3, 2.0, "<f4"), "small": np.array([1, -1], "i1")}
    path = tmp_path / "arrays.pt"
    torch.save(arrays, path)
    expected = torch.load(path, weights_only=False)
    with open_store(path) as store:
        assert store.names == list(arrays)
        for name, array in expected.items():
            got = store.read(name)
            assert got.shape == array.shape and got.dtype == array.dtype, name
            np.testing.assert_array_equal(got, array)


def test_an_object_array_is_refused_in_words(tmp_path: Path) -> None:
    path = tmp_path / "objects.pt"
    torch.save({"a": np.array([1, "x"], dtype=object)}, path)
    with pytest.raises(FormatError) as caught:
        open_store(path)
    assert caught.value.path == str(path)
    assert caught.value.problem == ("refused numpy dtype 'O8': only plain numeric arrays are allowed (object arrays "
                                    "hold more pickled code)")


def test_sizes_devices_and_parameters_read_as_values(tmp_path: Path) -> None:
    path = tmp_path / "values.pt"
    torch.save({"size": torch.Size([2, 3]), "cpu": torch.device("cpu"), "gpu": torch.device("cuda", 1),
                "p": torch.nn.Parameter(torch.arange(3.0))}, path)
    with open_store(path) as store:
        assert store.values == {"size": [2, 3], "cpu": "cpu", "gpu": "cuda:1"}
        assert store.names == ["p"] and store.read("p").tolist() == [0.0, 1.0, 2.0]


PARAMETER = op_global("torch.nn.parameter", "Parameter")


@pytest.mark.parametrize(("ops", "words"), [
    (call(PARAMETER, tensor_v2(), plain(True), plain(0)), "Parameter takes 1 to 2 arguments, got 3"),
    (call(PARAMETER, plain(1)), "a parameter's data is int, not a tensor"),
    (call(op_global("torch._utils", "_rebuild_parameter"), tensor_v2(), plain(True), EMPTY_HOOKS, plain(0), plain(0)),
     "_rebuild_parameter takes 3 to 4 arguments, got 5"),
    (call(op_global("torch._utils", "_rebuild_parameter"), plain(1), plain(True), EMPTY_HOOKS),
     "a parameter's data is int, not a tensor"),
    (call(op_global("torch._utils", "_rebuild_tensor_v3"), STORAGE, plain(0), plain((4,)), plain((1,)), plain(False),
          EMPTY_HOOKS, op_global("torch", "float32"), plain(0), plain(0)), "_rebuild_tensor_v3 takes 7 to 8 arguments, got 9"),
    (call(op_global("torch._utils", "_rebuild_tensor_v3"), STORAGE, plain(0), plain((4,)), plain((1,)), plain(False),
          EMPTY_HOOKS, plain(1)), "_rebuild_tensor_v3 needs a torch dtype, got 1"),
    (call(op_global("torch._tensor", "_rebuild_from_type_v2"), op_global("torch._utils", "_rebuild_tensor_v2"),
          PARAMETER, plain(()), plain({}), plain(0)), "_rebuild_from_type_v2 takes 4 to 4 arguments, got 5"),
])
def test_wrong_tensor_arguments_are_refused_in_words(tmp_path: Path, ops: bytes, words: str) -> None:
    assert refusal(checkpoint(tmp_path / "forged.pt", in_dict("t", ops))) == words


def test_one_argument_parameters_and_eight_argument_v3_rebuilds_read(tmp_path: Path) -> None:
    """torch 0.3 pickled ``Parameter(data)``; _rebuild_tensor_v3 may carry an eighth argument (metadata)."""
    v3 = call(op_global("torch._utils", "_rebuild_tensor_v3"), STORAGE, plain(1), plain((2,)), plain((2,)),
              plain(False), EMPTY_HOOKS, op_global("torch", "float32"), plain({}))
    with_state = call(op_global("torch._utils", "_rebuild_parameter_with_state"), tensor_v2((2, 2), (2, 1)),
                      plain(False), EMPTY_HOOKS, plain({"note": 1}))
    ops = b"}(" + plain("p") + call(PARAMETER, tensor_v2()) + plain("v3") + v3 + plain("s") + with_state + b"u"
    with open_store(checkpoint(tmp_path / "old.pt", ops)) as store:
        assert store.names == ["p", "v3", "s"]
        assert store.read("p").tolist() == [1.0, 2.0, 3.0, 4.0]
        assert store.read("v3").tolist() == [2.0, 4.0]
        assert store.read("s").tolist() == [[1.0, 2.0], [3.0, 4.0]]


@pytest.mark.parametrize("rebuild", [
    call(op_global("torch._utils", "_rebuild_tensor"), STORAGE, plain(0), plain((4,)), plain((1, 1))),
    call(op_global("torch._utils", "_rebuild_tensor_v3"), STORAGE, plain(0), plain((4,)), plain((1, 1)), plain(False),
         EMPTY_HOOKS, op_global("torch", "float32")),
    call(op_global("torch._tensor", "_rebuild_from_type_v2"), op_global("torch._utils", "_rebuild_tensor_v2"),
         PARAMETER, b"(" + STORAGE + plain(0) + plain((4,)) + plain((1, 1)) + plain(False) + EMPTY_HOOKS + b"t",
         plain({})),
])
def test_a_bad_view_names_the_file_through_every_rebuild(tmp_path: Path, rebuild: bytes) -> None:
    """A size of one dimension with strides of two: refused naming the file, whichever function rebuilt it."""
    path = checkpoint(tmp_path / "view.pt", in_dict("t", rebuild))
    with pytest.raises(FormatError) as caught:
        open_store(path)
    assert caught.value.path == str(path) and caught.value.problem == "a tensor has size [4] but stride [1, 1]"


class Count(int):
    """An int subclass: protocols 0 and 1 pickle it as copyreg._reconstructor(Count, int, 5)."""


class Table(dict):
    pass


class Rows(list):
    pass


def test_copyreg_reconstructors_keep_their_state(tmp_path: Path) -> None:
    """Protocol 1 (torch cannot write 0, which pickles these the same way)."""
    path = tmp_path / "old.pt"
    torch.save({"count": Count(5), "table": Table(a=1), "rows": Rows([1, 2])}, path, pickle_protocol=1)
    here = __name__
    with open_store(path) as store:
        values = store.values
    assert values["count"] == {"__class__": f"{here}.Count", "__args__": [5]}
    assert values["table"] == {"__class__": f"{here}.Table", "__items__": {"a": 1}}
    assert values["rows"] == {"__class__": f"{here}.Rows", "__list__": [1, 2]}


@pytest.mark.parametrize(("base", "state", "shown"), [
    ("object", {"a": 1}, {"__args__": [{"a": 1}]}),
    ("object", [1], {"__args__": [[1]]}),
    ("dict", [1], {"__args__": [[1]]}),
    ("list", {"a": 1}, {"__args__": [{"a": 1}]}),
])
def test_a_reconstructor_state_that_is_not_its_base_is_kept_as_an_argument(tmp_path: Path, base: str, state,
                                                                            shown: dict) -> None:
    ops = in_dict("x", call(op_global("copyreg", "_reconstructor"), op_global("m", "C"), op_global("builtins", base),
                            plain(state)))
    with open_store(pickle_file(tmp_path / "state.pt", ops)) as store:
        assert store.values == {"x": {"__class__": "m.C", **shown}}
