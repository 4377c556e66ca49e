"""What training frameworks save beside the weights, read as data: OmegaConf configs written by real
omegaconf, a Lightning-shaped checkpoint, and object graphs that point back to their own containers.

Promises (README, "PyTorch files") -> tests:
- OmegaConf DictConfig/ListConfig and their nodes read as ``OmegaConf.to_container(cfg, resolve=False)`` gives
  them (interpolations as written, ``???`` kept), in ``config``, ``--key`` and ``inspect --json``; omegaconf is
  never imported -> test_omegaconf_hparams_read_as_to_container_gives_them,
  test_a_structured_config_reads_its_typed_nodes_as_values, test_config_prints_and_picks_omegaconf_values,
  test_reading_omegaconf_imports_nothing
- a Lightning checkpoint lists every tensor under torch's name, ListConfig betas and DictConfig hparams as values
  -> test_a_lightning_checkpoint_lists_every_tensor_as_torch_names_it
- a loop among non-tensor objects reads as torch reads it: tensors beside it listed, the pointer back shown as
  ``{"$ref": "dotted.path"}`` (in ``config`` and ``inspect --json`` too) and never followed
  -> test_a_pointer_back_to_a_config_object_shows_where_it_points, test_a_reference_to_the_root_is_an_empty_path
- a loop around tensors, or a module holding itself, is refused in one line naming where
  -> test_a_loop_around_a_tensor_is_refused_naming_where, test_a_module_that_holds_itself_is_refused
- loops cannot walk for ever: every path through them counts in the node budget
  -> test_objects_that_all_point_at_each_other_stop_at_the_budget
"""

from __future__ import annotations

import dataclasses
import enum
import json
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

import pytest
import torch
from omegaconf import MISSING, OmegaConf
from tests.helpers.pytorch_checkpoints import LAYOUTS, raw_bytes, save, torch_flat

from engine.cli import main
from engine.formats import open_store
from engine.formats.pytorch.tensors import TORCH_DTYPES
from tests.refusals import refusal


def plain_json(value: object) -> object:
    """``value`` as JSON gives it back: the values tree is JSON, whose keys are text."""
    return json.loads(json.dumps(value))


def assert_reads_as_torch(path: Path) -> dict[str, torch.Tensor]:
    """Names (in order), dtypes, shapes and bytes equal what torch.load returned, walked as dotted paths."""
    expected = torch_flat(torch.load(path, weights_only=False))
    with open_store(path) as store:
        assert store.names == list(expected)
        for name, tensor in expected.items():
            entry = store.entry(name)
            assert entry.dtype == TORCH_DTYPES[str(tensor.dtype).removeprefix("torch.")], name
            assert entry.shape == tuple(tensor.shape), name
            assert store.read(name).tobytes() == raw_bytes(tensor), name
    return expected


HPARAMS = {"encoder": {"n_chan_layers": [40, 30, 30], "dropout": 0.1, "name": "${model.name}", "size": "???",
                       "strides": [[1, 2], [2, 1]], "none": None, "flag": False, 3: "an integer key"},
           "model": {"name": "crepe", "lr": "${optim.lr}"}, "optim": {"lr": 1e-3, "betas": [0.9, 0.999]},
           "missing_list": "???", "escaped": "\\${not.interpolated}", "data": None}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_omegaconf_hparams_read_as_to_container_gives_them(tmp_path: Path, layout: str) -> None:
    """pesto's shape: state_dict beside DictConfig hparams, whose every node points back to its parent."""
    cfg = OmegaConf.create(HPARAMS)
    cfg.model = OmegaConf.create({"name": "crepe", "lr": "${optim.lr}"})  # a node assigned later: re-parented
    path = save({"state_dict": torch.nn.Conv1d(1, 4, 3).state_dict(), "hparams": cfg}, tmp_path / "mir-1k_g7.ckpt",
                layout)
    assert assert_reads_as_torch(path).keys() == {"state_dict.weight", "state_dict.bias"}
    with open_store(path) as store:
        assert store.values == {"hparams": plain_json(OmegaConf.to_container(cfg, resolve=False))}
        encoder = store.values["hparams"]["encoder"]
        assert encoder["name"] == "${model.name}" and encoder["size"] == "???" and encoder["3"] == "an integer key"
        assert encoder["strides"] == [[1, 2], [2, 1]] and store.values["hparams"]["missing_list"] == "???"


class Activation(enum.Enum):
    RELU = 1


