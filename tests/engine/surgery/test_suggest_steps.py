"""Suggestions step by step, word for word: what ``diff --suggest`` and the diff view print: a user follows
these steps to make a file load, so each must say exactly what it changes.

Promises (README "### Surgery", the diff view and ``diff A B --suggest``) -> tests:
- each step is proven on top of the ones before it (the template lends the plan module kinds, as the
  recipe's own template does; a top-level key step reads the first source at that key for the steps after it,
  and the other sources stay) -> ``test_the_template_settles_module_kinds_while_steps_are_proven``,
  ``test_steps_after_a_top_level_key_read_the_keyed_source_beside_the_others``
- at most eight changes are made, and what still does not load comes with its closest names ->
  ``test_eight_steps_at_most_unless_asked_for_more``
- each suggestion lists the pairs it makes (`source → target [shape]`) ->
  ``test_a_pair_prints_as_source_arrow_target_and_shape``
- a transpose settles the modules as Linear, the first three named ->
  ``test_a_transpose_of_four_modules_names_three_and_counts_the_rest``
- fused modules at the file's top level are named "(top level)", both ways ->
  ``test_a_top_level_lstm_is_split_or_fused_as_the_top_level``
- the first segment of a stripped prefix is offered as a top-level key (escapes undone), the rest stripped after
  it -> ``test_a_stripped_branchs_first_segment_is_the_top_level_key``
- a prefix of up to three segments is added, stripped or replaced ->
  ``test_prefixes_of_two_segments_are_added_and_replaced_whole``
- a cast is offered only where it removes a dtype difference and adds none ->
  ``test_a_cast_is_offered_only_when_it_fixes_and_breaks_nothing``
- a pair made through an enum variant names the source's own name -> ``test_a_pair_through_an_enum_variant_names_the_file_name``
- a bulk rename fixes at least two names (one name is the diff's row suggestion, the closest names) ->
  ``test_a_rename_of_one_name_is_not_offered``
- the template lends the plan its module kinds before anything is compared (nothing to suggest when it settles
  them) -> ``test_a_template_that_settles_a_transpose_leaves_nothing_to_suggest``
- "treat as Linear" names only the transposed modules that are not Linear yet, under their file names, never the
  top level -> ``test_treat_as_linear_names_only_modules_not_linear_yet``
- a top-level key is offered only for a PyTorch source that can be reopened -> ``test_no_top_level_key_without_a_reopenable_checkpoint``
- five suggestions at most, best first, none a variation of a better one -> ``test_five_suggestions_at_most``
- a segment renamed is the segments' differing start (their shared ending cut) ->
  ``test_a_renamed_segment_is_the_differing_start_of_the_two``
"""

from __future__ import annotations

import numpy as np
import torch
from engine import ArrayStore, Store, export, open_store
from engine.surgery import Recipe, align, plan
from engine.surgery.suggestions import ADAPTER, LINEAR, RENAME, TOP_LEVEL_KEY, Suggestion, fit, name_votes, suggest


def _bpk(path, arrays: dict[str, np.ndarray]) -> Store:
    export(ArrayStore(arrays).entries, path, overwrite=True)
    return open_store(path)


def _kinds(found: list[Suggestion]) -> list[tuple[str, ...]]:
    return [tuple(change.kind for change in suggestion.changes) for suggestion in found]


def test_the_template_settles_module_kinds_while_steps_are_proven(tmp_path):
    """``embed`` (no bias) reads as an Embedding by name; a template wanting it transposed makes it a Linear."""
    source = _bpk(tmp_path / "m.bpk", {"embed.weight": np.zeros((4, 3), np.float32),
                                       "fc.weight": np.zeros((2, 3), np.float32), "fc.bias": np.zeros(2, np.float32)})
    target = _bpk(tmp_path / "t.bpk", {"embed.weight": np.zeros((3, 4), np.float32),
                                       "fc.weight": np.zeros((3, 2), np.float32), "fc.bias": np.zeros(2, np.float32)})
    with source, target:
        made = fit([source], Recipe(), target, template=target)
        assert [s.line() for s in made.steps] == [
            "suggest: add the pytorch-to-burn adapter (Linear weights, norm parameters): fixes 2 of 2 missing or "
            "mismatched: adapter pytorch-to-burn"]
        assert made.recipe.adapters == ("pytorch-to-burn",)
        assert align(plan([source], made.recipe, template=target), target).ok
        without = fit([source], Recipe(), target).steps  # no template: the name decides, a second step
        assert [s.change.kind for s in without] == [ADAPTER, LINEAR]


