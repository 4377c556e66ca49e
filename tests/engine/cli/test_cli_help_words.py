"""Every ``--help`` word for word: what each command and flag says it does (README "Command line" lists the same
commands and flags), the choices each flag takes, and the exit codes under each (help text is what a
user reads first; a flag's help, metavar or choices changing is a change the user sees).

The expected texts are ``help_texts/NAME.txt``, printed at 120 columns. After changing a flag on purpose,
regenerate them with ``COLUMNS=120 python -m engine NAME --help > tests/engine/cli/help_texts/NAME.txt`` (the
root: ``python -m engine --help > .../store-studio.txt``) and read the diff.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.cli import COMMANDS, main

TEXTS = Path(__file__).with_name("help_texts")


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_each_help_reads_as_written(capsys, monkeypatch, command):
    monkeypatch.setenv("COLUMNS", "120")  # argparse wraps to the terminal's width
    with pytest.raises(SystemExit) as done:
        main([command, "--help"] if command else ["--help"])
    assert done.value.code == 0
    assert capsys.readouterr().out == (TEXTS / f"{command or 'store-studio'}.txt").read_text()


def test_the_command_list_says_what_each_command_does():
    text = (TEXTS / "store-studio.txt").read_text()
    for name in COMMANDS:
        assert f"    {name}" in text, name