@dataclasses.dataclass
class Encoder:
    """A structured config: typed nodes (IntegerNode, FloatNode, StringNode, BooleanNode, EnumNode)."""

    layers: List[int] = dataclasses.field(default_factory=lambda: [1, 2])
    scales: Dict[str, float] = dataclasses.field(default_factory=lambda: {"a": 0.5})
    rate: float = 0.25
    name: str = "enc"
    train: bool = True
    depth: Optional[int] = None
    needed: int = MISSING
    activation: Activation = Activation.RELU


def test_a_structured_config_reads_its_typed_nodes_as_values(tmp_path: Path) -> None:
    cfg = OmegaConf.structured(Encoder)
    path = tmp_path / "structured.pt"
    torch.save({"cfg": cfg}, path)
    with open_store(path) as store:
        assert store.names == []
        assert store.values == {"cfg": {"layers": [1, 2], "scales": {"a": 0.5}, "rate": 0.25, "name": "enc",
                                        "train": True, "depth": None, "needed": "???",
                                        # an Enum member is an object of a class never imported: its placeholder
                                        "activation": {"__class__": f"{__name__}.Activation", "__args__": [1]}}}
        assert set(store.foreign_classes) >= {"omegaconf.dictconfig.DictConfig", "omegaconf.nodes.IntegerNode",
                                              "omegaconf.nodes.EnumNode", f"{__name__}.Activation"}


