"""Hostile local files, which must not hang the tool or block it on a pipe: a TorchScript archive whose class source
would make a regex backtrack, and names that are no regular file (a FIFO, a device, a socket), as inputs, shards,
templates, the other file of a diff, recipe files and where a recipe is saved. Each is run as the command line in a
child process (``tests/helpers/hard_child.py``): it must end in one line (exit 1), or convert, within 2 s of CPU and
300 MiB, and a hang is killed after ``child.TIMEOUT`` and fails the test, never a test run that waits for ever.

Promise -> test (README, "Limits"):
- TorchScript class sources are scanned in linear time: a reported 3 KB archive and 300 KB of hostile text
  in `code/` open or are refused within 2 s of CPU -> test_hostile_class_source_opens_or_is_refused_within_limits
- only regular files are opened: a FIFO, a device or a socket is refused at once, naming the file, as an input,
  a shard (SafeTensors or PyTorch index), a template, diff's other file and a recipe
  -> test_a_name_that_is_no_regular_file_is_refused_at_once, test_a_shard_that_is_no_regular_file_is_refused_at_once,
  test_a_fifo_in_any_role_is_refused_at_once, test_a_pytorch_shard_that_is_a_fifo_is_refused_at_once
- a recipe is saved only into a file -> test_a_recipe_is_never_saved_into_a_fifo_or_a_device
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
from safetensors.numpy import save_file

from tests.helpers import hard_child as child
from tests.helpers.special_files import a_socket

KB = 300_000  # bytes of hostile text in one class source
MODULE_HEAD = "class M(Module):\n  __parameters__ = []\n"
REFUSED = "the __buffers__ line of class M is not a list of quoted names"
# class source -> what the one line says (None: converts). Each is about 300 KB, deflated in the archive.
SOURCES: dict[str, tuple[str, str | None]] = {
    "issue-escaped-quotes": (MODULE_HEAD + '  __buffers__ = ["b", "' + '\\"' * 150_000 + "]\n", REFUSED),
    "escaped-quotes-unclosed": (MODULE_HEAD + '  __buffers__ = ["b", "' + '\\"' * 150_000 + "\n", REFUSED),
    "quotes": (MODULE_HEAD + "  __buffers__ = [" + '"' * KB + "]\n", REFUSED),
    "backslashes": (MODULE_HEAD + '  __buffers__ = ["' + "\\" * KB + "]\n", REFUSED),
    "backslashes-closed": (MODULE_HEAD + '  __buffers__ = ["b", "' + "\\" * (KB + 1) + '"]\n', REFUSED),
    "names-unclosed": (MODULE_HEAD + "  __buffers__ = [" + '"b", ' * (KB // 5) + "\n", REFUSED),
    "commas": (MODULE_HEAD + "  __buffers__ = [" + ", " * (KB // 2) + "]\n", REFUSED),
    "brackets": (MODULE_HEAD + "  __buffers__ = " + "[" * KB + "]\n", REFUSED),
    "names": (MODULE_HEAD + "  __buffers__ = [" + '"b", ' * (KB // 5) + "]\n", None),
    "escaped-names": (MODULE_HEAD + "  __buffers__ = [" + '"\\"", ' * (KB // 6) + '"b", ]\n', None),
    "table-lines": (MODULE_HEAD + '  __buffers__ = ["b", ]\n' * (KB // 24), None),
    "huge-line": (MODULE_HEAD + '  __buffers__ = ["b", ]\n' + "#" * KB + "\n", None),
    "spaces": (MODULE_HEAD + '  __buffers__ = ["b", ]\n' + " " * KB + "__buffers__ = []\n", None),
    "class-lines": ("class C(Module):\n  __buffers__ = []\n" * (KB // 36) + MODULE_HEAD + '  __buffers__ = ["b", ]\n',
                    None),
    "class-word": ("class " + "a" * KB + "\n" + MODULE_HEAD + '  __buffers__ = ["b", ]\n', None),
}


@pytest.fixture(scope="module")
def scripted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real torch.jit.save archive of a module ``M`` with a Linear child and one buffer ``b``."""
    import torch

    class M(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(2, 2)
            self.register_buffer("b", torch.ones(2))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.lin(x) * self.b

    path = tmp_path_factory.mktemp("scripted") / "real.pt"
    torch.jit.script(M()).save(str(path))
    return path


def class_source_of_m(archive: Path) -> str:
    """The name under ``code/`` of the file holding ``class M(Module)`` (it follows the test module's name)."""
    with zipfile.ZipFile(archive) as zipped:
        name = next(n for n in zipped.namelist() if n.endswith(".py") and b"class M(Module):" in zipped.read(n))
    return name.split("/code/", 1)[1]


def with_class_source(archive: Path, target: Path, source: str) -> Path:
    """A copy of ``archive`` whose class source of ``M`` is ``source``, deflated as torch deflates it."""
    replaced = "/code/" + class_source_of_m(archive)
    with zipfile.ZipFile(archive) as old, zipfile.ZipFile(target, "w") as new:
        for info in old.infolist():
            new.writestr(info, source.encode() if info.filename.endswith(replaced) else old.read(info))
    return target


def one_line(run: child.Run) -> str:
    lines = run.output.strip().splitlines()
    assert run.status == 1 and len(lines) == 1 and "Traceback" not in run.output, run.describe()
    return lines[0]


@pytest.mark.parametrize("label", sorted(SOURCES))
def test_hostile_class_source_opens_or_is_refused_within_limits(scripted: Path, tmp_path: Path, label: str) -> None:
    source, refuses = SOURCES[label]
    path = with_class_source(scripted, tmp_path / "hostile.pt", source)
    out = tmp_path / "out.safetensors"
    run = child.cli("convert", path, out)
    if refuses is None:
        assert run.status == 0, run.describe()
        assert out.stat().st_size > 0
    else:
        assert one_line(run) == (f"store-studio: hostile.pt: the TorchScript archive's code/{class_source_of_m(path)}: "
                                 f"{refuses}")
        assert not out.exists()
    assert run.within_limits(), run.describe()


def text(value: str) -> bytes:
    data = value.encode()
    return b"X" + len(data).to_bytes(4, "little") + data


def test_a_long_table_against_many_attributes_reads_within_limits(tmp_path: Path) -> None:
    """30,000 buffer names against 30,000 attributes: each attribute is looked up in a set, not scanned for in the
    list (all to all, that was 900 million comparisons)."""
    count = 30_000
    attributes = b"".join(text(f"a{i}") + b"K\x01" for i in range(count))
    data = b"\x80\x02c__torch__\nM\n)\x81}(" + text("training") + b"\x88" + attributes + b"ub."
    source = MODULE_HEAD + "  __buffers__ = [" + "".join(f'"p{i}", ' for i in range(count)) + "]\n"
    path = tmp_path / "wide.pt"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("a/data.pkl", data, zipfile.ZIP_STORED)
        archive.writestr("a/code/__torch__.py", source)
        archive.writestr("a/constants.pkl", b"\x80\x02).")
    run = child.snippet("import sys\nfrom engine import open_store\nwith open_store(sys.argv[1]) as s:\n"
                        "    print(len(s.names), len(s.values))", path)
    assert run.status == 0 and run.output.split() == ["0", str(count + 2)], run.describe()
    assert run.within_limits(), run.describe()


def test_the_issues_archive_is_3_kb(scripted: Path, tmp_path: Path) -> None:
    """The reported case as it was sent: 150,000 escaped quotes deflate to a 3 KB file, so a small download can
    carry the hostile text."""
    path = with_class_source(scripted, tmp_path / "small.pt", SOURCES["issue-escaped-quotes"][0])
    assert path.stat().st_size < 4_000


def a_named_socket(folder: Path) -> Path:
    return a_socket(folder, "sock.safetensors")


def a_fifo(folder: Path) -> Path:
    os.mkfifo(folder / "pipe.safetensors")
    return folder / "pipe.safetensors"




def a_link_to(target: str) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        (folder / "link.safetensors").symlink_to(target)
        return folder / "link.safetensors"
    return make


@pytest.mark.parametrize("make, says", [
    (a_fifo, "pipe.safetensors: is a FIFO, not a regular file"),
    (a_named_socket, "sock.safetensors: is a socket, not a regular file"),
    (lambda folder: Path("/dev/zero"), "zero: is a device, not a regular file"),
    (lambda folder: Path("/dev/null"), "null: is a device, not a regular file"),
    (a_link_to("/dev/zero"), "link.safetensors: is a device, not a regular file"),
], ids=["fifo", "socket", "dev-zero", "dev-null", "link-to-dev-zero"])
@pytest.mark.parametrize("command", ["inspect", "convert"])
def test_a_name_that_is_no_regular_file_is_refused_at_once(tmp_path: Path, make: Callable[[Path], Path], says: str,
                                                          command: str) -> None:
    path = make(tmp_path)
    args = [command, path, *([tmp_path / "out.bpk"] if command == "convert" else [])]
    assert one_line(child.cli(*args)) == f"store-studio: {says}"
    assert not (tmp_path / "out.bpk").exists()


def safetensors_shards(folder: Path, second: Callable[[Path], Path], suffix: str = ".safetensors") -> Path:
    """An index of two shards: ``a`` in a real SafeTensors file, ``b`` in ``second(folder)`` (renamed to the
    shard's name when it is a FIFO or a link, so the index names it)."""
    save_file({"a": np.ones(2, np.float32)}, str(folder / f"model-1{suffix}"))
    other = second(folder)
    index = {"metadata": {}, "weight_map": {"a": f"model-1{suffix}", "b": other.name}}
    (folder / f"model{suffix}.index.json").write_text(json.dumps(index))
    return folder / f"model{suffix}.index.json"


@pytest.mark.parametrize("make, says", [
    (a_fifo, "pipe.safetensors: is a FIFO, not a regular file"),
    (a_named_socket, "sock.safetensors: is a socket, not a regular file"),
    (a_link_to("/dev/zero"), "link.safetensors: is a device, not a regular file"),
], ids=["fifo", "socket", "link-to-dev-zero"])
def test_a_shard_that_is_no_regular_file_is_refused_at_once(tmp_path: Path, make: Callable[[Path], Path],
                                                           says: str) -> None:
    index = safetensors_shards(tmp_path, make)
    assert one_line(child.cli("convert", index, tmp_path / "out.bpk")) == f"store-studio: {says}"
    assert not (tmp_path / "out.bpk").exists()


def test_a_pytorch_shard_that_is_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    """An index of PyTorch ``.bin`` shards opens each shard by its own bytes (``_open_other_shards``)."""
    import torch
    torch.save({"a": torch.ones(2)}, tmp_path / "model-1.bin")
    os.mkfifo(tmp_path / "model-2.bin")
    index = {"weight_map": {"a": "model-1.bin", "b": "model-2.bin"}}
    (tmp_path / "pytorch_model.bin.index.json").write_text(json.dumps(index))
    run = child.cli("inspect", tmp_path / "pytorch_model.bin.index.json")
    assert one_line(run) == "store-studio: model-2.bin: is a FIFO, not a regular file"


@pytest.mark.parametrize("role", ["template", "diff-other", "recipe", "recipe-command"])
def test_a_fifo_in_any_role_is_refused_at_once(tmp_path: Path, role: str) -> None:
    model = tmp_path / "a.safetensors"
    save_file({"a": np.ones(2, np.float32)}, str(model))
    pipe = a_fifo(tmp_path)
    args, says = {
        "template": (["convert", model, tmp_path / "o.bpk", "--template", pipe],
                     "pipe.safetensors: is a FIFO, not a regular file"),
        "diff-other": (["diff", model, pipe], "pipe.safetensors: is a FIFO, not a regular file"),
        "recipe": (["convert", "--recipe", pipe, model, tmp_path / "o.bpk"],
                   f"{pipe}: cannot read the recipe: is a FIFO, not a regular file"),
        "recipe-command": (["recipe", pipe], f"{pipe}: cannot read the recipe: is a FIFO, not a regular file"),
    }[role]
    assert one_line(child.cli(*args)) == f"store-studio: {says}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.safetensors", "pipe.safetensors"]


