"""The allowlist table's storage and tensor names and kinds (engine/formats/pytorch/allowlist.py): a wrong entry
would misread or wrongly refuse a tensor torch.load reads.

Storages and function kinds: an untyped storage torch.save writes, the refusal of a storage type that does not say
its element type, and the builders torch's ``_rebuild_from_type`` calls as a subclass's rebuild function.

Promises (README, "PyTorch files": a checkpoint reads as torch.load reads it, a forged pickle is refused in one line
naming what is wrong) -> tests:
- an untyped storage torch.save writes reads as its bytes, named as torch.save names it
  (``torch.storage.UntypedStorage``) or as ``torch.UntypedStorage``, the same class to torch.load (whose safe loader
  refuses that name: the note says so) -> test_an_untyped_storage_reads_as_its_bytes_under_either_name
- a storage named ``torch.TypedStorage`` (which holds no element type) is refused saying so
  -> test_a_typed_storage_persistent_id_is_refused_for_lacking_an_element_type
- ``_rebuild_from_type(f, torch.Tensor, args, {})`` with ``f`` one of the table's builder functions (``_codecs.encode``,
  numpy's ``scalar`` and ``_reconstruct``, ``copyreg._reconstructor``) reads as torch.load(weights_only=False) reads
  it -> test_a_subclass_rebuilt_by_a_builder_function_reads_as_torch_reads_it
- ``_rebuild_from_type_v2``, and ``_rebuild_from_type`` for any type but torch.Tensor, refuse a function's result that
  is not a tensor, as torch.load fails on it
  -> test_a_v2_subclass_rebuilt_as_anything_but_a_tensor_is_refused_as_torch_refuses_it,
  test_a_v1_subclass_of_parameter_rebuilt_as_anything_but_a_tensor_is_refused
- the note names only classes torch's safe loader refuses, not those it takes that this reader keeps as placeholders
  (Counter, complex, bytearray) -> test_classes_torch_safe_loader_takes_are_placeholders_without_a_note
- ``_rebuild_from_type`` refuses, naming the file, what its function refuses, and its own wrong argument count
  naming itself -> test_a_v1_subclass_whose_tensor_is_malformed_is_refused_naming_the_file,
  test_a_v1_subclass_rebuild_given_five_arguments_is_refused_naming_it
- ``torch._tensor.Tensor`` is torch.Tensor for ``_rebuild_from_type`` too: its function's result is returned as it is
  -> test_a_v1_subclass_of_torch_tensor_by_its_defining_module_returns_what_its_function_built
- calling torch.Tensor, under either module name, is refused naming it -> test_calling_torch_tensor_is_refused_naming_it

Tensor names and kinds: the tensor types torch.save names, the tensor-subclass rebuilds nested as torch nests
them, and the refusal naming a class stand-in a forged pickle calls.

Promises (README, "PyTorch files": a checkpoint reads as torch.load reads it, the note says when
torch.load(weights_only=True) would refuse the file, a forged pickle is refused in one line naming what is wrong)
-> tests:
- a plain tensor carrying attributes (pickled through ``torch.Tensor``) and the legacy tensor types torch.save names
  (``torch.FloatTensor``, ``torch.cuda.LongTensor``) read, listed by name, with no note: torch's safe loader takes
  them -> test_tensor_types_torch_save_names_read_by_name_without_a_note
- a tensor subclass rebuilt through ``torch._tensor.Tensor`` (the module torch defines it in) reads as its tensor
  -> test_a_subclass_rebuilt_as_torch_tensor_Tensor_reads_as_its_tensor
- ``_rebuild_from_type`` and ``_rebuild_from_type_v2``, each as the rebuild function of the other or of itself, read
  as torch.load reads them -> test_subclass_rebuilds_nested_in_each_other_read_as_torch_reads_them
- calling a class the table knows but never builds (a tensor type, a dtype, numpy.ndarray) is refused naming it
  -> test_calling_a_class_that_builds_nothing_is_refused_naming_it
"""

from __future__ import annotations

import collections
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from engine.formats import open_store
from tests.helpers.pytorch_pickle_builders import (
    DTYPE_F8,
    EMPTY_HOOKS,
    STORAGE,
    call,
    checkpoint,
    from_type,
    in_dict,
    op_global,
    pickle_file,
    plain,
    refusal,
    torch_loaded,
)


