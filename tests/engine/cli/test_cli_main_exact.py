"""The command line's words and exit codes, in-process, so that a mutation run can see them (issue 25): the
subprocess tests of ``test_exit_codes.py`` and ``test_cli.py`` prove the real entry point, but mutmut cannot map
a child process's calls to the functions they test.

Promises (README "Command line") -> tests:
- exit codes: 0 success, 1 a file, 2 usage, 3 template, 130 Ctrl+C -> ``test_each_failure_is_one_line_and_its_code``,
  ``test_a_bad_flag_value_is_exit_2_naming_the_flag``
- every --help ends with what the exit codes mean -> ``test_every_help_ends_with_the_exit_codes``
- a mistyped command gets its likely spelling -> ``test_a_mistyped_command_suggests_the_closest_one``
- output piped into ``head`` is not an error -> ``test_a_closed_pipe_is_exit_0_and_says_nothing``
- a warning is one line without its source -> ``test_a_warning_is_one_line``
- ``store-studio COMMAND ARGS`` reads its words from the command line -> ``test_without_words_main_reads_the_command_line``
"""

from __future__ import annotations

import os
import warnings

import pytest

from engine import FormatError
from engine.cli import COMMANDS, main, needed, parser, suggest_command
from engine.cli import inspect as inspect_command
from engine.cli.exits import SUMMARY, UsageError
from tests.helpers.samples import SAMPLES

SAMPLE = str(SAMPLES / "sample_cnn.bpk")


@pytest.mark.parametrize("flags, says", [
    (["--metadata", "nokv"], "store-studio convert: --metadata wants KEY=VALUE, got 'nokv'\n"),
    (["--metadata", "=v"], "store-studio convert: --metadata wants KEY=VALUE, got '=v'\n"),
    (["--include", "("], "store-studio convert: --include: invalid regex '(': unclosed group at position 0\n"),
    (["--exclude", "[a"], "store-studio convert: --exclude: invalid regex '[a': unclosed class at position 0\n"),
    (["--remap", "fc(", "x"], "store-studio convert: remap rule 1 ('fc(' -> 'x'): invalid regex 'fc(': unclosed "
                              "group at position 2\n"),
    (["--module", "fc"], "store-studio convert: --module wants PATH=TYPE (e.g. tokens=Embedding), got 'fc'\n"),
    (["--module", "=Linear"], "store-studio convert: --module wants PATH=TYPE (e.g. tokens=Embedding), got '=Linear'\n"),
    (["--module", "fc="], "store-studio convert: --module wants PATH=TYPE (e.g. tokens=Embedding), got 'fc='\n"),
    (["--cast", "f16", "--cast", "bf16"], "store-studio convert: --cast given 2 times (f16, bf16): give one target\n"),
])
def test_a_bad_flag_value_is_exit_2_naming_the_flag(tmp_path, capsys, flags, says):
    assert main(["convert", SAMPLE, str(tmp_path / "o.bpk"), *flags]) == 2
    captured = capsys.readouterr()
    assert captured.err == says and captured.out == ""
    assert not (tmp_path / "o.bpk").exists()