def test_steps_after_a_top_level_key_read_the_keyed_source_beside_the_others(tmp_path):
    torch.manual_seed(0)
    conv, fc = torch.nn.Conv2d(1, 2, 3), torch.nn.Linear(3, 2)
    torch.save({"model": {"conv.weight": conv.weight.detach(), "conv.bias": conv.bias.detach()}}, tmp_path / "ck.pt")
    head = _bpk(tmp_path / "head.bpk", {"fc.weight": fc.weight.detach().numpy(), "fc.bias": fc.bias.detach().numpy()})
    target = _bpk(tmp_path / "t.bpk", {"conv.weight": conv.weight.detach().numpy(), "conv.bias": conv.bias.detach().numpy(),
                                       "fc.weight": fc.weight.detach().numpy().T.copy(), "fc.bias": fc.bias.detach().numpy()})
    opened: list[Store] = []

    def reopen(store: Store, key: str) -> Store:
        opened.append(open_store(store.path, top_level_key=key))
        return opened[-1]

    with open_store(tmp_path / "ck.pt") as checkpoint, head, target:
        made = fit([checkpoint, head], Recipe(), target, template=target, reopen=reopen)
    recipe, steps = made.recipe, made.steps
    assert [s.line() for s in steps] == [
        "suggest: read the checkpoint's top-level key 'model': fixes 2 of 3 missing or mismatched: top-level key 'model'",
        "suggest: add the pytorch-to-burn adapter (Linear weights, norm parameters): fixes 1 of 1 missing or "
        "mismatched: adapter pytorch-to-burn"]  # the adapter's pair is the other source's fc.weight
    assert [s.change.kind for s in steps] == [TOP_LEVEL_KEY, ADAPTER]
    assert recipe.top_level_key == "model" and recipe.adapters == ("pytorch-to-burn",) and not recipe.remaps


WORDS = ("ant", "bee", "cat", "dog", "eel", "fox", "gnu", "hen", "owl")


def test_eight_steps_at_most_unless_asked_for_more(tmp_path):
    """Nine families of names, each its own rename (their leaves differ, so no rule serves two)."""
    source = _bpk(tmp_path / "s.bpk", {f"{w}.{w}_{k}": np.zeros(1, np.float32) for w in WORDS for k in "wb"})
    target = _bpk(tmp_path / "t.bpk", {f"{w[::-1]}.{w}_{k}": np.zeros(1, np.float32) for w in WORDS for k in "wb"})
    with source, target:
        made = fit([source], Recipe(), target)
        assert [s.change.kind for s in made.steps] == [RENAME] * 8
        assert made.steps[0].line() == ("suggest: rename the prefix ant. to tna.: fixes 2 of 18 missing or mismatched: "
                                        "remap '^ant\\.' -> 'tna.'")
        assert made.report.missing == ["lwo.owl_w", "lwo.owl_b"]
        assert made.report.suggestions == {"lwo.owl_w": ["owl.owl_w"], "lwo.owl_b": ["owl.owl_b"]}  # closest names
        made = fit([source], Recipe(), target, rounds=9)
        assert len(made.steps) == 9 and align(plan([source], made.recipe), target).ok


def test_a_pair_prints_as_source_arrow_target_and_shape(tmp_path):
    source = _bpk(tmp_path / "s.bpk", {"norm.w": np.zeros((2, 3), np.float32), "norm.b": np.zeros(2, np.float32)})
    target = _bpk(tmp_path / "t.bpk", {"bn.w": np.zeros((2, 3), np.float32), "bn.b": np.zeros(2, np.float32)})
    with source, target:
        (found,) = suggest([source], Recipe(), target)
    assert sorted(pair.line() for pair in found.pairs) == ["norm.b → bn.b [2]", "norm.w → bn.w [2, 3]"]


