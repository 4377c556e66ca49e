"""Exit codes mean one thing (0 ok, 1 a file, 2 usage, 3 template, 130 Ctrl+C), and every failure is one line, never
a traceback: through the real entry point in a child process, and in-process word for word. Without it a script
calling ``store-studio`` could not tell a bad file from a bad flag, and a user would read tracebacks.

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
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from engine import ArrayStore, FormatError, export
from engine.cli import COMMANDS, main, needed, parser, suggest_command
from engine.cli import inspect as inspect_command
from engine.cli.exits import SUMMARY, UsageError
from tests.helpers.samples import SAMPLES

SAMPLE = str(SAMPLES / "sample_cnn.bpk")


def store_studio(*args: str) -> subprocess.CompletedProcess:
    """The real ``store-studio`` entry point, as a user's shell runs it."""
    return subprocess.run([sys.executable, "-m", "gui.launch", *args], capture_output=True, text=True, timeout=120)


def one_line_error(result: subprocess.CompletedProcess, code: int) -> str:
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("store-studio")
    return result.stderr


def write(path: Path, **arrays: np.ndarray) -> str:
    export(ArrayStore(arrays).entries, path)
    return str(path)


@pytest.mark.child
@pytest.mark.parametrize("flags, says", [
    (["--metadata", "nokv"], "--metadata wants KEY=VALUE, got 'nokv'"),
    (["--include", "("], "--include: invalid regex '('"),
    (["--exclude", "[a"], "--exclude: invalid regex '[a'"),
    (["--remap", "fc(", "x"], "remap rule 1 ('fc(' -> 'x'): invalid regex 'fc('"),
])
def test_a_bad_flag_value_is_a_usage_error_exit_2(tmp_path, flags, says):
    error = one_line_error(store_studio("convert", SAMPLE, str(tmp_path / "o.bpk"), *flags), 2)
    assert says in error
    assert not (tmp_path / "o.bpk").exists()


@pytest.mark.child
def test_a_pt_destination_is_a_usage_error_naming_format_and_saying_pt_cannot_be_written(tmp_path):
    error = one_line_error(store_studio("convert", SAMPLE, str(tmp_path / "model.pt")), 2)
    assert "model.pt" in error and "--format" in error and ".pt and .pth are read only" in error


@pytest.mark.child
def test_a_missing_input_is_exit_1_naming_the_folder_and_the_file(tmp_path):
    error = one_line_error(store_studio("inspect", str(tmp_path / "gone.bpk")), 1)
    assert error.startswith("store-studio: gone.bpk:") and str(tmp_path) in error


@pytest.mark.child
def test_a_missing_destination_folder_names_the_folder_and_the_file(tmp_path):
    error = one_line_error(store_studio("convert", SAMPLE, str(tmp_path / "no" / "out.bpk")), 1)
    assert "out.bpk" in error and f"the folder {tmp_path / 'no'} does not exist" in error


@pytest.mark.child
def test_an_existing_destination_says_use_overwrite(tmp_path):
    (tmp_path / "out.bpk").write_bytes(b"old")
    error = one_line_error(store_studio("convert", SAMPLE, str(tmp_path / "out.bpk")), 1)
    assert f"{tmp_path / 'out.bpk'} already exists; use --overwrite to replace it" in error
    assert (tmp_path / "out.bpk").read_bytes() == b"old"


@pytest.mark.child
def test_template_validation_is_exit_3_and_counts_one_tensor_in_the_singular(tmp_path):
    src = write(tmp_path / "a.safetensors", w=np.ones(2, np.float32))
    template = write(tmp_path / "t.bpk", w=np.ones(2, np.float32), extra=np.ones(1, np.float32))
    result = store_studio("convert", src, str(tmp_path / "o.bpk"), "--template", template)
    assert result.returncode == 3
    assert "store-studio: 1 tensor the template wants is missing (use --allow-partial" in result.stderr
    assert store_studio("convert", src, str(tmp_path / "o.bpk"), "--template", template,
                        "--allow-partial").returncode == 0