def test_a_module_path_may_hold_equals_signs_and_only_the_last_one_splits(tmp_path, capsys):
    """``--module a=b=Linear`` settles the module ``a=b``: the type is after the last ``=``."""
    assert main(["convert", SAMPLE, str(tmp_path / "o.bpk"), "--module", "a=b=Nonsense", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("store-studio convert: ") and "'a=b'" in err and "Nonsense" in err


def test_a_destination_that_names_no_format_is_exit_2_with_the_choices(tmp_path, capsys):
    assert main(["convert", SAMPLE, str(tmp_path / "model.pt")]) == 2
    assert capsys.readouterr().err == ("store-studio convert: model.pt: its extension names no format Store Studio "
                                       "writes (.pt and .pth are read only); use .bpk or .safetensors, or choose "
                                       "with --format bpk|safetensors\n")
    assert main(["convert", SAMPLE, str(tmp_path / "model.pt"), "--dry-run", "--include", "conv"]) == 0
    assert main(["convert", SAMPLE, str(tmp_path / "model.pt"), "--format", "bpk", "-q"]) == 0
    assert (tmp_path / "model.pt").read_bytes()[:4] != b"PK\x03\x04"  # Burnpack bytes under the name asked for


@pytest.mark.parametrize("flags", [[], ["--include", "conv"]])
def test_an_existing_destination_is_exit_1_and_kept_unless_overwrite(tmp_path, capsys, flags):
    out = tmp_path / "out.bpk"
    out.write_bytes(b"old")
    assert main(["convert", SAMPLE, str(out), *flags]) == 1
    assert capsys.readouterr().err == f"store-studio: {out} already exists; use --overwrite to replace it\n"
    assert out.read_bytes() == b"old"
    assert main(["convert", SAMPLE, str(out), *flags, "--overwrite", "-q"]) == 0
    assert out.read_bytes()[:3] != b"old"


def test_a_folder_as_destination_is_not_called_existing(tmp_path, capsys):
    """A folder is no file to overwrite: the export's own message names it, not ``--overwrite``."""
    assert main(["convert", SAMPLE, str(tmp_path)]) == 2  # its name has no extension
    capsys.readouterr()
    assert main(["convert", SAMPLE, str(tmp_path), "--format", "bpk"]) == 1
    assert capsys.readouterr().err == f"store-studio: {tmp_path}: is a folder\n"


def test_no_input_at_all_is_exit_2(tmp_path, capsys):
    (tmp_path / "r.json").write_text('{"version": 1}')
    assert main(["convert", "--recipe", str(tmp_path / "r.json"), str(tmp_path / "o.bpk")]) == 2
    assert capsys.readouterr().err == ("store-studio convert: give at least one input and an output (or a --recipe "
                                       "with sources)\n")


def test_each_failure_is_one_line_and_its_code(monkeypatch, capsys, tmp_path):
    """main's own handling, one exception of each family raised where a subcommand's work would raise it."""
    raised: list[BaseException] = []
    monkeypatch.setattr(inspect_command, "run", lambda args: (_ for _ in ()).throw(raised[-1]))
    cases = [
        (UsageError("bad flag"), 2, "store-studio inspect: bad flag\n"),
        (FormatError(tmp_path / "m.bpk", "is broken"), 1, f"store-studio: m.bpk: is broken\n"),
        (FileNotFoundError(2, "No such file or directory", str(tmp_path / "x")), 1,
         f"store-studio: {tmp_path / 'x'}: No such file or directory\n"),
        (OSError(28, "No space left on device"), 1, "store-studio: No space left on device\n"),
        (OSError("plain words"), 1, "store-studio: plain words\n"),
        (KeyboardInterrupt(), 130, "store-studio: interrupted\n"),
        (ValueError("oops"), 1, "store-studio: unexpected error (ValueError: oops); please report it with the "
                                "command you ran (STORE_STUDIO_TRACEBACK=1 shows the details)\n"),
    ]
    for exc, code, says in cases:
        raised.append(exc)
        assert main(["inspect", SAMPLE]) == code, says
        captured = capsys.readouterr()
        assert (captured.err, captured.out) == (says, "")
    monkeypatch.setenv("STORE_STUDIO_TRACEBACK", "")  # empty is unset: still one line
    assert main(["inspect", SAMPLE]) == 1


def test_a_subcommand_returning_nothing_is_exit_0(monkeypatch, capsys):
    monkeypatch.setattr(inspect_command, "run", lambda args: None)
    assert main(["inspect", SAMPLE]) == 0
    monkeypatch.setattr(inspect_command, "run", lambda args: 3)
    assert main(["inspect", SAMPLE]) == 3


def test_a_warning_is_one_line(monkeypatch, capsys):
    def warns(args):
        warnings.warn("the server ignored the byte range", stacklevel=1)
        return 0

    monkeypatch.setattr(inspect_command, "run", warns)
    assert main(["inspect", SAMPLE]) == 0
    assert capsys.readouterr().err == "store-studio: warning: the server ignored the byte range\n"
    with warnings.catch_warnings(record=True) as seen:  # main leaves the caller's warning handling as it was
        warnings.simplefilter("always")
        warnings.warn("after", stacklevel=1)
    assert [str(w.message) for w in seen] == ["after"]


def test_a_closed_pipe_is_exit_0_and_says_nothing(monkeypatch):
    """``store-studio inspect big.bpk | head -1``: the reader goes away; the command stops quietly."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    stdout = os.fdopen(write_end, "w", buffering=1)
    err_read, err_write = os.pipe()
    stderr = os.fdopen(err_write, "w")
    monkeypatch.setattr("sys.stdout", stdout)
    monkeypatch.setattr("sys.stderr", stderr)
    try:
        assert main(["inspect", SAMPLE]) == 0
    finally:
        monkeypatch.undo()
    assert stderr.closed
    assert os.read(err_read, 100) == b""
    os.close(err_read)
    try:
        stdout.close()
    except BrokenPipeError:
        pass


def test_every_help_ends_with_the_exit_codes(capsys):
    assert parser().epilog == SUMMARY
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps the epilog
    assert text.endswith(SUMMARY) and text.startswith("usage: store-studio [-h] [--version] COMMAND")
    for name in COMMANDS:
        with pytest.raises(SystemExit) as done:
            main([name, "--help"])
        assert done.value.code == 0
        assert " ".join(capsys.readouterr().out.split()).endswith(SUMMARY), name


def test_version_prints_the_version_and_needs_no_subcommand(capsys):
    from engine import __version__
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"store-studio {__version__}\n"
    assert needed(["--version"]) == ()
    assert needed(["convert", "a", "b"]) == ("convert",)
    assert needed([]) == COMMANDS and needed(["--help"]) == COMMANDS and needed(["--version", "x"]) == COMMANDS


def test_no_command_is_a_usage_error_listing_the_commands(capsys):
    with pytest.raises(SystemExit) as done:
        main([])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "the following arguments are required: COMMAND" in err


def test_a_mistyped_command_suggests_the_closest_one():
    assert suggest_command("inpsect") == "inspect"
    assert suggest_command("convret") == "convert"
    assert suggest_command("dif") == "diff"
    assert suggest_command("migrat") == "migrate"
    assert suggest_command("model") is None
    assert suggest_command("xyz") is None


def test_without_words_main_reads_the_command_line(monkeypatch, capsys):
    """The entry point calls ``main()`` with no words: they come from ``sys.argv`` after the program's name."""
    monkeypatch.setattr("sys.argv", ["store-studio", "inspect", SAMPLE, "--json"])
    assert main() == 0
    assert '"format": "burnpack"' in capsys.readouterr().out