def test_a_transpose_of_four_modules_names_three_and_counts_the_rest(tmp_path):
    source = _bpk(tmp_path / "s.bpk", {f"embed{c}.weight": np.zeros((4, 3), np.float32) for c in "abcd"})
    target = _bpk(tmp_path / "t.bpk", {f"embed{c}.weight": np.zeros((3, 4), np.float32) for c in "abcd"})
    with source, target:
        (found,) = suggest([source], Recipe(adapters=("pytorch-to-burn",)), target)
    assert found.line() == ("suggest: transpose: treat embeda, embedb, embedc and 1 more as Linear: fixes 4 of 4 missing "
                            "or mismatched: module embeda=Linear, embedb=Linear, embedc=Linear, embedd=Linear")


def test_a_renamed_segment_is_the_differing_start_of_the_two():
    assert set(name_votes(["norm.x"], ["bn.x"])) == {  # no common ending: the whole segments
        (r"^norm\.", "bn.", "rename the prefix norm. to bn."), (r"(^|\.)norm(\d*)(\.|$)", "${1}bn${2}${3}", "rename norm to bn")}
    assert (r"(^|\.)layer(\d*)(\.|$)", "${1}block${2}${3}", "rename layer to block") in \
        name_votes(["layer12.w"], ["block12.w"])  # "12" shared: cut, then any number follows
    assert (r"(^|\.)n(bn)(\.|$)", "${1}${2}${3}", "drop n from names") in name_votes(["nbn.w"], ["bn.w"])  # all of bn shared
    assert (r"(^|\.)norm(\d*)(\.|$)", "${1}bn${2}${3}", "rename norm to bn") in name_votes(["enc.norm.x"], ["enc.bn.x"])
    assert (r"(^|\.)conv(_w)(\.|$)", "${1}lin${2}${3}", "rename conv to lin") in \
        name_votes(["conv_w.x"], ["lin_w.x"])  # an ending that is no number must follow as it is


def test_prefixes_of_two_segments_are_added_and_replaced_whole():
    assert name_votes(["x.w"], ["model.enc.x.w"]) == {("^", "model.enc.", "add the prefix model.enc."): 1}
    assert name_votes(["a.b.x.w"], ["c.d.x.w"]) == {(r"^a\.b\.", "c.d.", "rename the prefix a.b. to c.d."): 1,
                                                    (r"^a\.b\.x\.", "c.d.x.", "rename the prefix a.b.x. to c.d.x."): 1}


LSTM_GATES = ("input_gate", "forget_gate", "cell_gate", "output_gate")


def test_a_top_level_lstm_is_split_or_fused_as_the_top_level(tmp_path):
    torch.manual_seed(0)
    fused = {k: v.detach() for k, v in torch.nn.LSTM(3, 4).state_dict().items()}  # weight_ih_l0, ... at the top
    split = {}
    for name, tensor in fused.items():
        leaf, side, _ = name.split("_")
        for k, gate in enumerate(LSTM_GATES):
            part = tensor.numpy()[k * 4:(k + 1) * 4]
            transform = "input_transform" if side == "ih" else "hidden_transform"
            split[f"{gate}.{transform}.{leaf}"] = part.T.copy() if leaf == "weight" else part.copy()
    torch.save(fused, tmp_path / "lstm.pt")
    with open_store(tmp_path / "lstm.pt") as source, _bpk(tmp_path / "burn.bpk", split) as target:
        assert [s.line() for s in suggest([source], Recipe(), target, template=target)] == [
            "suggest: split the fused LSTM gates of (top level) (the pytorch-to-burn adapter): fixes 16 of 16 missing or "
            "mismatched: adapter pytorch-to-burn"]
    with _bpk(tmp_path / "burn.bpk", split) as source, \
            _bpk(tmp_path / "torch.bpk", {k: v.numpy() for k, v in fused.items()}) as target:
        assert [s.line() for s in suggest([source], Recipe(), target, template=target)] == [
            "suggest: fuse Burn's LSTM gates of (top level) (the burn-to-pytorch adapter): fixes 4 of 4 missing or "
            "mismatched: adapter burn-to-pytorch"]


