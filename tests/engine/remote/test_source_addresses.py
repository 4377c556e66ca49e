"""What ``open_source`` (engine/formats/source.py) takes: any path-like object, and no address of a scheme Store
Studio does not read, refused in one line that names the file. Without it a library user passing an ``os.DirEntry``
could not open a file, and an ``s3://`` address would fail with a puzzling error instead of saying what to do.

Promises (README, "Remote files"; bad input is one line naming the file) -> tests:
- ``s3://``, ``gs://``, ``ftp://`` ... are refused by their scheme, naming the file
  -> test_another_scheme_is_refused_naming_the_file
- a file opens from any path the library is given (``str``, ``pathlib``, any ``os.PathLike``)
  -> test_any_path_like_object_opens_the_file
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from safetensors.numpy import save_file

from engine import open_store
from tests.refusals import refusal


@pytest.mark.parametrize("address, shown", [("s3://bucket/m.safetensors", "m.safetensors"), ("gs://b/m.bpk", "m.bpk"),
                                            ("ftp://host/dir/m.pt", "m.pt")])
def test_another_scheme_is_refused_naming_the_file(address: str, shown: str) -> None:
    scheme = address.split("://")[0]
    assert refusal(address) == (f"{shown}: {scheme}:// addresses are not read (only http://, https:// and hf://); "
                                "download the file and open it from disk")


def test_any_path_like_object_opens_the_file(tmp_path) -> None:
    save_file({"w": np.arange(3, dtype=np.float32)}, str(tmp_path / "m.safetensors"))
    with os.scandir(tmp_path) as folder:
        (entry,) = list(folder)  # an os.DirEntry: path-like, not a pathlib path
    for where in (entry, tmp_path / "m.safetensors", str(tmp_path / "m.safetensors")):
        with open_store(where) as store:
            assert store.names == ["w"] and store.read("w").tolist() == [0.0, 1.0, 2.0]
