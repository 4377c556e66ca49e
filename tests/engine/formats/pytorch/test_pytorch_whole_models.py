"""Whole pickled modules (``torch.save(model)``) and TorchScript archives (``torch.jit.save``) read as data.

Names and values must equal ``model.state_dict()`` (``torch.jit.load(f).state_dict()`` for
TorchScript), for classes this process could not import when reading: the user's own classes
are written from a module that exists only while torch saves, then removed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import types
import zipfile
from pathlib import Path

import pytest
import torch

from engine.errors import FormatError
from engine.formats import open_store
from tests.helpers.pytorch_checkpoints import LAYOUTS, raw_bytes, save

ROOT = Path(__file__).parents[4]


def user_module() -> types.ModuleType:
    """``userproj.nets``: classes of a training project, importable only while the test saves."""
    module = types.ModuleType("userproj.nets")

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv1d(2, 3, 2, bias=False)  # a None parameter: not in the state_dict
            self.norm = torch.nn.BatchNorm1d(3)
            self.register_buffer("scratch", torch.zeros(2), persistent=False)
            self.register_buffer("kept", torch.arange(3.0))
            self.hidden = torch.ones(2)  # a plain tensor attribute: not in the state_dict either
            self.depth = 2

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = torch.nn.Embedding(5, 4)
            self.blocks = torch.nn.ModuleList([Block(), Block()])
            self.heads = torch.nn.ModuleDict({"cls": torch.nn.Linear(4, 5), "aux": torch.nn.Sequential(
                torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))})
            self.heads["cls"].weight = self.embed.weight  # tied: listed under both names, like state_dict()
            self.name = "tiny"

    for cls in (Block, Net):
        cls.__module__, cls.__qualname__ = module.__name__, cls.__name__
        setattr(module, cls.__name__, cls)
    return module


def saved_with_user_classes(obj_of, path: Path, layout: str) -> tuple[Path, dict[str, torch.Tensor]]:
    module = user_module()
    sys.modules["userproj"] = types.ModuleType("userproj")
    sys.modules[module.__name__] = module
    try:
        torch.manual_seed(0)
        model = module.Net()
        save(obj_of(model), path, layout)
        return path, {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}
    finally:
        del sys.modules[module.__name__], sys.modules["userproj"]


def assert_state_dict(store, expected: dict[str, torch.Tensor], prefix: str = "") -> None:
    if not prefix:
        assert store.names == list(expected)
    for name, tensor in expected.items():
        assert store.entry(prefix + name).shape == tuple(tensor.shape)
        assert store.read(prefix + name).tobytes() == raw_bytes(tensor), name


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_bare_pickled_model_of_unimportable_classes_lists_its_state_dict(tmp_path: Path, layout: str) -> None:
    path, expected = saved_with_user_classes(lambda model: model, tmp_path / f"bare_{layout}.pt", layout)
    with pytest.raises(ModuleNotFoundError):  # the classes really are gone: torch itself cannot load it now
        torch.load(path, weights_only=False)
    with open_store(path) as store:
        assert_state_dict(store, expected)
        assert "blocks.0.scratch" not in store.names and "blocks.0.conv.bias" not in store.names
        assert store.values["__class__"] == "userproj.nets.Net" and store.values["name"] == "tiny"
        assert store.values["blocks"]["0"]["depth"] == 2
        assert store.values["blocks"]["0"]["hidden"].startswith("<tensor blocks.0.hidden, not in")
        assert "userproj.nets.Block" in store.foreign_classes
        assert "torch.load(weights_only=True) would refuse this file" in store.note


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_model_inside_a_checkpoint_is_prefixed_by_where_it_sits(tmp_path: Path, layout: str) -> None:
    path, expected = saved_with_user_classes(lambda model: {"model": model, "epoch": 3, "best": [0.5, model]},
                                             tmp_path / f"nested_{layout}.pt", layout)
    with open_store(path) as store:
        assert store.names == [f"model.{n}" for n in expected] + [f"best.1.{n}" for n in expected]
        assert_state_dict(store, expected, "model.")
        assert store.values["epoch"] == 3 and store.values["best"][0] == 0.5


class Halves(torch.nn.Module):
    """A parametrization stored as two tensors: ``original0`` and ``original1``, as weight_norm's."""

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + b

    def right_inverse(self, weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return weight * 0.25, weight * 0.75


def test_parametrizations_list_their_originals(tmp_path: Path) -> None:
    """torch refuses to pickle a parametrized module; a file made with that refusal bypassed still reads."""
    model = torch.nn.Sequential(torch.nn.Linear(3, 4))
    torch.nn.utils.parametrize.register_parametrization(model[0], "weight", Halves())
    cls = type(model[0])
    cls.__getstate__ = lambda self: self.__dict__  # what older torch pickled
    torch.nn.utils.parametrize.ParametrizedLinear = cls
    try:
        path = save(model, tmp_path / "parametrized.pt", "zip")
    finally:
        del torch.nn.utils.parametrize.ParametrizedLinear
    with open_store(path) as store:
        assert "0.parametrizations.weight.original0" in store.names
        assert_state_dict(store, model.state_dict())


def test_a_pickled_module_whose_table_holds_a_refused_global_is_refused(tmp_path: Path) -> None:
    """The deny list holds inside a module's tables too: the global is named, nothing runs."""
    path = tmp_path / "evil_module.pt"
    path.write_bytes(b"\x80\x02ctorch.nn.modules.linear\nLinear\n)\x81}(X\x0b\x00\x00\x00_parameters}"
                     b"X\x06\x00\x00\x00weightcposix\nsystem\nX\x04\x00\x00\x00true\x85Rs"
                     b"X\x08\x00\x00\x00_buffers}X\x08\x00\x00\x00_modules}ub.")
    with pytest.raises(FormatError, match=r"evil_module\.pt: refused to load the global posix\.system"):
        open_store(path)


# --- TorchScript -----------------------------------------------------------------------------------

class Scripted(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(3, 2)
        self.bn = torch.nn.BatchNorm1d(2)
        self.seq = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())
        self.scale = 2.5
        self.label = "run-7"
        self.register_buffer("mask", torch.ones(2))
        self.register_buffer("scratch", torch.zeros(1), persistent=False)
        self.weight = torch.nn.Parameter(torch.full((2,), 0.5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.seq(self.bn(self.fc(x))) * self.scale * self.mask * self.weight


@pytest.mark.parametrize("how", ["script", "trace"])
def test_torchscript_archive_reads_as_jit_load_state_dict(tmp_path: Path, how: str) -> None:
    torch.manual_seed(1)
    model = Scripted().eval()
    compiled = torch.jit.script(model) if how == "script" else torch.jit.trace(model, torch.randn(4, 3))
    path = tmp_path / f"{how}.pt"
    compiled.save(str(path))
    expected = torch.jit.load(str(path)).state_dict()
    with open_store(path) as store:
        assert store.version == "TorchScript"
        assert_state_dict(store, expected)
        assert "TorchScript archive" in store.note and "never run" in store.note
        if how == "script":  # tracing keeps no plain attributes
            assert store.values["scale"] == 2.5 and store.values["label"] == "run-7"


def test_torchscript_code_is_read_as_text_never_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A payload appended to a class source stays text: no file appears, the tensors still read."""
    compiled = torch.jit.script(Scripted())
    plain = tmp_path / "plain.pt"
    compiled.save(str(plain))
    forged = tmp_path / "forged.pt"
    with zipfile.ZipFile(plain) as source, zipfile.ZipFile(forged, "w") as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename.endswith("code/__torch__.py"):
                data += b"\nimport os\nos.system('touch RAN')\nopen('RAN2', 'w')\n"
            target.writestr(info, data)
    monkeypatch.chdir(tmp_path)
    with open_store(forged) as store:
        assert "fc.weight" in store.names
    assert not (tmp_path / "RAN").exists() and not (tmp_path / "RAN2").exists()


@pytest.mark.child
def test_config_prints_placeholders_as_json(tmp_path: Path) -> None:
    """A Lightning-style checkpoint: hyper_parameters as argparse.Namespace, an Enum, a path, numpy values."""
    script = f"""
import argparse, enum, pathlib, sys, numpy as np, torch
class Stage(enum.Enum):
    FIT = "fit"
hp = argparse.Namespace(lr=0.1, layers=[2, 3], stage=Stage.FIT, out=pathlib.PurePosixPath('/runs/7'),
                        eps=np.float32(0.5), dtype=np.dtype('float16'))
torch.save({{"state_dict": {{"w": torch.ones(2)}}, "hyper_parameters": hp}}, sys.argv[1])
"""
    path = tmp_path / "lightning.ckpt.pt"
    subprocess.run([sys.executable, "-c", script, str(path)], check=True)
    result = subprocess.run([sys.executable, "-m", "engine", "config", str(path), "--key", "hyper_parameters"],
                            cwd=ROOT, capture_output=True, text=True, check=True)
    assert json.loads(result.stdout) == {
        "__class__": "argparse.Namespace", "lr": 0.1, "layers": [2, 3],
        "stage": {"__class__": "__main__.Stage", "__args__": ["fit"]},
        "out": {"__class__": "pathlib.PurePosixPath", "__args__": ["/", "runs", "7"]},
        "eps": 0.5, "dtype": "float16"}
    inspected = subprocess.run([sys.executable, "-m", "engine", "inspect", str(path), "--json"], cwd=ROOT,
                               capture_output=True, text=True, check=True)
    summary = json.loads(inspected.stdout)
    assert [t["name"] for t in summary["tensors"]] == ["state_dict.w"]
    assert "argparse.Namespace" in summary["note"] and "weights_only=True" in summary["note"]


def test_a_quantized_tensor_is_refused_saying_so(tmp_path: Path) -> None:
    path = tmp_path / "quantized.pt"
    torch.save({"q": torch.quantize_per_tensor(torch.ones(3), 0.1, 0, torch.qint8)}, path)
    with pytest.raises(FormatError, match=r"^quantized\.pt: the checkpoint holds a kind of tensor this reader does not "
                                          r"decode \(torch\._utils\._rebuild_qtensor: quantized"):
        open_store(path)


class Tagged(torch.Tensor):
    """A user's tensor subclass: saved through _rebuild_from_type_v2 with its class."""


def test_a_tensor_subclass_of_an_unimportable_class_reads_as_its_tensor(tmp_path: Path) -> None:
    path = tmp_path / "subclass.pt"
    tensor = torch.arange(4.0).as_subclass(Tagged)
    torch.save({"t": tensor}, path)
    with open_store(path) as store:
        assert store.names == ["t"] and store.read("t").tolist() == [0.0, 1.0, 2.0, 3.0]
        assert any(name.endswith("Tagged") for name in store.foreign_classes)


def _without_class_source(source: Path, target: Path, class_name: str) -> Path:
    """A copy of a TorchScript archive without the code file that defines ``class_name``.

    Which file that is depends on what the process scripted before (TorchScript mangles a class scripted
    twice into ``___torch_mangle_N``), so it is found by content, not by a fixed path.
    """
    with zipfile.ZipFile(source) as archive, zipfile.ZipFile(target, "w") as out:
        for info in archive.infolist():
            data = archive.read(info)
            if not (info.filename.endswith(".py") and f"class {class_name}".encode() in data):
                out.writestr(info, data)
    return target


def test_a_torchscript_module_without_its_class_source_is_refused_saying_why(tmp_path: Path) -> None:
    plain = tmp_path / "plain.pt"
    torch.jit.script(Scripted()).save(str(plain))
    path = _without_class_source(plain, tmp_path / "no_source.pt", "BatchNorm1d")
    with pytest.raises(FormatError, match=r"^no_source\.pt: the TorchScript archive has no source for class "
                                          r"__torch__\.torch\.nn\.modules\.batchnorm\.(___torch_mangle_\d+\.)?BatchNorm1d .*cannot be told"):
        open_store(path)