def lightning_checkpoint(path: Path) -> tuple[Path, object]:
    """What Lightning's ``trainer.save_checkpoint`` writes for a pyannote-like model: optimizer betas as a ListConfig
    (hydra instantiates the optimizer from the config), hyper_parameters as a DictConfig, callbacks' tensors."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    model(torch.randn(5, 3)).sum().backward()
    optimizer.step()
    optimizer_state = optimizer.state_dict()
    optimizer_state["param_groups"][0]["betas"] = OmegaConf.create([0.9, 0.999])
    hparams = OmegaConf.create({"sample_rate": 16000, "num_channels": 1, "task": {"duration": 5.0, "classes": "???"},
                                "lr": "${optim.lr}", "optim": {"lr": 1e-3}})
    monitor = "ModelCheckpoint{'monitor': 'loss/val', 'mode': 'min', 'every_n_train_steps': 0}"
    checkpoint = {
        "epoch": 3, "global_step": 120, "pytorch-lightning_version": "2.4.0",
        "state_dict": model.state_dict(),
        "loops": {"fit_loop": {"state_dict": {}, "epoch_progress": {"total": {"ready": 4, "completed": 3}}}},
        "callbacks": {monitor: {"monitor": "loss/val", "best_model_score": torch.tensor(0.25),
                                "best_model_path": "/runs/epoch=3.ckpt", "current_score": torch.tensor(0.3),
                                "best_k_models": {"/runs/epoch=3.ckpt": torch.tensor(0.25)}},
                      "EarlyStopping{'monitor': 'loss/val', 'mode': 'min'}": {"wait_count": 0,
                                                                             "best_score": torch.tensor(0.25)}},
        "optimizer_states": [optimizer_state],
        "lr_schedulers": [{"step_size": 10, "gamma": 0.1, "base_lrs": [1e-3], "last_epoch": 3, "_last_lr": [1e-3]}],
        "hparams_name": "kwargs", "hyper_parameters": hparams,
    }
    torch.save(checkpoint, path)
    return path, hparams


def test_a_lightning_checkpoint_lists_every_tensor_as_torch_names_it(tmp_path: Path) -> None:
    path, hparams = lightning_checkpoint(tmp_path / "pytorch_model.bin")
    names = assert_reads_as_torch(path)
    assert len(names) == 9 + 6 * 3 + 4 and "optimizer_states.0.state.0.exp_avg" in names  # model, Adam, callbacks
    assert "callbacks.EarlyStopping{'monitor': 'loss/val', 'mode': 'min'}.best_score" in names
    with open_store(path) as store:
        assert store.values["optimizer_states"][0]["param_groups"][0]["betas"] == [0.9, 0.999]
        assert store.values["hyper_parameters"] == OmegaConf.to_container(hparams, resolve=False)
        assert store.values["hyper_parameters"]["lr"] == "${optim.lr}"


def test_config_prints_and_picks_omegaconf_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, hparams = lightning_checkpoint(tmp_path / "lightning.ckpt")
    assert main(["config", str(path), "--key", "hyper_parameters"]) == 0
    assert json.loads(capsys.readouterr().out) == OmegaConf.to_container(hparams, resolve=False)
    assert main(["config", str(path), "--key", "optimizer_states.0.param_groups.0.betas"]) == 0
    assert json.loads(capsys.readouterr().out) == [0.9, 0.999]
    assert main(["inspect", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["values"]["hyper_parameters"]["task"] == {"duration": 5.0,
                                                                                          "classes": "???"}


@pytest.mark.child
def test_reading_omegaconf_imports_nothing(tmp_path: Path) -> None:
    """The reader decodes what omegaconf pickled; a fresh process that reads it never has omegaconf loaded."""
    path, _ = lightning_checkpoint(tmp_path / "lightning.ckpt")
    code = ("import sys\nfrom engine import open_store\n"
            "with open_store(sys.argv[1]) as store:\n    betas = store.values['optimizer_states'][0]"
            "['param_groups'][0]['betas']\n"
            "print(betas, sorted(m for m in sys.modules if m.split('.')[0] in ('omegaconf', 'torch', 'yaml')))")
    result = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True,
                            cwd=Path(__file__).parents[4])
    assert result.stdout.strip() == "[0.9, 0.999] []"


class ConfigNode:
    """Any config object that keeps a pointer to its parent (a tree of settings, a graph's back-links)."""

    def __init__(self, name: str, parent: ConfigNode | None = None):
        self.name, self.parent, self.children = name, parent, []
        if parent is not None:
            parent.children.append(self)


def test_a_pointer_back_to_a_config_object_shows_where_it_points(tmp_path: Path) -> None:
    root = ConfigNode("root")
    ConfigNode("leaf", ConfigNode("branch", root))
    path = tmp_path / "tree.pt"
    torch.save({"model": {"w": torch.arange(4.0)}, "settings": {"tree": root}}, path)
    assert assert_reads_as_torch(path).keys() == {"model.w"}
    node = f"{__name__}.ConfigNode"
    with open_store(path) as store:
        assert store.values == {"settings": {"tree": {
            "__class__": node, "name": "root", "parent": None, "children": [{
                "__class__": node, "name": "branch", "parent": {"$ref": "settings.tree"}, "children": [{
                    "__class__": node, "name": "leaf", "parent": {"$ref": "settings.tree.children.0"},
                    "children": []}]}]}}}


def test_a_reference_to_the_root_is_an_empty_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    checkpoint: dict = {"epoch": 2, "hooks": [{"owner": None}]}
    checkpoint["hooks"][0]["owner"] = checkpoint
    path = tmp_path / "root.pt"
    torch.save(checkpoint, path)
    with open_store(path) as store:
        assert store.names == [] and store.values == {"epoch": 2, "hooks": [{"owner": {"$ref": ""}}]}
    assert main(["config", str(path), "--key", "hooks.0"]) == 0
    assert json.loads(capsys.readouterr().out) == {"owner": {"$ref": ""}}
    assert main(["inspect", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["values"]["hooks"] == [{"owner": {"$ref": ""}}]


def test_a_loop_around_a_tensor_is_refused_naming_where(tmp_path: Path) -> None:
    """Following ``owner`` would name the tensor model.w, model.hooks.0.owner.w, ... for ever."""
    model: dict = {"w": torch.ones(2), "hooks": [{}]}
    model["hooks"][0]["owner"] = model
    path = tmp_path / "around.pt"
    torch.save({"model": model}, path)
    assert refusal(path) == ("around.pt: the checkpoint contains itself at model.hooks.0.owner: the tensors inside "
                             "that loop would have names without end")


def test_a_module_that_holds_itself_is_refused(tmp_path: Path) -> None:
    net = torch.nn.Sequential(torch.nn.Linear(2, 2))
    net._modules["again"] = net  # torch's own state_dict() would recurse without end
    path = tmp_path / "self.pt"
    torch.save({"model": net}, path)
    assert refusal(path) == "self.pt: the checkpoint contains itself at model.again"


def test_objects_that_all_point_at_each_other_stop_at_the_budget(tmp_path: Path) -> None:
    """12 dicts each holding all the others: few objects, but 12! paths through them. The walk counts every
    path it takes, so the small file is refused at its budget instead of walking for ever."""
    nodes = [{} for _ in range(12)]
    for node in nodes:
        node.update({f"n{i}": other for i, other in enumerate(nodes)})
    path = tmp_path / "clique.pt"
    torch.save({"w": torch.ones(1), "graph": nodes[0]}, path)
    assert refusal(path).startswith("clique.pt: the checkpoint expands to 100")
    assert refusal(path).endswith("objects or more (the same objects referenced over and over), over the limit "
                                  "of 100000 for a file of its size")
