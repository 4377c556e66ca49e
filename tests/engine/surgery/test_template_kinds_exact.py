"""Module kinds a template proves (stages.TemplateIndex.kinds), each asserted through ``plan`` with a template: the
kind, its reason word for word, that it is settled, and the names written (mutants of the whole run).

Promise (README "Model surgery": a template settles what a name alone only guesses) -> test:
- a template norm (``gamma``) is a norm, BatchNorm where it keeps running stats; a PReLU (``alpha``) is a PRelu; a
  2-D weight the template wants as it is is no Linear; a decision the template agrees with is settled, one it
  cannot judge is kept -> test_the_template_proves_or_settles_each_kind
- the user's kind stands: a template cannot re-prove it -> test_a_kind_the_user_set_stands_under_alpha
- only a module's weight is judged: another 2-D tensor the template wants transposed proves nothing ->
  test_only_the_weight_is_judged_not_another_tensor_of_the_module
"""

from __future__ import annotations

import numpy as np
import pytest

from engine import ArrayStore
from engine.surgery import Recipe, plan

GAMMA, ALPHA, AS_IT_IS = "the template has gamma here", "the template has alpha here", \
    "the template wants this 2-D weight as it is"

CASES = {
    "a guessed 1-D weight under gamma is a LayerNorm": (
        {"scale.weight": (4,)}, {"scale.gamma": (4,)}, ("LayerNorm", GAMMA, False), ["scale.gamma"]),
    "with running stats, a BatchNorm": (
        {"scale.weight": (4,)}, {"scale.gamma": (4,), "scale.running_mean": (4,)}, ("BatchNorm", GAMMA, False),
        ["scale.gamma"]),
    "a guessed RmsNorm under gamma keeps its kind": (
        {"norm.weight": (4,)}, {"norm.gamma": (4,)}, ("RmsNorm", GAMMA, False), ["norm.gamma"]),
    "a LayerNorm proven by its bias is left as it was": (
        {"norm.weight": (4,), "norm.bias": (4,)}, {"norm.gamma": (4,), "norm.beta": (4,)},
        ("LayerNorm", "1-D weight with a bias and no running stats", False), ["norm.gamma", "norm.beta"]),
    "a guessed 1-D weight under alpha is a PRelu": (
        {"scale.weight": (4,)}, {"scale.alpha": (4,)}, ("PRelu", ALPHA, False), ["scale.alpha"]),
    "a LayerNorm proven by its bias, under alpha, is a PRelu": (
        {"norm.weight": (4,), "norm.bias": (4,)}, {"norm.alpha": (4,), "norm.beta": (4,)}, ("PRelu", ALPHA, False),
        ["norm.alpha", "norm.bias"]),
    "a guessed PRelu under alpha is settled": (
        {"act.weight": (1,)}, {"act.alpha": (1,)}, ("PRelu", ALPHA, False), ["act.alpha"]),
    "a Linear proven by its bias, wanted as it is, is Unknown": (
        {"fc.weight": (3, 2), "fc.bias": (3,)}, {"fc.weight": (3, 2), "fc.bias": (3,)}, ("Unknown", AS_IT_IS, False),
        ["fc.weight", "fc.bias"]),
    "a guessed Embedding wanted as it is is settled": (
        {"embed.weight": (3, 2)}, {"embed.weight": (3, 2)}, ("Embedding", AS_IT_IS, False), ["embed.weight"]),
    "a Linear proven by its bias, wanted transposed, is left as it was": (
        {"fc.weight": (3, 2), "fc.bias": (3,)}, {"fc.weight": (2, 3), "fc.bias": (3,)},
        ("Linear", "2-D weight and a bias of 3 (an Embedding has no bias)", False), ["fc.weight", "fc.bias"]),
    "a guessed Embedding wanted transposed is a Linear": (
        {"embed.weight": (3, 2)}, {"embed.weight": (2, 3)},
        ("Linear", "the template wants this weight transposed", False), ["embed.weight"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_template_proves_or_settles_each_kind(case: str) -> None:
    source, template, (kind, reason, guessed), names = CASES[case]
    arrays = {name: np.arange(np.prod(shape), dtype=np.float32).reshape(shape) for name, shape in source.items()}
    result = plan([ArrayStore(arrays)], Recipe(adapters=("pytorch-to-burn",)),
                  template=ArrayStore({name: np.zeros(shape, np.float32) for name, shape in template.items()}))
    ((path, module),) = result.modules.items()
    assert module.path == path and (module.kind, module.reason, module.guessed) == (kind, reason, guessed)
    assert result.names == names and result.guesses == []
    assert [t.shape for t in result.tensors] == [template.get(n, source.get(n)) for n in names]


def test_a_kind_the_user_set_stands_under_alpha() -> None:
    result = plan([ArrayStore({"act.weight": np.ones(4, np.float32)})],
                  Recipe(adapters=("pytorch-to-burn",), module_overrides={"act": "PRelu"}),
                  template=ArrayStore({"act.alpha": np.zeros(4, np.float32)}))
    module = result.modules["act"]
    assert (module.kind, module.reason, module.overridden, module.guessed) == ("PRelu", "set by user", True, False)
    assert result.names == ["act.alpha"]


def test_only_the_weight_is_judged_not_another_tensor_of_the_module() -> None:
    table = np.arange(6, dtype=np.float32).reshape(3, 2)
    result = plan([ArrayStore({"x.weight": np.ones(4, np.float32), "x.table": table})],
                  Recipe(adapters=("pytorch-to-burn",)),
                  template=ArrayStore({"x.weight": np.zeros(4, np.float32), "x.table": np.zeros((2, 3), np.float32)}))
    module = result.modules["x"]
    assert (module.kind, module.guessed) == ("Unknown", True)
    assert [(g.name, g.decision) for g in result.guesses] == [("x.weight", "Unknown: left as it is")]
    assert [t.shape for t in result.tensors] == [(4,), (3, 2)]
