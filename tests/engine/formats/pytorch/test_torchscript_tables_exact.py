"""TorchScript archives, exactly (mutation run, issue 25): what marks an archive as TorchScript, how the class
sources' ``__parameters__``/``__buffers__`` lines sort a module's tensors, shared submodules, and the limits on
the class sources read.

Promises (README, "PyTorch files") -> tests:
- "TorchScript archives ... read as data, its code/ never run" (an archive is TorchScript when it has
  ``constants.pkl`` or ``code/``) -> test_an_archive_with_code_but_no_constants_is_still_torchscript,
  test_an_archive_with_constants_but_no_code_is_refused_as_torchscript
- names as ``torch.jit.load(f).state_dict()`` (parameters, then buffers; a shared submodule under each name)
  -> test_a_shared_submodule_is_listed_under_both_names, test_parameters_and_buffers_are_not_plain_values,
  test_the_parameters_line_decides_what_is_a_parameter
- class sources are read as text, whatever their bytes -> test_class_source_that_is_not_utf8_still_reads,
  test_a_table_line_before_any_class_is_ignored
- limits on class sources (files, bytes) -> test_the_class_source_file_limit_is_exact,
  test_the_class_source_byte_limit_is_exact
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Callable

import pytest
import torch

from engine.errors import FormatError
from engine.formats import open_store
from engine.formats.pytorch import torchscript


class Tiny(torch.nn.Module):
    """A module whose Linear is shared under two names, with a buffer and plain attributes."""

    def __init__(self) -> None:
        super().__init__()
        shared = torch.nn.Linear(2, 2)
        self.a = shared
        self.b = shared
        self.register_buffer("mask", torch.ones(2))
        self.gain = torch.nn.Parameter(torch.full((2,), 3.0))
        self.scale = 1.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(self.a(x)) * self.mask * self.gain * self.scale


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(3)
    path = tmp_path_factory.mktemp("ts") / "tiny.pt"
    torch.jit.script(Tiny()).save(str(path))
    return path


def rewritten(source: Path, target: Path, change: Callable[[str, bytes], bytes | None]) -> Path:
    """A copy of a zip whose entries ``change(name, data)`` rewrites (None drops the entry)."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for info in old.infolist():
            data = change(info.filename, old.read(info))
            if data is not None:
                new.writestr(info, data)
    return target


def class_sources(path: Path) -> dict[str, bytes]:
    """The archive's class source files (not the debug pickles), by name."""
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist() if "/code/" in name and name.endswith(".py")}


def tiny_source(path: Path) -> str:
    return next(name for name, data in class_sources(path).items() if b"class Tiny(Module)" in data)


def test_the_archive_reads_as_jit_load_state_dict(archive: Path) -> None:
    expected = torch.jit.load(str(archive)).state_dict()
    with open_store(archive) as store:
        assert store.version == "TorchScript"
        assert list(store.names) == list(expected)
        for name, tensor in expected.items():
            assert store.read(name).tolist() == tensor.tolist(), name


def test_a_shared_submodule_is_listed_under_both_names(archive: Path) -> None:
    with open_store(archive) as store:
        assert list(store.names) == ["gain", "mask", "a.weight", "a.bias", "b.weight", "b.bias"]
        assert store.read("a.weight").tolist() == store.read("b.weight").tolist()
        assert store.values["a"]["__class__"] == store.values["b"]["__class__"]
        assert store.values["a"]["__class__"].startswith("__torch__.torch.nn.modules.linear.")


def test_parameters_and_buffers_are_not_plain_values(archive: Path) -> None:
    """Only the plain attributes show as values: a tensor never appears there as a "not in the state_dict" note."""
    with open_store(archive) as store:
        assert store.values["__class__"].startswith("__torch__.") and store.values["__class__"].endswith(".Tiny")
        assert store.values["scale"] == 1.5 and store.values["training"] is True
        assert "gain" not in store.values and "mask" not in store.values
        assert "<tensor" not in repr(store.values)


