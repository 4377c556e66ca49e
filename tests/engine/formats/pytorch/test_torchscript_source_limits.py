"""The TorchScript class-source limits at README's numbers (README "Limits": "class sources under `code/` are read
only for the classes `data.pkl` names, from at most 4,096 files and 64 MiB in all").

test_torchscript_tables.py moves the limits to fit its small archive (so it holds the checks, not the
numbers), and the hostile class `torchscript-classes-5000` holds 4,096 only through its message: nothing pinned
64 MiB or the edge of 4,096. Here the archives sit exactly on them. Each archive is forged as torch lays one out: a root
module `__torch__.root.R` (its source in `code/__torch__/root.py`) whose attributes are objects of classes in other
files, which need not exist (a class without source that is not a module is read as it is, but its file counts).

Promise -> test:
- at most 4,096 source files -> test_4096_class_source_files_are_read_and_one_more_is_refused (checked: a limit of
  4,097 fails it)
- at most 64 MiB of sources in all -> test_64_mib_of_class_sources_are_read_and_one_byte_more_is_refused (checked: a
  limit of 64 MiB + 1 fails it)
- each inflated within the same bounds as `data.pkl` -> test_a_class_source_inflates_within_the_bounds_of_data_pkl
"""

from __future__ import annotations

import pickle
import zipfile
from pathlib import Path

import pytest

from engine.errors import FormatError
from engine.formats import open_store

ROOT_SOURCE = b"class R(Module):\n  __parameters__ = []\n  __buffers__ = []\n"
MiB = 1 << 20


def text(value: str) -> bytes:
    data = value.encode()
    return b"X" + len(data).to_bytes(4, "little") + data


def forged(path: Path, other_files: int, root_source: bytes = ROOT_SOURCE, sources: dict[str, bytes] | None = None,
           root_compression: int = zipfile.ZIP_STORED) -> Path:
    """A root module with one attribute per other class file, ``a{k}`` an object of ``__torch__.m{k}.C``."""
    attributes = b"".join(text(f"a{k}") + f"c__torch__.m{k}\nC\n".encode() + b")\x81" for k in range(other_files))
    data = b"\x80\x02c__torch__.root\nR\n)\x81}(" + text("training") + b"\x88" + attributes + b"ub."
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("m/data.pkl", data, zipfile.ZIP_STORED)
        archive.writestr("m/code/__torch__/root.py", root_source, root_compression)
        for name, source in (sources or {}).items():
            archive.writestr(f"m/code/__torch__/{name}.py", source)
        archive.writestr("m/constants.pkl", pickle.dumps((), protocol=2))
    return path


def test_4096_class_source_files_are_read_and_one_more_is_refused(tmp_path: Path) -> None:
    with open_store(forged(tmp_path / "at.pt", 4095)) as store:  # root.py and 4,095 others: 4,096 files
        assert store.version == "TorchScript" and sum(key.startswith("a") for key in store.values) == 4095
        assert store.values["a4094"] == {"__class__": "__torch__.m4094.C"}
    with pytest.raises(FormatError) as caught:
        open_store(forged(tmp_path / "over.pt", 4096))
    assert str(caught.value) == "over.pt: the TorchScript archive names classes from more than 4096 source files"


def test_64_mib_of_class_sources_are_read_and_one_byte_more_is_refused(tmp_path: Path) -> None:
    root = ROOT_SOURCE + b"#" * (64 * MiB - len(ROOT_SOURCE) - 1) + b"\n"  # exactly 64 MiB
    with open_store(forged(tmp_path / "at.pt", 1, root, {"m0": b""})) as store:
        assert store.values == {"__class__": "__torch__.root.R", "training": True,
                                "a0": {"__class__": "__torch__.m0.C"}}
    with pytest.raises(FormatError) as caught:
        open_store(forged(tmp_path / "over.pt", 1, root, {"m0": b"\n"}))
    assert str(caught.value) == f"over.pt: the TorchScript archive's class sources exceed {64 * MiB} bytes"


def test_a_class_source_inflates_within_the_bounds_of_data_pkl(tmp_path: Path) -> None:
    """Past 16 MiB a deflated member may expand at most 64 times, as data.pkl may (test_limits_promises.py)."""
    root = ROOT_SOURCE + b"#" * (17 * MiB) + b"\n"  # deflates about 1,000 to 1
    with pytest.raises(FormatError) as caught:
        open_store(forged(tmp_path / "bomb.pt", 0, root, root_compression=zipfile.ZIP_DEFLATED))
    assert str(caught.value).startswith("bomb.pt: zip entry 'm/code/__torch__/root.py' would expand ")
    assert str(caught.value).endswith(f"to {len(root)} bytes), over the limit of 64 (a zip bomb?)")