def test_a_stripped_branchs_first_segment_is_the_top_level_key(tmp_path):
    state = {"fc.weight": torch.ones(2, 3), "fc.bias": torch.ones(2)}
    torch.save({"ema-model": state, "opt": {"lr": torch.tensor(0.1)}}, tmp_path / "dashed.pt")
    torch.save({"model": {"module": state}, "opt": {"lr": torch.tensor(0.1)}}, tmp_path / "nested.pt")

    def reopen(store: Store, key: str) -> Store:
        return open_store(store.path, top_level_key=key)

    with _bpk(tmp_path / "t.bpk", {k: v.numpy() for k, v in state.items()}) as target:
        with open_store(tmp_path / "dashed.pt") as source:
            assert suggest([source], Recipe(), target, reopen=reopen)[0].line() == (  # the rule has "ema\\-model"
                "suggest: read the checkpoint's top-level key 'ema-model': fixes 2 of 2 missing or mismatched: "
                "top-level key 'ema-model'")
        with open_store(tmp_path / "nested.pt") as source:  # the key leaves "opt" out, the strip would not
            assert [s.line() for s in suggest([source], Recipe(), target, reopen=reopen)] == [
                "suggest: read the checkpoint's top-level key 'model' + strip the prefix module.: fixes 2 of 2 missing "
                "or mismatched: top-level key 'model'; remap '^module\\.' -> ''"]


def test_a_cast_is_offered_only_when_it_fixes_and_breaks_nothing(tmp_path):
    def lines(source: dict[str, np.ndarray], target: dict[str, np.ndarray]) -> list[str]:
        with _bpk(tmp_path / "s.bpk", source) as a, _bpk(tmp_path / "t.bpk", target) as b:
            return [s.line() for s in suggest([a], Recipe(), b)]

    f32, f16 = np.zeros(3, np.float32), np.zeros(3, np.float16)
    assert lines({"w": f32}, {"w": f16}) == ["suggest: cast float tensors to F16: fixes 1 dtype difference(s): cast F16"]
    assert lines({"w": f32, "x": f32}, {"w": f16, "x": f32}) == []  # x would become F16 where the target has F32
    # two fixed and one broken is one difference fewer, but still breaks x: not offered
    assert lines({"w": f32, "v": f32, "x": f32}, {"w": f16, "v": f16, "x": f32}) == []
    assert lines({"steps": np.zeros(3, np.int32)}, {"steps": f16}) == []  # a cast touches floats only: nothing fixed


def test_a_pair_through_an_enum_variant_names_the_file_name(tmp_path):
    source = _bpk(tmp_path / "s.bpk", {"feat.Lin.fc.weight": np.zeros((2, 3), np.float32),
                                       "feat.Lin.fc.bias": np.zeros(2, np.float32)})
    target = _bpk(tmp_path / "t.bpk", {"feat.fc.weight": np.zeros((3, 2), np.float32),
                                       "feat.fc.bias": np.zeros(2, np.float32)})
    with source, target:
        (found,) = suggest([source], Recipe(adapters=("skip-enum-variants",)), target)
    assert [change.adapter for change in found.changes] == ["pytorch-to-burn"]
    assert [pair.line() for pair in found.pairs] == ["feat.Lin.fc.weight → feat.fc.weight [3, 2]"]


def test_a_rename_of_one_name_is_not_offered(tmp_path):
    with _bpk(tmp_path / "s.bpk", {"norm.w": np.zeros(2, np.float32)}) as source, \
            _bpk(tmp_path / "t.bpk", {"bn.w": np.zeros(2, np.float32)}) as target:
        assert suggest([source], Recipe(), target) == []


def _z(*shape: int) -> np.ndarray:
    return np.zeros(shape, np.float32)


TO_BURN = Recipe(adapters=("pytorch-to-burn",))