@pytest.mark.child
def test_diff_exit_code_is_1_only_when_asked_and_something_differs(tmp_path):
    a = write(tmp_path / "a.safetensors", w=np.ones(2, np.float32))
    b = write(tmp_path / "b.bpk", w=np.array([1, 2], np.float32))
    same = write(tmp_path / "same.bpk", w=np.ones(2, np.float32))
    assert store_studio("diff", a, b).returncode == 0
    assert store_studio("diff", a, b, "--exit-code").returncode == 1
    assert store_studio("diff", a, same, "--exit-code").returncode == 0


@pytest.mark.child
def test_help_lists_the_exit_codes():
    result = store_studio("--help")
    assert result.returncode == 0
    assert "exit codes: 0 success, 1 a problem with a file, 2 a usage error, 3 validation" in result.stdout
    assert "--exit-code" in store_studio("diff", "--help").stdout


def not_a_folder(tmp_path: Path) -> str:
    (tmp_path / "file").write_text("x")
    return str(tmp_path / "file" / "r.json")  # ENOTDIR even for root, who may write anywhere else


def bad_recipe(tmp_path: Path, text: str) -> str:
    (tmp_path / "r.json").write_text(text)
    return str(tmp_path / "r.json")


@pytest.mark.child
@pytest.mark.parametrize("case, flags, says", [
    ("save-recipe to a missing folder", lambda t: ["--save-recipe", str(t / "no" / "r.json")], "does not exist"),
    ("save-recipe under a file", lambda t: ["--save-recipe", not_a_folder(t)], "file is not a folder"),
    ("recipe that is not JSON", lambda t: ["--recipe", bad_recipe(t, "remaps: [x]")], "not a JSON recipe"),
    ("recipe that is JSON but no recipe", lambda t: ["--recipe", bad_recipe(t, "[1, 2]")], "must be a JSON object"),
    ("recipe without a version", lambda t: ["--recipe", bad_recipe(t, "{}")], "field 'version' is missing"),
    ("recipe that is missing", lambda t: ["--recipe", str(t / "none.json")], "cannot read the recipe"),
    ("recipe that is a folder", lambda t: ["--recipe", str(t)], "cannot read the recipe"),
    ("template that is missing", lambda t: ["--template", str(t / "none.bpk")], "cannot open it in"),
    ("template that is a folder without Rust source", lambda t: ["--template", str(t)], "holds no .rs file"),
    ("template that is no model", lambda t: ["--template", bad_recipe(t, "{}")], "not a Burnpack, SafeTensors, GGUF, ONNX, PyTorch"),
])
def test_former_tracebacks_are_one_line_exit_1(tmp_path, case, flags, says):
    error = one_line_error(store_studio("convert", SAMPLE, str(tmp_path / "o.bpk"), *flags(tmp_path)), 1)
    assert says in error, case
    assert not (tmp_path / "o.bpk").exists()


def test_a_bug_is_one_line_asking_for_a_report_and_the_traceback_only_on_request(monkeypatch, capsys):
    from engine.cli import inspect

    def broken(args):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(inspect, "run", broken)
    assert main(["inspect", SAMPLE]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "unexpected error (ZeroDivisionError: division by zero)" in error
    assert "please report it" in error and "STORE_STUDIO_TRACEBACK=1" in error
    monkeypatch.setenv("STORE_STUDIO_TRACEBACK", "1")
    with pytest.raises(ZeroDivisionError):
        main(["inspect", SAMPLE])


def test_an_os_error_the_engine_did_not_wrap_names_the_whole_path(monkeypatch, capsys, tmp_path):
    from engine.cli import inspect

    def unreadable(args):
        open(tmp_path / "missing" / "x.bpk", "rb")

    monkeypatch.setattr(inspect, "run", unreadable)
    assert main(["inspect", SAMPLE]) == 1
    assert capsys.readouterr().err == f"store-studio: {tmp_path / 'missing' / 'x.bpk'}: No such file or directory\n"


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
