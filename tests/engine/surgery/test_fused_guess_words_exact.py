"""The guess a stacked nn.LSTM/nn.GRU's layers rest on, word for word (README "Fused modules": layer ``k`` goes to
``MODULE.k``, **reported as a guess**) (issue 25) -> ``test_a_stacked_layer_is_a_guess_saying_where_it_went``."""

from __future__ import annotations

import torch

from engine import ArrayStore
from engine.surgery import Recipe, plan

SETTLE = "settle with --template FILE (a file of the target model holding this name), or a remap to where the model keeps it"


def test_a_stacked_layer_is_a_guess_saying_where_it_went():
    torch.manual_seed(0)
    state = {k: v.detach().numpy() for k, v in torch.nn.LSTM(2, 3, num_layers=2).state_dict().items()}
    state |= {"gru." + k: v.detach().numpy() for k, v in torch.nn.GRU(2, 3, num_layers=2).state_dict().items()}
    lines = {g.line() for g in plan([ArrayStore(state)], Recipe(adapters=("pytorch-to-burn",))).guesses}
    assert ("guessed 1.input_gate.input_transform.weight: placed at 1.input_gate.input_transform.weight (Burn has no "
            "stacked LSTM: layer 1 of nn.LSTM (top level) is placed at 1, as a Vec<Lstm> (or Vec<BiLstm>) field would "
            f"hold it); {SETTLE}") in lines
    assert ("guessed gru.0.new_gate.hidden_transform.bias: placed at gru.0.new_gate.hidden_transform.bias (Burn has no "
            "stacked GRU: layer 0 of nn.GRU gru is placed at gru.0, as a Vec<Gru> (or Vec<BiGru>) field would hold it); "
            f"{SETTLE}") in lines
    assert len(lines) == 2 * 16 + 2 * 12  # every split tensor of both stacks