def test_a_template_that_settles_a_transpose_leaves_nothing_to_suggest(tmp_path):
    with _bpk(tmp_path / "s.bpk", {"embed.weight": _z(4, 3)}) as source, \
            _bpk(tmp_path / "t.bpk", {"embed.weight": _z(3, 4)}) as target:
        assert suggest([source], TO_BURN, target, template=target) == []  # the template makes embed a Linear
        assert _kinds(suggest([source], TO_BURN, target)) == [(LINEAR,)]  # the name alone: an Embedding


def test_treat_as_linear_names_only_modules_not_linear_yet(tmp_path):
    def lines(source: dict[str, np.ndarray], target: dict[str, np.ndarray], recipe: Recipe = TO_BURN) -> list[str]:
        with _bpk(tmp_path / "s.bpk", source) as a, _bpk(tmp_path / "t.bpk", target) as b:
            return [s.line() for s in suggest([a], recipe, b)]

    # fc is a Linear already (its bias says so) saved in Burn's layout: the adapter transposes it away, and settling
    # it as Linear again changes nothing; taking the recipe's adapter out is what makes fc load (and embed not)
    assert lines({"embed.weight": _z(4, 3), "fc.weight": _z(3, 2), "fc.bias": _z(2)},
                 {"embed.weight": _z(3, 4), "fc.weight": _z(3, 2), "fc.bias": _z(2)}) == [
        "suggest: transpose: treat embed as Linear: fixes 1 of 2 missing or mismatched: module embed=Linear",
        "suggest: remove the pytorch-to-burn adapter: fixes 1 of 2 missing or mismatched: remove adapter pytorch-to-burn"]
    assert lines({"weight": _z(4, 3)}, {"weight": _z(3, 4)}) == []  # a top-level tensor has no module to settle
    assert lines({"feat.Emb.embed.weight": _z(4, 3)}, {"feat.embed.weight": _z(3, 4)},
                 Recipe(adapters=("pytorch-to-burn", "skip-enum-variants"))) == [
        "suggest: transpose: treat feat.Emb.embed as Linear: fixes 1 of 1 missing or mismatched: "
        "module feat.Emb.embed=Linear"]


def test_no_top_level_key_without_a_reopenable_checkpoint(tmp_path):
    strip = ["suggest: strip the prefix model.: fixes 2 of 2 missing or mismatched: remap '^model\\.' -> ''"]

    def reopen(store: Store, key: str) -> Store:
        return open_store(store.path, top_level_key=key)

    torch.save({"model": {"x.w": torch.zeros(2), "x.b": torch.zeros(2)}}, tmp_path / "ck.pt")
    with _bpk(tmp_path / "s.bpk", {"model.x.w": _z(2), "model.x.b": _z(2)}) as burnpack, \
            open_store(tmp_path / "ck.pt") as checkpoint, _bpk(tmp_path / "t.bpk", {"x.w": _z(2), "x.b": _z(2)}) as target:
        assert [s.line() for s in suggest([burnpack], Recipe(), target, reopen=reopen)] == strip  # not a checkpoint
        assert [s.line() for s in suggest([checkpoint], Recipe(), target)] == strip  # no way to reopen it
        assert _kinds(suggest([checkpoint], Recipe(), target, reopen=reopen))[0] == (TOP_LEVEL_KEY,)


def test_five_suggestions_at_most(tmp_path):
    source = _bpk(tmp_path / "s.bpk", {f"{w}.{w}_{k}": _z(1) for w in WORDS for k in "wb"})
    target = _bpk(tmp_path / "t.bpk", {f"{w[::-1]}.{w}_{k}": _z(1) for w in WORDS for k in "wb"})
    with source, target:
        found = suggest([source], Recipe(), target)
    assert [s.description for s in found] == [  # the best chain the bounds reach, then what it leaves undone
        "rename the prefix ant. to tna. + rename the prefix bee. to eeb. + rename the prefix cat. to tac.",
        *(f"rename the prefix {w}. to {w[::-1]}." for w in WORDS[3:7])]
    assert [s.fixes for s in found] == [6, 2, 2, 2, 2]
