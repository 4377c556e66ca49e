"""The File panel on each kind of checkpoint that used to be refused: its structure, its classes, the warning."""

from __future__ import annotations

import argparse

import numpy as np
import torch
from PySide6.QtWidgets import QGroupBox, QLabel, QTreeWidgetItem

from tests.helpers.pytorch_python2_pickles import (
    legacy_file,
    ordered_dict,
    s,
    storage_pid,
    tensor_v2,
)


def _texts(view) -> list[str]:
    return [label.text() for label in view.file_info.findChildren(QLabel)]


def _children(item) -> dict[str, QTreeWidgetItem]:
    if hasattr(item, "topLevelItemCount"):
        return {item.topLevelItem(i).text(0): item.topLevelItem(i) for i in range(item.topLevelItemCount())}
    return {item.child(i).text(0): item.child(i) for i in range(item.childCount())}


def _foreign(view) -> list[str]:
    boxes = [box for box in view.file_info.findChildren(QGroupBox) if box.objectName() == "foreignClasses"]
    return boxes[0].findChild(QLabel).text().splitlines() if boxes else []


def test_python2_checkpoint_shows_its_tensors_and_no_warning(open_view, tmp_path):
    path = legacy_file(tmp_path / "py2.pth", ordered_dict([(s("w"), tensor_v2(storage_pid("1", "cuda:0", 4), 0,
                                                                                       (2, 2), (2, 1)))]),
                       {"1": np.arange(4, dtype=np.float32)})
    view = open_view(path)
    assert view.store.names == ["w"]
    assert _foreign(view) == [] and view.file_info.values_tree is None


def test_training_checkpoint_shows_the_namespace_as_a_tree_and_the_classes_torch_refuses(open_view, tmp_path):
    path = tmp_path / "train.pt"
    torch.save({"state_dict": {"w": torch.ones(2)}, "hyper_parameters": argparse.Namespace(lr=0.1, depth=3)}, path)
    view = open_view(path)
    top = _children(view.file_info.values_tree)
    assert top["hyper_parameters"].text(1) == "argparse.Namespace {3 keys}"
    fields = _children(top["hyper_parameters"])
    assert fields["__class__"].text(1) == '"argparse.Namespace"' and fields["lr"].text(1) == "0.1"
    assert _foreign(view) == ["argparse.Namespace"]
    assert any("torch.load(weights_only=True) would refuse this file" in text for text in _texts(view))


def test_whole_model_shows_its_modules_and_state_dict_names(open_view, tmp_path):
    path = tmp_path / "model.pt"
    torch.save({"model": torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.BatchNorm1d(3)), "epoch": 4}, path)
    view = open_view(path)
    assert view.store.names == ["model.0.weight", "model.0.bias", "model.1.weight", "model.1.bias",
                                "model.1.running_mean", "model.1.running_var", "model.1.num_batches_tracked"]
    model = _children(view.file_info.values_tree)["model"]
    assert model.text(1).startswith("torch.nn.modules.container.Sequential {")
    assert _children(model)["1"].text(1).startswith("torch.nn.modules.batchnorm.BatchNorm1d {")
    assert "torch.nn.modules.linear.Linear" in _foreign(view)


class _Scaled(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(2, 2)
        self.scale = 1.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x) * self.scale


def test_torchscript_archive_shows_its_attributes_and_says_its_code_is_not_run(open_view, tmp_path):
    path = tmp_path / "scripted.pt"
    torch.jit.script(_Scaled()).save(str(path))
    view = open_view(path)
    assert view.store.names == ["fc.weight", "fc.bias"]
    assert "PyTorch TorchScript" in _texts(view)
    assert any("its code/ never run" in text for text in _texts(view))
    top = _children(view.file_info.values_tree)
    assert top["scale"].text(1) == "1.5" and top["fc"].text(1).startswith("__torch__.")
