"""A file that changes while it is open (a training job saving in place) is caught: every read
after the change is a FormatError saying so, never a SIGBUS, never the other file's bytes."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from engine import ArrayStore, FormatError, export, open_store
from tests.helpers import hard_child as child

ARRAYS = {f"layer{i}.weight": np.arange(256 * 64, dtype=np.float32).reshape(256, 64) + i for i in range(4)}

# In a child: open, read every tensor (as a window showing it would), change the file in place,
# then read and stream every tensor again. Each must raise FormatError; a SIGBUS kills the child.
CHANGE_UNDER_OPEN_STORE = """
import os, sys
from engine import FormatError, open_store
path, how = sys.argv[1], sys.argv[2]
store = open_store(path)
before = [store.read(name).copy() for name in store.names]
size = os.path.getsize(path)
if how == "truncate":
    os.truncate(path, size // 3)
else:  # rewritten in place, longer, with other bytes
    with open(path, "r+b") as f:
        f.write(bytes(range(256)) * (size // 256 + 64))
refused = 0
for name in store.names:
    for read in (lambda: store.read(name), lambda: b"".join(store.iter_bytes(name))):
        try:
            read()
        except FormatError as exc:
            assert "changed on disk since it was opened" in str(exc), exc
            refused += 1
print("refused", refused, "of", 2 * len(store.names))
"""


def _files(folder: Path) -> dict[str, Path]:
    export(ArrayStore(ARRAYS).entries, folder / "m.bpk")
    export(ArrayStore(ARRAYS).entries, folder / "m.safetensors")
    tensors = {name: torch.from_numpy(array) for name, array in ARRAYS.items()}
    torch.save(tensors, folder / "m.pt")
    base = torch.arange(128 * 96, dtype=torch.float32).reshape(128, 96)
    torch.save({"t": base.t(), "tail": base[5:, 7:], "step": base[::3, ::2]}, folder / "strided.pt")
    torch.save({"t": base.t(), "tail": base[5:, 7:]}, folder / "strided-legacy.pt", _use_new_zipfile_serialization=False)
    # the paths that read objects of classes nothing imports: a whole model, a TorchScript archive
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.BatchNorm1d(256))
    torch.save({"model": model, "epoch": 1}, folder / "model.pt")
    torch.jit.trace(model.eval(), torch.randn(2, 64)).save(str(folder / "traced.pt"))
    return {p.name: p for p in (folder / "m.bpk", folder / "m.safetensors", folder / "m.pt", folder / "strided.pt",
                                folder / "strided-legacy.pt", folder / "model.pt", folder / "traced.pt")}


@pytest.mark.parametrize("how", ["truncate", "rewrite-longer"])
@pytest.mark.parametrize("name", ["m.bpk", "m.safetensors", "m.pt", "strided.pt", "strided-legacy.pt", "model.pt",
                                  "traced.pt"])
def test_every_read_after_an_in_place_change_is_a_format_error_not_sigbus(name: str, how: str, tmp_path: Path) -> None:
    path = _files(tmp_path)[name]
    with open_store(path) as store:
        count = len(store.names)
        if name.startswith("strided"):  # read through its strides, not as a plain range of the file
            assert store.entry("t").byte_range() is None
    run = child.snippet(CHANGE_UNDER_OPEN_STORE, path, how)
    assert run.status == 0, run.describe()  # -7 would be SIGBUS
    assert f"refused {2 * count} of {2 * count}" in run.output, run.describe()
    assert run.within_limits(), run.describe()


def test_a_strided_tensor_reads_its_own_values_before_any_change(tmp_path: Path) -> None:
    path = _files(tmp_path)["strided.pt"]
    base = np.arange(128 * 96, dtype=np.float32).reshape(128, 96)
    with open_store(path) as store:
        np.testing.assert_array_equal(store.read("t"), base.T)
        np.testing.assert_array_equal(store.read("step"), base[::3, ::2])
        assert not store.read("t").flags.writeable


@pytest.mark.parametrize("name", ["m.bpk", "m.safetensors", "m.pt", "strided.pt", "model.pt", "traced.pt"])
def test_an_export_from_a_file_changed_midway_stops_with_that_error_and_leaves_nothing(name: str,
                                                                                        tmp_path: Path) -> None:
    path = _files(tmp_path)[name]
    dest = tmp_path / "out" / "copy.safetensors"
    dest.parent.mkdir()

    def change_source(done: int, total: int) -> None:
        if os.path.getsize(path) > 100:
            os.truncate(path, 100)

    with open_store(path) as store:
        with pytest.raises(FormatError, match=f"^{name}: changed on disk since it was opened"):
            export(store.entries, dest, progress=change_source)
    assert list(dest.parent.iterdir()) == []


def test_a_file_replaced_by_rename_keeps_reading_its_own_bytes(tmp_path: Path) -> None:
    """Atomic savers write a new file and rename it over: the open one is another inode, still whole."""
    path = _files(tmp_path)["m.safetensors"]
    with open_store(path) as store:
        replacement = tmp_path / "new.safetensors"
        export(ArrayStore({"other": np.zeros(3, np.float32)}).entries, replacement)
        os.replace(replacement, path)
        np.testing.assert_array_equal(store.read("layer2.weight"), ARRAYS["layer2.weight"])
