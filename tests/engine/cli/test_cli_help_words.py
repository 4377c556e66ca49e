"""``store-studio --help`` names each command with its one line (README "Command line" lists the same commands), and
every argument of ``inspect`` and ``config`` says that an http(s):// or hf:// address works as well as a file
(README "Remote files") -- issue 25: help text is what a user reads first, so its words are checked.
"""

from __future__ import annotations

import pytest

from engine.cli import main

COMMAND_HELP = {
    "inspect": "list a file's tensors, totals and metadata",
    "convert": "convert model files to Burnpack or SafeTensors, with optional surgery",
    "diff": "compare two model files tensor by tensor, values included",
    "recipe": "print a recipe as a convert command line or a burn-store builder chain",
    "config": "print a checkpoint's non-tensor values (its config) as JSON",
    "migrate": "convert every Burn record (.mpk, .bin, .json, .gz) under a folder, beside itself",
}
ADDRESS = "a model file, or an http(s):// or hf://ORG/REPO[@REV]/PATH address"


def help_text(capsys, *args: str) -> str:
    with pytest.raises(SystemExit) as done:
        main([*args, "--help"])
    assert done.value.code == 0
    return " ".join(capsys.readouterr().out.split())  # argparse wraps to the terminal's width


def test_the_command_list_says_what_each_command_does(capsys):
    text = help_text(capsys)
    for name, line in COMMAND_HELP.items():
        assert f"{name} {line}" in text, name


@pytest.mark.parametrize("command", ["inspect", "config"])
def test_a_file_argument_says_an_address_works_too(capsys, command):
    assert f"file {ADDRESS}" in help_text(capsys, command)
