"""Exit codes mean one thing (0 ok, 1 a file, 2 usage, 3 template), and every failure is one line, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine import ArrayStore, export
from engine.cli import main
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
    ("template that is no model", lambda t: ["--template", bad_recipe(t, "{}")], "not a Burnpack, SafeTensors, GGUF, PyTorch"),
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