def renamed_global(path: Path, old: str, new: str) -> Path:
    """The checkpoint at ``path`` with its pickle's GLOBAL ``old`` spelled ``new`` (protocol 2: no frames)."""
    out = path.with_name(f"renamed-{path.name}")
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(out, "w") as target:
        for name in source.namelist():
            data = source.read(name)
            if name.endswith("/data.pkl"):
                data = data.replace(op_global(*old.rsplit(".", 1)), op_global(*new.rsplit(".", 1)))
            target.writestr(name, data)
    return out


@pytest.mark.filterwarnings("ignore:TypedStorage is deprecated")
@pytest.mark.parametrize(("module", "note"), [
    ("torch.storage", None),
    ("torch", "torch.load(weights_only=True) would refuse this file: it names 1 non-weight class "
              "(torch.UntypedStorage), shown here as placeholders; nothing was run"),
])
def test_an_untyped_storage_reads_as_its_bytes_under_either_name(tmp_path: Path, module: str, note: str | None) -> None:
    """torch.save names ``torch.storage.UntypedStorage``; ``torch.UntypedStorage`` is the same class to torch.load,
    which only its safe loader refuses."""
    path = tmp_path / "untyped.pt"
    torch.save({"s": torch.UntypedStorage(3).fill_(7), "w": torch.ones(2)}, path)
    path = renamed_global(path, "torch.storage.UntypedStorage", f"{module}.UntypedStorage")
    expected = bytes(torch.load(path, weights_only=False)["s"])  # our own bytes: no risk
    assert expected == b"\x07" * 3
    with open_store(path) as store:
        assert store.names == ["s", "w"]
        assert store.read("s").tobytes() == expected and store.read("s").dtype == np.uint8
        assert store.note == note


@pytest.mark.parametrize("module", ["torch", "torch.storage"])
def test_a_typed_storage_persistent_id_is_refused_for_lacking_an_element_type(tmp_path: Path, module: str) -> None:
    storage = b"(" + plain("storage") + op_global(module, "TypedStorage") + plain("0") + plain("cpu") + plain(4) + b"tQ"
    ops = in_dict("w", call(op_global("torch._utils", "_rebuild_tensor_v2"), storage, plain(0), plain((4,)),
                            plain((1,)), plain(False), EMPTY_HOOKS))
    assert refusal(checkpoint(tmp_path / "typed.pt", ops)) == \
        f"storage type {module}.TypedStorage does not say its element type"


NDARRAY_ARGS = b"(" + op_global("numpy", "ndarray") + plain((0,)) + plain(b"b") + b"t"
NDARRAY_STATE = b"(" + plain(1) + plain((2,)) + DTYPE_F8 + plain(False) + plain(np.array([0.5, 2.0]).tobytes()) + b"tb"
COUNTER = {"a": 1}
ENCODE_ARGS = b"(" + plain("abc") + plain("latin1") + b"t"  # _codecs.encode("abc", "latin1"): b"abc"
SCALAR_ARGS = b"(" + DTYPE_F8 + plain(np.float64(0.25).tobytes()) + b"t"  # numpy scalar(float64, bytes): 0.25


def counter_args(builtins: str) -> bytes:
    """``(collections.Counter, dict, {"a": 1})``: a dict subclass as protocols 0 and 1 pickle it."""
    return b"(" + op_global("collections", "Counter") + op_global(builtins, "dict") + plain(COUNTER) + b"t"


@pytest.mark.parametrize(("module", "name", "args", "after", "shown"), [
    ("_codecs", "encode", ENCODE_ARGS, b"", "616263"),
    ("numpy.core.multiarray", "scalar", SCALAR_ARGS, b"", 0.25),
    ("numpy._core.multiarray", "scalar", SCALAR_ARGS, b"", 0.25),
    ("numpy.core.multiarray", "_reconstruct", NDARRAY_ARGS, NDARRAY_STATE, None),
    ("numpy._core.multiarray", "_reconstruct", NDARRAY_ARGS, NDARRAY_STATE, None),
    ("copyreg", "_reconstructor", counter_args("builtins"), b"",
     {"__class__": "collections.Counter", "__items__": COUNTER}),
    ("copy_reg", "_reconstructor", counter_args("__builtin__"), b"",
     {"__class__": "collections.Counter", "__items__": COUNTER}),
])
def test_a_subclass_rebuilt_by_a_builder_function_reads_as_torch_reads_it(
        tmp_path: Path, module: str, name: str, args: bytes, after: bytes, shown: object) -> None:
    """torch's ``_rebuild_from_type`` returns ``func(*args)`` as it is when the type is torch.Tensor; ``shown`` is
    the value as listed (None: an array, read by name)."""
    ops = in_dict("x", from_type("_rebuild_from_type", op_global(module, name), args) + after)
    path = checkpoint(tmp_path / "rebuilt.pt", ops)
    expected = torch_loaded(path)["x"]
    with open_store(path) as store:
        if shown is None:
            assert store.names == ["x"]
            np.testing.assert_array_equal(store.read("x"), expected)
            np.testing.assert_array_equal(store.read("x"), [0.5, 2.0])
        else:
            assert store.values == {"x": shown}
            if isinstance(expected, collections.Counter):
                assert shown == {"__class__": "collections.Counter", "__items__": dict(expected)}
            else:
                assert shown == (expected.hex() if isinstance(expected, bytes) else expected)


