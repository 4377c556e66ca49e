"""ModuleFinder: one module's guess, found among all names by a regex, must be infer_modules' guess for it."""

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.surgery.modules import ModuleFinder, infer_modules


class T:
    """A minimal entry: a name and a shape."""

    def __init__(self, name, *shape):
        self.name, self.shape = name, shape


SEGMENTS = ["fc", "0", "1", "bn", "weight", "bias", "running_mean", "parametrizations", "original0", "original1",
            "emb", "a\nb", "c\0d", "e\x1ff", "(x)", "[1]", "", "xparametrizations"]


def _same_as_infer_modules(entries, extra_paths=()):
    finder, every = ModuleFinder(entries), infer_modules(entries)
    for path in [*every, *extra_paths]:
        assert finder.guess(path) == every.get(path), path
    return every


def test_a_module_is_guessed_from_its_own_tensors_only():
    entries = [T("fc.weight", 4, 3), T("fc.bias", 4), T("fc.inner.weight", 4), T("bn.weight", 4), T("bn.bias", 4),
               T("bn.running_mean", 4), T("top", 2), T("conv.parametrizations.weight.original0", 8, 1, 1, 1),
               T("conv.parametrizations.weight.original1", 8, 3, 3, 3), T("conv.bias", 8)]
    every = _same_as_infer_modules(entries, ["", "fc.inner", "conv.parametrizations.weight", "nothing", "f", "fc."])
    assert ModuleFinder(entries).guess("fc").kind == "Linear"  # fc.inner.weight belongs to fc.inner, not fc
    assert ModuleFinder(entries).guess("bn").kind == "BatchNorm"
    assert ModuleFinder(entries).guess("conv").kind == "Conv2d"  # weight-norm tensors fold onto their module
    assert ModuleFinder(entries).guess("conv.parametrizations.weight") is None
    assert set(every) == {"fc", "fc.inner", "bn", "", "conv"}


def test_names_holding_every_separator_are_still_found():
    entries = [T("a\nb.weight", 3, 2), T("a\nb.bias", 3), T("c\0d.weight", 5), T("e\x1ff.weight", 2, 2, 2)]
    assert ModuleFinder(entries).guess("a\nb").kind == "Linear"
    _same_as_infer_modules(entries, ["a", "b"])


def test_regex_characters_in_names_are_taken_literally():
    entries = [T("m(x).weight", 3, 2), T("m[1].weight", 4), T("m.x.weight", 6, 6, 3)]
    _same_as_infer_modules(entries, ["m", "m(x)", "m[1]"])
    assert ModuleFinder(entries).guess("m.x").kind == "Conv1d"


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=5).map(".".join), min_size=1,
                max_size=30, unique=True),
       st.lists(st.integers(1, 4), min_size=30, max_size=30))
def test_any_names_give_infer_modules_guesses(names, ranks):
    entries = [T(name, *[2] * rank) for name, rank in zip(names, ranks)]
    _same_as_infer_modules(entries, ["", "fc", "fc.0", "bn.weight"])
