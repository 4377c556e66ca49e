"""A TorchScript archive's `constants.pkl` and `traced_inputs.pkl` are not read (README "PyTorch files",
TorchScript archives: "`constants.pkl` (the code's constants) and `traced_inputs.pkl` are not read"). Both pickles are replaced by ones naming a global on the deny list: were either unpickled, the
file would be refused by that name.

Promise -> test:
- neither pickle is read: the archive opens with the tensors and values of `torch.jit.load(f).state_dict()` ->
  test_hostile_constants_and_traced_inputs_are_never_unpickled (checked: unpickling constants.pkl as the
  archive opens fails it)
"""

from __future__ import annotations

import pickle
import zipfile
from pathlib import Path

import numpy as np
import torch

from engine.formats import open_store

UNREAD = ("/constants.pkl", "/traced_inputs.pkl")


class Scaled(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(3, 2)
        self.register_buffer("shift", torch.arange(2, dtype=torch.float32))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x) * 0.5 + self.shift


class Reduce:
    """Pickles as a call of ``posix.system``: the deny list's first entry, refused by name wherever it is read."""

    def __reduce__(self):
        import posix
        return posix.system, ("touch RAN",)


def test_hostile_constants_and_traced_inputs_are_never_unpickled(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    torch.manual_seed(3)
    plain = tmp_path / "traced.pt"
    torch.jit.trace(Scaled().eval(), torch.randn(4, 3)).save(str(plain))
    expected = torch.jit.load(str(plain)).state_dict()
    hostile = pickle.dumps(Reduce(), protocol=2)
    assert b"posix" in hostile and b"system" in hostile
    forged = tmp_path / "forged.pt"
    with zipfile.ZipFile(plain) as source, zipfile.ZipFile(forged, "w") as target:
        replaced = [name for name in source.namelist() if name.endswith(UNREAD)]
        assert len(replaced) == 2, replaced  # torch.jit.trace writes both
        for info in source.infolist():
            target.writestr(info, hostile if info.filename.endswith(UNREAD) else source.read(info))
    with open_store(forged) as store:
        assert store.version == "TorchScript"
        assert store.names == list(expected)
        for name, tensor in expected.items():
            np.testing.assert_array_equal(store.read(name), tensor.numpy())
    assert not (tmp_path / "RAN").exists()
