"""The allowlist: keyed by module and name together, and each builder rebuilds what torch saved.

The refusals would fail on a one-line slip that looks globals up by name alone; the builders are
checked on files torch itself writes (a tensor carrying attributes, a Parameter with state,
devices) and on the older calls torch no longer writes (``_rebuild_tensor``, ``_rebuild_tensor_v3``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from engine.errors import FormatError
from engine.formats import open_store
from engine.formats.pytorch.allowlist import Placeholder
from engine.formats.pytorch.unpickler import PickleStream, load
from tests.helpers.pytorch_checkpoints import LAYOUTS, Storage, legacy_checkpoint, raw_bytes, save, zip_checkpoint


def unpickle(raw: bytes):
    return load(PickleStream.over_bytes("x.pt", raw))


def global_call(module: str, name: str, protocol: int) -> bytes:
    """A pickle that names ``module.name`` (GLOBAL, or STACK_GLOBAL from protocol 4) and calls it with ()."""
    if protocol < 4:
        return b"\x80\x02c" + module.encode() + b"\n" + name.encode() + b"\n)R."
    text = lambda s: b"\x8c" + bytes([len(s)]) + s.encode()  # noqa: E731 - SHORT_BINUNICODE
    return b"\x80\x04" + text(module) + text(name) + b"\x93)R."


@pytest.mark.parametrize("protocol", [2, 4])
@pytest.mark.parametrize(("module", "name"), [("os", "OrderedDict"), ("builtins", "OrderedDict"),
                                              ("posix", "_rebuild_tensor_v2"), ("subprocess", "set")])
def test_an_allowed_name_in_a_denied_module_is_refused(module: str, name: str, protocol: int) -> None:
    with pytest.raises(FormatError, match=rf"refused to load the global {module}\.{name}: "):
        unpickle(global_call(module, name, protocol))


@pytest.mark.parametrize("protocol", [2, 4])
@pytest.mark.parametrize(("module", "name"), [("evil", "_rebuild_tensor_v2"), ("torch", "_rebuild_tensor_v2"),
                                              ("collections", "set"), ("numpy", "_reconstruct")])
def test_an_allowed_name_in_another_module_is_only_a_placeholder(module: str, name: str, protocol: int) -> None:
    """Looked up by module and name together: the stand-in's builder never runs for a look-alike."""
    found = unpickle(global_call(module, name, protocol))
    assert isinstance(found, Placeholder) and found.qualname == f"{module}.{name}" and found.args == ()


@pytest.mark.parametrize("protocol", [2, 4])
def test_the_same_name_in_its_own_module_is_allowed(protocol: int) -> None:
    assert unpickle(global_call("collections", "OrderedDict", protocol)) == {}
    assert unpickle(global_call("builtins", "set", protocol)) == set()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_tensor_with_attributes_and_parameter_with_state_read_as_their_data(tmp_path: Path, layout: str) -> None:
    """torch pickles these through _rebuild_from_type_v2 and _rebuild_parameter_with_state."""
    plain = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    plain.note = "kept by torch, ignored by us"
    param = torch.nn.Parameter(torch.full((3,), 2.5, dtype=torch.float64))
    param.extra = 1
    path = save({"plain": plain, "param": param}, tmp_path / f"subclass_{layout}.pt", layout)
    with open_store(path) as store:
        assert store.names == ["plain", "param"]
        assert store.entry("plain").shape == (2, 3) and store.entry("param").shape == (3,)
        assert store.read("plain").tobytes() == raw_bytes(plain)
        assert store.read("param").tobytes() == np.full(3, 2.5).tobytes()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_devices_are_kept_as_text_values(tmp_path: Path, layout: str) -> None:
    obj = {"w": torch.ones(2), "on": torch.device("cpu"), "gpu": torch.device("cuda", 1), "size": torch.Size([2, 3])}
    with open_store(save(obj, tmp_path / f"devices_{layout}.pt", layout)) as store:
        assert store.values == {"on": "cpu", "gpu": "cuda:1", "size": [2, 3]}


