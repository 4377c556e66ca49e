"""The File panel on what training frameworks save: OmegaConf hparams as a plain tree, as
``OmegaConf.to_container(resolve=False)`` gives them, and a pointer back to a container as where it points; without
it a Lightning checkpoint's hyper-parameters would show as opaque objects or loop for ever."""

from __future__ import annotations

from pathlib import Path

import torch
from omegaconf import OmegaConf
from PySide6.QtWidgets import QTreeWidgetItem


def _children(item) -> dict[str, QTreeWidgetItem]:
    if hasattr(item, "topLevelItemCount"):
        return {item.topLevelItem(i).text(0): item.topLevelItem(i) for i in range(item.topLevelItemCount())}
    return {item.child(i).text(0): item.child(i) for i in range(item.childCount())}


class Settings:
    """A config object whose children keep a pointer to it."""

    def __init__(self, parent: Settings | None = None):
        self.parent, self.children = parent, []


def test_omegaconf_hparams_show_as_their_values_and_a_loop_as_where_it_points(open_view, tmp_path: Path) -> None:
    root = Settings()
    root.children.append(Settings(root))
    hparams = OmegaConf.create({"encoder": {"n_chan_layers": [40, 30], "name": "${model.name}", "size": "???"}})
    path = tmp_path / "mir-1k_g7.ckpt"
    torch.save({"state_dict": {"w": torch.ones(2)}, "hparams": hparams, "settings": root}, path)
    view = open_view(path)
    assert view.store.names == ["state_dict.w"]
    top = _children(view.file_info.values_tree)
    encoder = _children(top["hparams"])["encoder"]
    assert top["hparams"].text(1) == "{1 key}" and encoder.text(1) == "{3 keys}"
    fields = _children(encoder)
    assert [fields[key].text(1) for key in ("n_chan_layers", "name", "size")] == ["[2 items]", '"${model.name}"',
                                                                                 '"???"']
    child = _children(_children(top["settings"])["children"])["[0]"]
    pointer = _children(child)["parent"]
    assert pointer.text(1) == "→ settings" and _children(pointer)["$ref"].text(1) == '"settings"'
    assert '"$ref": "settings"' in view.file_info.values_json()
