"""Module-kind rules that session 9's mutation run of engine/surgery/modules.py (``_guess``) showed no test checked,
each asserted through ``plan`` with the pytorch-to-burn adapter: the dry-run document's module kind and reason
(``--dry-run``'s "modules"), and the names the adapter gives the module's tensors.

Promises (README, section) -> tests:
- running stats make a BatchNorm: either one alone is evidence enough, and the adapter renames its weight to gamma
  (README "Module types, evidence first": "running stats make a BatchNorm") ->
  test_each_piece_of_evidence_alone_decides_the_kind[running_mean only], [running_var only]
- Burn's ``alpha`` says PReLU, but only a module without a ``weight``: one with a 2-D weight and a bias is the
  Linear they make (README "Module types, evidence first": "a bias beside a 2-D weight makes a Linear",
  "Burn's gamma/alpha say norm/PReLU") -> [alpha alone], [alpha beside a Linear's weight and bias]
- Burn's ``beta`` is a norm's bias as PyTorch's ``bias`` is: a 1-D weight beside it makes a LayerNorm; a ``gamma``
  alone is the norm Burn names so (README "Module types, evidence first": "a bias beside a 1-D weight makes a norm",
  "Burn's gamma/alpha say norm/PReLU") -> [beta beside a 1-D weight], [gamma alone]
- a bias is evidence for a norm only when it matches the 1-D weight's shape; otherwise the weight is a lone 1-D
  weight, guessed from its name (README "Module types, evidence first": "a lone 1-D weight ... a name that says
  nothing leaves it as it is") -> [a 1-D weight beside a bias of another size]
- a 2-D weight without bias named like an embedding is a guessed Embedding, saying why (README "Module types,
  evidence first": "GPT-NeoX's embed_out.weight for an Embedding and not") -> [embed]
- a 3- to 5-D weight is a convolution, transposed when its name says so; no other number of dimensions makes a
  layer (README "Module types, evidence first"; the kinds Conv1d/Conv2d/Conv3d/ConvTranspose of ``--module``) ->
  [a 4-D weight], [a 4-D weight named deconv], [a 6-D weight], [a 0-D weight]
"""

from __future__ import annotations

import numpy as np
import pytest

from engine import ArrayStore
from engine.surgery import Recipe, plan

BURN = Recipe(adapters=("pytorch-to-burn",))


def _plan(shapes: dict[str, tuple[int, ...]]):
    return plan([ArrayStore({name: np.ones(shape, np.float32) for name, shape in shapes.items()})], BURN)


@pytest.mark.parametrize("shapes, module, kind, reason, guessed, names", [
    pytest.param({"stats.weight": (4,), "stats.running_mean": (4,)}, "stats", "BatchNorm",
                 "has running_mean/running_var", False, ["stats.gamma", "stats.running_mean"], id="running_mean only"),
    pytest.param({"stats.weight": (4,), "stats.running_var": (4,)}, "stats", "BatchNorm",
                 "has running_mean/running_var", False, ["stats.gamma", "stats.running_var"], id="running_var only"),
    pytest.param({"act.alpha": (1,)}, "act", "PRelu", "Burn names a PReLU's weight alpha", False, ["act.alpha"],
                 id="alpha alone"),
    pytest.param({"p.alpha": (1,), "p.weight": (3, 4), "p.bias": (3,)}, "p", "Linear",
                 "2-D weight and a bias of 3 (an Embedding has no bias)", False, ["p.alpha", "p.weight", "p.bias"],
                 id="alpha beside a Linear's weight and bias"),
    pytest.param({"scale.weight": (4,), "scale.beta": (4,)}, "scale", "LayerNorm",
                 "1-D weight with a bias and no running stats", False, ["scale.gamma", "scale.beta"],
                 id="beta beside a 1-D weight"),
    pytest.param({"scale.gamma": (4,)}, "scale", "RmsNorm", "Burn names gamma/beta without bias or running stats",
                 False, ["scale.gamma"], id="gamma alone"),
    pytest.param({"scale.weight": (4,), "scale.bias": (5,)}, "scale", "Unknown",
                 "1-D weight without bias or running stats, and the name 'scale' says nothing: kept as it is", True,
                 ["scale.weight", "scale.bias"], id="a 1-D weight beside a bias of another size"),
    pytest.param({"embed.weight": (10, 4)}, "embed", "Embedding",
                 "2-D weight without bias, and the name 'embed' says embedding", True, ["embed.weight"], id="embed"),
    pytest.param({"conv.weight": (4, 4, 3, 3)}, "conv", "Conv2d", "4-D weight", False, ["conv.weight"],
                 id="a 4-D weight"),
    pytest.param({"deconv.weight": (4, 4, 3, 3)}, "deconv", "ConvTranspose",
                 "4-D weight, and the name 'deconv' says transposed", False, ["deconv.weight"],
                 id="a 4-D weight named deconv"),
    pytest.param({"w.weight": (1, 1, 1, 1, 1, 2)}, "w", "Unknown", "6-D weight fits no known layer", False,
                 ["w.weight"], id="a 6-D weight"),
    pytest.param({"w.weight": ()}, "w", "Unknown", "0-D weight fits no known layer", False, ["w.weight"],
                 id="a 0-D weight"),
])
def test_each_piece_of_evidence_alone_decides_the_kind(shapes, module, kind, reason, guessed, names):
    result = _plan(shapes)
    assert result.to_json()["modules"] == {module: {"kind": kind, "reason": reason, "overridden": False,
                                                    "guessed": guessed}}
    assert result.names == names