@pytest.mark.parametrize(("module", "name", "args", "after", "returned"), [
    ("_codecs", "encode", ENCODE_ARGS, b"", "bytes"),
    ("numpy.core.multiarray", "scalar", SCALAR_ARGS, b"", "float"),
])
def test_a_v2_subclass_rebuilt_as_anything_but_a_tensor_is_refused_as_torch_refuses_it(
        tmp_path: Path, module: str, name: str, args: bytes, after: bytes, returned: str) -> None:
    """``_rebuild_from_type_v2`` makes whatever its function returns a subclass with ``as_subclass``: torch.load
    fails on anything but a tensor, and so does this reader, in words rather than
    reading a value torch would refuse."""
    ops = in_dict("x", from_type("_rebuild_from_type_v2", op_global(module, name), args) + after)
    path = checkpoint(tmp_path / "rebuilt.pt", ops)
    with pytest.raises(AttributeError, match="as_subclass"):
        torch_loaded(path)
    assert refusal(path) == f"a tensor subclass's rebuild function returned {returned}, not a tensor"


def test_a_v1_subclass_of_parameter_rebuilt_as_anything_but_a_tensor_is_refused(tmp_path: Path) -> None:
    """``_rebuild_from_type`` returns its function's result as it is only for torch.Tensor; any other type takes
    ``as_subclass``, which only a tensor has."""
    ops = in_dict("x", call(op_global("torch._tensor", "_rebuild_from_type"), op_global("_codecs", "encode"),
                            op_global("torch.nn.parameter", "Parameter"), ENCODE_ARGS, b"}"))
    assert refusal(checkpoint(tmp_path / "rebuilt.pt", ops)) == \
        "a tensor subclass's rebuild function returned bytes, not a tensor"


def test_classes_torch_safe_loader_takes_are_placeholders_without_a_note(tmp_path: Path) -> None:
    """collections.Counter, complex and bytearray are in torch's default safe globals, though this reader keeps
    them as placeholders: the note must not say torch would refuse the file (a false warning would scare
    users off files torch opens)."""
    path = tmp_path / "safe.pt"
    torch.save({"c": collections.Counter(a=1), "z": 1 + 2j, "b": bytearray(b"ab"), "w": torch.ones(2)}, path)
    assert set(torch.load(path, weights_only=True)) == {"c", "z", "b", "w"}
    with open_store(path) as store:
        assert store.names == ["w"]
        assert store.values["c"] == {"__class__": "collections.Counter", "__args__": [{"a": 1}]}
        assert store.values["z"] == {"__class__": "__builtin__.complex", "__args__": [1.0, 2.0]}
        assert store.note is None and store.foreign_classes == ()


V2_TENSOR = op_global("torch._utils", "_rebuild_tensor_v2")


def test_a_v1_subclass_whose_tensor_is_malformed_is_refused_naming_the_file(tmp_path: Path) -> None:
    args = b"(" + STORAGE + plain(0) + plain((4,)) + plain((1, 1)) + plain(False) + EMPTY_HOOKS + b"t"
    ops = in_dict("x", from_type("_rebuild_from_type", V2_TENSOR, args))
    assert refusal(checkpoint(tmp_path / "bad.pt", ops)) == "a tensor has size [4] but stride [1, 1]"  # and its path


def test_a_v1_subclass_rebuild_given_five_arguments_is_refused_naming_it(tmp_path: Path) -> None:
    ops = in_dict("x", call(op_global("torch._tensor", "_rebuild_from_type"), V2_TENSOR, op_global("torch", "Tensor"),
                            plain(()), plain({}), plain(0)))
    assert refusal(checkpoint(tmp_path / "five.pt", ops)) == "_rebuild_from_type takes 4 to 4 arguments, got 5"