class CallTensor:
    """Pickles as any rebuild call torch once wrote, with the arguments given."""

    def __init__(self, function, *args):
        self.function, self.args = function, args

    def __reduce__(self):
        return self.function, self.args


def test_the_oldest_rebuild_call_and_v3_with_its_own_dtype_read_exactly(tmp_path: Path) -> None:
    floats = np.arange(8, dtype="<f4")
    halves = np.arange(4, dtype="<f2")
    obj = {"v1": CallTensor(torch._utils._rebuild_tensor, Storage("0", 8), 2, (2, 3), (3, 1)),
           "v3": CallTensor(torch._utils._rebuild_tensor_v3, Storage("1", 8, torch.UntypedStorage), 0, (2, 2), (2, 1),
                            False, {}, torch.float16)}
    path = zip_checkpoint(tmp_path / "old_calls.pt", obj, {"0": floats.tobytes(), "1": halves.tobytes()})
    with open_store(path) as store:
        assert store.read("v1").tobytes() == floats[2:8].tobytes()
        assert store.entry("v3").dtype.name == "F16"
        assert store.read("v3").tobytes() == halves.tobytes()


def test_a_legacy_file_with_the_oldest_rebuild_call_reads_exactly(tmp_path: Path) -> None:
    floats = np.arange(6, dtype="<f4")
    obj = {"w": CallTensor(torch._utils._rebuild_tensor, Storage("9", 6), 0, (3, 2), (1, 3))}
    path = legacy_checkpoint(tmp_path / "legacy_v1.pt", obj, {"9": (6, floats.tobytes())})
    with open_store(path) as store:
        assert store.read("w").tobytes() == np.ascontiguousarray(floats.reshape(2, 3).T).tobytes()


@pytest.mark.parametrize(("obj", "problem"), [
    (CallTensor(torch._utils._rebuild_tensor_v3, Storage("0", 8), 0, (2,), (1,), False, {}, "float16"),
     "_rebuild_tensor_v3 needs a torch dtype"),
    (CallTensor(torch._utils._rebuild_parameter, [1, 2], False, {}), "a parameter's data is list, not a tensor"),
    (CallTensor(torch._tensor._rebuild_from_type_v2, torch._utils._rebuild_tensor_v2, torch.device, (), {}),
     "is not torch.Tensor or Parameter"),
    (CallTensor(torch._tensor._rebuild_from_type_v2, torch.device, torch.Tensor, (), {}),
     "is not a tensor rebuild function"),
    (CallTensor(torch.device, 3), "torch.device takes a name and an optional index"),
    (CallTensor(torch.Size, ("a",)), "torch.Size takes a list of whole numbers"),
    (CallTensor(torch._utils._rebuild_tensor, Storage("0", 8), 0, (2,)), "_rebuild_tensor takes 4 to 4 arguments"),
])
def test_a_builder_given_the_wrong_arguments_says_which(tmp_path: Path, obj, problem: str) -> None:
    path = zip_checkpoint(tmp_path / "bad.pt", {"x": obj}, {"0": bytes(32)})
    with pytest.raises(FormatError, match=problem):
        open_store(path)


def test_torch_itself_reads_the_oldest_rebuild_call_as_we_do(tmp_path: Path) -> None:
    """The hand-written call above is real input: torch.load gives the same values from it."""
    floats = np.arange(8, dtype="<f4")
    obj = {"v1": CallTensor(torch._utils._rebuild_tensor, Storage("0", 8), 2, (2, 3), (3, 1))}
    path = zip_checkpoint(tmp_path / "check.pt", obj, {"0": floats.tobytes()})
    loaded = torch.load(path, weights_only=False)
    assert loaded["v1"].numpy().tobytes() == floats[2:8].tobytes()