def test_an_archive_with_code_but_no_constants_is_still_torchscript(archive: Path, tmp_path: Path) -> None:
    path = rewritten(archive, tmp_path / "no_constants.pt",
                     lambda name, data: None if name.endswith("/constants.pkl") else data)
    with open_store(path) as store:
        assert store.version == "TorchScript"
        assert list(store.names) == ["gain", "mask", "a.weight", "a.bias", "b.weight", "b.bias"]


def test_an_archive_with_constants_but_no_code_is_refused_as_torchscript(archive: Path, tmp_path: Path) -> None:
    """Without code/ the tables are missing: refused, not read as a pickle of unknown classes."""
    path = rewritten(archive, tmp_path / "no_code.pt", lambda name, data: None if "/code/" in name else data)
    with pytest.raises(FormatError, match=r"^no_code\.pt: the TorchScript archive has no source for class "
                                          r"__torch__\..*Tiny \(in code/__torch__/.*\.py\): its parameters "
                                          r"cannot be told from its buffers$"):
        open_store(path)


def test_the_parameters_line_decides_what_is_a_parameter(archive: Path, tmp_path: Path) -> None:
    """A class source that lists a plain attribute as a parameter: refused naming it a parameter (not a buffer)."""
    source = tiny_source(archive)
    path = rewritten(archive, tmp_path / "listed.pt", lambda name, data: data.replace(
        b'__parameters__ = ["gain", ]', b'__parameters__ = ["gain", "scale", ]') if name == source else data)
    assert b'"scale"' in class_sources(path)[source]
    with pytest.raises(FormatError, match=r"^listed\.pt: parameter scale of module __torch__\..*Tiny is a float, "
                                          r"not a tensor$"):
        open_store(path)


def test_class_source_that_is_not_utf8_still_reads(archive: Path, tmp_path: Path) -> None:
    source = tiny_source(archive)
    path = rewritten(archive, tmp_path / "latin.pt",
                     lambda name, data: data + b"\n# caf\xe9\n" if name == source else data)
    with open_store(path) as store:
        assert list(store.names) == ["gain", "mask", "a.weight", "a.bias", "b.weight", "b.bias"]


def test_a_table_line_before_any_class_is_ignored(archive: Path, tmp_path: Path) -> None:
    source = tiny_source(archive)
    path = rewritten(archive, tmp_path / "early.pt",
                     lambda name, data: b'  __parameters__ = ["scale", ]\n' + data if name == source else data)
    with open_store(path) as store:
        assert list(store.names) == ["gain", "mask", "a.weight", "a.bias", "b.weight", "b.bias"]


def read_sources(path: Path) -> list[str]:
    """The class source files the reader opens for this archive (its own class's and Linear's)."""
    return sorted(name for name, data in class_sources(path).items()
                  if b"class Tiny(Module)" in data or b"class Linear(Module)" in data)


def test_the_class_source_file_limit_is_exact(archive: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = len(read_sources(archive))
    assert files == 2
    monkeypatch.setattr(torchscript, "MAX_CODE_FILES", files)
    with open_store(archive) as store:
        assert len(store.names) == 6
    monkeypatch.setattr(torchscript, "MAX_CODE_FILES", files - 1)
    with pytest.raises(FormatError, match=r"^tiny\.pt: the TorchScript archive names classes from more than 1 "
                                          r"source files$"):
        open_store(archive)


def test_the_class_source_byte_limit_is_exact(archive: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sources = class_sources(archive)
    total = sum(len(sources[name]) for name in read_sources(archive))
    monkeypatch.setattr(torchscript, "MAX_CODE_BYTES", total)
    with open_store(archive) as store:
        assert len(store.names) == 6
    monkeypatch.setattr(torchscript, "MAX_CODE_BYTES", total - 1)
    with pytest.raises(FormatError, match=rf"^tiny\.pt: the TorchScript archive's class sources exceed {total - 1} "
                                          r"bytes$"):
        open_store(archive)
