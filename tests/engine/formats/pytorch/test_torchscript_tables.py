"""TorchScript archives read as torch.jit.load reads their weights: what marks an archive as TorchScript, how the class
sources' ``__parameters__``/``__buffers__`` lines sort a module's tensors, shared submodules, and the limits on
the class sources read.

Promises (README, "PyTorch files") -> tests:
- "TorchScript archives ... read as data, its code/ never run" (an archive is TorchScript when it has
  ``constants.pkl`` or ``code/``) -> test_an_archive_with_code_but_no_constants_is_still_torchscript,
  test_an_archive_with_constants_but_no_code_is_refused_as_torchscript
- names as ``torch.jit.load(f).state_dict()`` (parameters, then buffers; a shared submodule under each name)
  -> test_a_shared_submodule_is_listed_under_both_names, test_parameters_and_buffers_are_not_plain_values,
  test_the_class_source_lines_decide_what_is_a_parameter_or_a_buffer (both lines)
- class sources are read as text, whatever their bytes -> test_class_source_that_is_not_utf8_still_reads,
  test_a_table_line_before_any_class_is_ignored, test_an_escaped_quote_in_a_table_name_is_unescaped,
  test_a_class_that_is_not_a_module_stays_an_object
- limits on class sources (files, bytes) -> test_the_class_source_file_limit_is_exact,
  test_the_class_source_byte_limit_is_exact, test_a_module_tree_at_the_depth_limit_reads,
  test_one_module_more_is_refused_by_the_walk,
  test_a_module_tree_past_the_depth_limit_is_refused, test_a_module_that_contains_itself_is_refused_as_a_cycle
"""

from __future__ import annotations

import pickle
import zipfile
from pathlib import Path
from typing import Callable

import pytest
import torch

from engine.errors import FormatError
from engine.formats import open_store
from engine.formats.pytorch import torchscript
from engine.formats.pytorch.unpickler import MAX_DEPTH


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


@pytest.mark.parametrize("line, listed, role", [(b'__parameters__ = ["gain", ]', b'__parameters__ = ["gain", "scale", ]',
                                               "parameter"),
                                              (b'__buffers__ = ["mask", ]', b'__buffers__ = ["mask", "scale", ]', "buffer")])