@pytest.mark.parametrize("make, says", [
    (a_fifo, "pipe.safetensors is a FIFO, not a file: choose a file name to export to"),
    (lambda folder: Path("/dev/null"), "null is a device, not a file: choose a file name to export to"),
], ids=["fifo", "dev-null"])
def test_a_recipe_is_never_saved_into_a_fifo_or_a_device(tmp_path: Path, make: Callable[[Path], Path],
                                                          says: str) -> None:
    """``--save-recipe`` into a FIFO nobody reads would block for ever, and into /dev/null would lose the recipe."""
    model = tmp_path / "a.safetensors"
    save_file({"a": np.ones(2, np.float32)}, str(model))
    run = child.cli("convert", model, tmp_path / "o.bpk", "--save-recipe", make(tmp_path), "--overwrite")
    assert one_line(run) == f"store-studio: {says}"
    assert not (tmp_path / "o.bpk").exists()


@pytest.mark.parametrize("tail", [b"", b"\\"], ids=["unclosed", "unclosed-backslash"])
def test_a_too_deep_header_ending_in_an_unclosed_string_of_escaped_quotes_is_refused_within_limits(
        tmp_path: Path, tail: bytes) -> None:
    """The nesting refusal measures the header's depth outside its strings; 200,000 escaped quotes in a string
    that never closes made that measure restart at each quote (40 KB: 5 s of CPU)."""
    header = b'{"a":' + b"[" * 1000 + b'"' + b'\\"' * 200_000 + tail
    path = tmp_path / "deep.safetensors"
    path.write_bytes(len(header).to_bytes(8, "little") + header)
    run = child.cli("inspect", path)
    assert one_line(run) == "store-studio: deep.safetensors: header is nested deeper than 64 levels (1001 levels)"
    assert run.within_limits(), run.describe()