def test_a_v1_subclass_of_torch_tensor_by_its_defining_module_returns_what_its_function_built(tmp_path: Path) -> None:
    """``torch._tensor.Tensor`` is torch.Tensor itself: ``_rebuild_from_type`` returns ``func(*args)`` as it is."""
    ops = in_dict("x", call(op_global("torch._tensor", "_rebuild_from_type"), op_global("_codecs", "encode"),
                            op_global("torch._tensor", "Tensor"), ENCODE_ARGS, b"}"))
    path = checkpoint(tmp_path / "rebuilt.pt", ops)
    assert torch_loaded(path)["x"] == b"abc"
    with open_store(path) as store:
        assert store.values == {"x": "616263"}


@pytest.mark.parametrize("module", ["torch", "torch._tensor"])
def test_calling_torch_tensor_is_refused_naming_it(tmp_path: Path, module: str) -> None:
    """torch.Tensor is a subclass's type here, never a builder: a pickle calling it is refused in words, not read as
    a placeholder of an unknown class."""
    path = checkpoint(tmp_path / "call.pt", in_dict("x", call(op_global(module, "Tensor"), plain(2))))
    assert refusal(path) == f"{module}.Tensor cannot be called"


FOUR = np.arange(1, 5, dtype="<f4")  # what checkpoint() stores in storage 0


def test_tensor_types_torch_save_names_read_by_name_without_a_note(tmp_path: Path) -> None:
    tagged = torch.arange(3.0)
    tagged.tag = "kept"  # an attribute: torch pickles the tensor through _rebuild_from_type_v2(..., torch.Tensor, ...)
    path = tmp_path / "types.pt"
    torch.save({"w": tagged, "cpu": torch.FloatTensor, "cuda": torch.cuda.LongTensor}, path)
    assert torch.load(path, weights_only=True)["cpu"] is torch.FloatTensor  # torch's safe loader takes the file
    with open_store(path) as store:
        assert store.names == ["w"]
        np.testing.assert_array_equal(store.read("w"), np.arange(3.0, dtype=np.float32))
        assert store.values == {"cpu": "torch.FloatTensor", "cuda": "torch.cuda.LongTensor"}
        assert store.note is None and store.foreign_classes == ()


TENSOR_V2_ARGS = b"(" + STORAGE + plain(0) + plain((4,)) + plain((1,)) + plain(False) + EMPTY_HOOKS + b"t"


def test_a_subclass_rebuilt_as_torch_tensor_Tensor_reads_as_its_tensor(tmp_path: Path) -> None:
    ops = call(op_global("torch._tensor", "_rebuild_from_type_v2"), op_global("torch._utils", "_rebuild_tensor_v2"),
               op_global("torch._tensor", "Tensor"), TENSOR_V2_ARGS, b"}")
    with open_store(checkpoint(tmp_path / "sub.pt", b"}" + plain("w") + ops + b"s")) as store:
        np.testing.assert_array_equal(store.read("w"), FOUR)


REBUILDS = ("_rebuild_from_type", "_rebuild_from_type_v2")


@pytest.mark.parametrize("inner", REBUILDS)
@pytest.mark.parametrize("outer", REBUILDS)
def test_subclass_rebuilds_nested_in_each_other_read_as_torch_reads_them(tmp_path: Path, outer: str,
                                                                          inner: str) -> None:
    inner_args = b"(" + op_global("torch._utils", "_rebuild_tensor_v2") + op_global("torch", "Tensor") \
        + TENSOR_V2_ARGS + b"}t"
    ops = b"}" + plain("w") + from_type(outer, op_global("torch._tensor", inner), inner_args) + b"s"
    path = checkpoint(tmp_path / "nested.pt", ops)
    expected = torch_loaded(path)["w"].numpy()
    with open_store(path) as store:
        np.testing.assert_array_equal(store.read("w"), expected)
        np.testing.assert_array_equal(store.read("w"), FOUR)


@pytest.mark.parametrize(("module", "name"), [("torch", "FloatTensor"), ("torch.cuda", "DoubleTensor"),
                                              ("torch", "float32"), ("numpy", "ndarray")])
def test_calling_a_class_that_builds_nothing_is_refused_naming_it(tmp_path: Path, module: str, name: str) -> None:
    path = pickle_file(tmp_path / "call.pt", call(op_global(module, name), plain(2)))
    assert refusal(path) == f"{module}.{name} cannot be called"
