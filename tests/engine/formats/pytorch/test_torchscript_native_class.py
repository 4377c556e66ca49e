"""An object of a native TorchScript class without source is a placeholder, not a refusal (README "PyTorch files",
refused: "A TorchScript module whose class source is missing ... (An object of a native class without source,
such as a `torch.classes` one, is shown as a placeholder.)").

The archive is forged byte by byte as torch lays it out (`m/data.pkl`, `m/code/__torch__/m.py`,
`m/constants.pkl`): a module of class `__torch__.m.C` whose attribute `h` is an object of
`__torch__.torch.classes.x.Handle`, a class no file under code/ defines.

Promise -> test:
- the native object is a placeholder with its class and state, the archive opens ->
  test_a_native_class_without_source_is_a_placeholder (checked: refusing every class without source fails it);
  a module without source is refused -> engine/formats/pytorch/test_pytorch_whole_models.py::test_a_torchscript_module_without_its_class_source_is_refused_saying_why
"""

from __future__ import annotations

import pickle
import zipfile
from pathlib import Path

from engine.formats import open_store

MODULE_SOURCE = b"class C(Module):\n  __parameters__ = []\n  __buffers__ = []\n"


def text(value: str) -> bytes:
    """A BINUNICODE opcode."""
    data = value.encode()
    return b"X" + len(data).to_bytes(4, "little") + data


def test_a_native_class_without_source_is_a_placeholder(tmp_path: Path) -> None:
    handle = b"c__torch__.torch.classes.x\nHandle\n)\x81}(" + text("v") + b"K\x07ub"  # NEWOBJ, BUILD {v: 7}
    data = (b"\x80\x02c__torch__.m\nC\n)\x81}(" + text("training") + b"\x88" + text("_version") + b"K\x01"
            + text("h") + handle + b"ub.")
    path = tmp_path / "native.pt"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("m/data.pkl", data)
        archive.writestr("m/code/__torch__/m.py", MODULE_SOURCE)
        archive.writestr("m/constants.pkl", pickle.dumps((), protocol=2))
    with open_store(path) as store:
        assert store.version == "TorchScript" and store.names == []
        assert store.values == {"__class__": "__torch__.m.C", "training": True,
                                "h": {"__class__": "__torch__.torch.classes.x.Handle", "v": 7}}