def test_the_class_source_lines_decide_what_is_a_parameter_or_a_buffer(archive: Path, tmp_path: Path, line: bytes,
                                                                       listed: bytes, role: str) -> None:
    """A class source that lists a plain attribute as a parameter (or a buffer): refused naming it as listed."""
    source = tiny_source(archive)
    path = rewritten(archive, tmp_path / "listed.pt", lambda name, data: data.replace(line, listed)
                     if name == source else data)
    assert b'"scale"' in class_sources(path)[source]
    with pytest.raises(FormatError, match=rf"^listed\.pt: {role} scale of module __torch__\..*Tiny is a float, "
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


MODULE_SOURCE = b"class C(Module):\n  __parameters__ = []\n  __buffers__ = []\n"


def forged_chain(path: Path, modules: int, cyclic: bool = False, source: bytes = MODULE_SOURCE) -> Path:
    """A TorchScript archive whose data.pkl is ``modules`` objects of ``__torch__.m.C``, each the ``c`` child of
    the one before (the last one's ``c`` is the first when ``cyclic``): a flat pickle, so only the module tree is
    deep. Objects are made first and memoized, then each gets its state (BUILD), as torch's pickler does."""
    out = bytearray(b"\x80\x02")
    for i in range(modules):
        out += b"c__torch__.m\nC\n)\x81r" + i.to_bytes(4, "little") + b"0"  # NEWOBJ, LONG_BINPUT i, POP
    for i in range(modules):
        child = i + 1 if i + 1 < modules else (0 if cyclic else None)
        out += b"j" + i.to_bytes(4, "little") + b"}(X\x08\x00\x00\x00training\x88X\x08\x00\x00\x00_versionK\x01"  # LONG_BINGET i,
        # {training: True, _version: 1
        if child is not None:
            out += b"X\x01\x00\x00\x00cj" + child.to_bytes(4, "little")  # , c: object child
        out += b"ub0"  # } SETITEMS, BUILD, POP
    out += b"j\x00\x00\x00\x00."
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("m/data.pkl", bytes(out))
        archive.writestr("m/code/__torch__/m.py", source)
        archive.writestr("m/constants.pkl", pickle.dumps((), protocol=2))
    return path


def test_a_module_tree_at_the_depth_limit_reads(tmp_path: Path) -> None:
    """100 modules: the deepest one's attributes at depth 100, the walk's limit (unpickler.MAX_DEPTH)."""
    with open_store(forged_chain(tmp_path / "deep.pt", MAX_DEPTH)) as store:
        assert store.names == [] and store.version == "TorchScript"
        node = store.values
        for _ in range(MAX_DEPTH - 1):
            assert node["__class__"] == "__torch__.m.C" and node["training"] is True
            node = node["c"]
        assert node == {"__class__": "__torch__.m.C", "training": True}


def test_one_module_more_is_refused_by_the_walk(tmp_path: Path) -> None:
    """101 modules: the tree itself (deepest module at depth 100) is within the converter's limit."""
    with pytest.raises(FormatError) as caught:
        open_store(forged_chain(tmp_path / "deeper.pt", MAX_DEPTH + 1))
    assert str(caught.value) == f"deeper.pt: the checkpoint is nested deeper than {MAX_DEPTH} levels"


def test_a_module_tree_past_the_depth_limit_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FormatError) as caught:
        open_store(forged_chain(tmp_path / "deepest.pt", MAX_DEPTH + 2))
    assert str(caught.value) == f"deepest.pt: the TorchScript module tree is nested deeper than {MAX_DEPTH} levels"


def test_a_module_that_contains_itself_is_refused_as_a_cycle(tmp_path: Path) -> None:
    """Each module object is converted once: a cycle stays a cycle, which the walk then refuses by where it is."""
    with pytest.raises(FormatError) as caught:
        open_store(forged_chain(tmp_path / "cycle.pt", 2, cyclic=True))
    assert str(caught.value) == "cycle.pt: the checkpoint contains itself at c.c"


def test_a_class_that_is_not_a_module_stays_an_object(tmp_path: Path) -> None:
    """Only ``class C(Module):`` sources make a module (whose values hide ``_`` attributes); any other class's
    object keeps every attribute it received."""
    path = forged_chain(tmp_path / "plain.pt", 1, source=b"class C(object):\n  __parameters__ = []\n")
    with open_store(path) as store:
        assert store.values == {"__class__": "__torch__.m.C", "training": True, "_version": 1}
    with open_store(forged_chain(tmp_path / "module.pt", 1)) as store:
        assert store.values == {"__class__": "__torch__.m.C", "training": True}


def test_an_escaped_quote_in_a_table_name_is_unescaped(tmp_path: Path) -> None:
    """torch's printer escapes a name's quotes and backslashes: ``"a\\"b"`` lists the attribute ``a"b``, which is
    then a parameter (here an int, so refused naming it as the table does)."""
    name = 'a"b'
    out = (b"\x80\x02c__torch__.m\nC\n)\x81}(X\x08\x00\x00\x00training\x88X"
           + len(name).to_bytes(4, "little") + name.encode() + b"K\x07ub.")
    path = tmp_path / "quoted.pt"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("m/data.pkl", out)
        archive.writestr("m/code/__torch__/m.py", b'class C(Module):\n  __parameters__ = ["a\\"b", ]\n')
        archive.writestr("m/constants.pkl", pickle.dumps((), protocol=2))
    with pytest.raises(FormatError) as caught:
        open_store(path)
    assert str(caught.value) == 'quoted.pt: parameter a"b of module __torch__.m.C is an int, not a tensor'


