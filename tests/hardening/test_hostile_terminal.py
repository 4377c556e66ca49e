"""Terminals get text, not control (else a hostile file could forge output, clear the screen or write the clipboard):
names, class names, metadata, config values, file names and recipe text from a hostile file reach stdout and stderr
with every control character escaped as ``ls`` shows it, one line each; ``--json`` stays JSON that gives back the raw
names; a latin-1 terminal gets ``\\u4e2d`` for what it cannot show instead of a UnicodeEncodeError.

Every file is real (written by safetensors, torch, Burn's record layout); the CLI's output is read as bytes
(pytest's binary capture, a pty, or a child process's pipes), as a terminal would receive them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.numpy import save_file

from engine import open_store
from engine.cli import main
from engine.cli.progress import ERASE
from tests.helpers.formats_burn_record_writers import Settings, model_item, write_record
from tests.helpers.samples import SAMPLES
from tests.terminals import cli_on_a_terminal

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
# Each hostile name and how it must be shown: a forged result line, a screen clear, an OSC 52 clipboard write,
# an 8-bit CSI, a right-to-left override, and a real backslash before an n (not to be taken for a newline).
NAMES = {"w\n store-studio: OK": r"w\n store-studio: OK", "x\x1b[2J": r"x\033[2J",
         "y\x1b]52;c;aGk=\a": r"y\033]52;c;aGk=\a", "z\x9bq": r"z\302\233q", "r\u202eevil": r"r\342\200\256evil",
         "b\\n": r"b\\n"}
METADATA = {"k\n\x1b[2J": "v\x1b]52;c;aGk=\a\u202e"}
METADATA_LINE = r"  k\n\033[2J = v\033]52;c;aGk=\a\342\200\256"
# Characters that reorder or hide text, beyond C0/C1 controls and DEL
INVISIBLE = set("\u200b\u200c\u200d\u200e\u200f\u2028\u2029\u202a\u202b\u202c\u202d\u202e"
                "\u2066\u2067\u2068\u2069\ufeff")


def shown_text(raw: bytes) -> str:
    """``raw`` as text, once it is checked to hold no control: no byte below 0x20 but line ends, no DEL, no C1
    control, no bidi override or invisible character."""
    assert not [b for b in raw if b < 0x20 and b != 0x0A] and b"\x7f" not in raw, raw
    text = raw.decode("utf-8")
    assert not [c for c in text if "\x80" <= c <= "\x9f" or c in INVISIBLE], text
    return text


def text_lines(raw: bytes) -> list[str]:
    """The lines a terminal shows for ``raw``, each ended by a newline and holding no control."""
    text = shown_text(raw)
    assert text.endswith("\n") or not text
    return text.split("\n")[:-1]


def hostile_safetensors(folder: Path, name: str = "hostile.safetensors") -> Path:
    path = folder / name
    save_file({n: np.ones(2, np.float32) for n in NAMES}, path, metadata=METADATA)
    return path


def test_inspect_shows_every_name_and_metadata_escaped_one_line_each(tmp_path, capsysbinary):
    assert main(["inspect", str(hostile_safetensors(tmp_path))]) == 0
    lines = text_lines(capsysbinary.readouterr().out)
    assert len(lines) == 2 + len(NAMES) + 2  # the file, the column names, a row per tensor, totals, the metadata
    rows = lines[2:2 + len(NAMES)]
    assert {row.split("  F32")[0].rstrip() for row in rows} == set(NAMES.values())
    assert len({row.index("  F32") for row in rows}) == 1  # columns aligned on the names' escaped widths
    assert lines[-2] == "6 tensors · 12 parameters · 48 B" and lines[-1] == METADATA_LINE
    assert not any(line.startswith("store-studio") for line in lines)


def test_inspect_json_stays_json_that_gives_back_the_raw_names(tmp_path, capsysbinary):
    assert main(["inspect", str(hostile_safetensors(tmp_path)), "--json"]) == 0
    raw = capsysbinary.readouterr().out
    text_lines(raw)
    document = json.loads(raw)
    assert {t["name"] for t in document["tensors"]} == set(NAMES) and document["metadata"] == METADATA
    assert raw.decode() == json.dumps(document, indent=2) + "\n"  # JSON's own escaping, byte for byte


@pytest.fixture
def hostile_class(monkeypatch) -> type:
    """A class whose module and name hold a forged line, a screen clear and a clipboard write."""
    module = types.ModuleType("evil\x1b[2J\nstore-studio: OK")
    cls = type("Cls\x1b]52;c;aGk=\a", (), {"__module__": module.__name__})
    setattr(module, cls.__name__, cls)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return cls


def test_pytorch_names_and_placeholder_class_names_are_escaped(tmp_path, capsysbinary, hostile_class):
    path = tmp_path / "hostile.pt"
    torch.save({"w\n store-studio: OK": torch.ones(2), "x\x1b[2J": torch.ones(1), "cfg": hostile_class()}, path,
               pickle_protocol=4)  # protocol 2 cannot name a module holding a newline
    assert main(["inspect", str(path)]) == 0
    lines = text_lines(capsysbinary.readouterr().out)
    shown = r"evil\033[2J\nstore-studio: OK.Cls\033]52;c;aGk=\a"
    assert lines[-1] == f"  class torch.load(weights_only=True) refuses: {shown}"
    assert lines[1].startswith("note: ") and f"({shown})" in lines[1]
    assert {line.split("  F32")[0].rstrip() for line in lines if "  F32" in line} == {r"w\n store-studio: OK",
                                                                                    r"x\033[2J"}


def test_config_prints_values_as_json_with_hidden_characters_escaped(tmp_path, capsysbinary):
    values = {"name\u202e": "v\x9b\x7f\x1b[2J", "中文": "模型", "b\\n": "\n"}
    torch.save({"w": torch.ones(1), "config": values}, tmp_path / "c.pt")
    assert main(["config", str(tmp_path / "c.pt"), "--key", "config"]) == 0
    raw = capsysbinary.readouterr().out
    text = "\n".join(text_lines(raw))
    assert json.loads(raw) == values
    assert r'"name\u202e": "v\u009b\u007f\u001b[2J"' in text and '"中文": "模型"' in text  # CJK stays readable


def test_convert_dry_run_lists_names_escaped(tmp_path, capsysbinary):
    assert main(["convert", str(hostile_safetensors(tmp_path)), str(tmp_path / "o.bpk"), "--dry-run",
                 "--include", "."]) == 0
    lines = text_lines(capsysbinary.readouterr().out)
    width = max(len(shown) for shown in NAMES.values())  # the name column: as wide as the widest escaped name
    assert sorted(lines[:len(NAMES)]) == sorted(f"{shown.ljust(width)}  F32  [2]  [Unknown]  from {shown}"
                                                for shown in NAMES.values())
    assert lines[len(NAMES):] == ["rule include '.': 6 tensors", "6 tensors out, 0 dropped, 0 conflicts, 0 guessed"]


def test_convert_names_a_hostile_output_in_one_escaped_line_and_writes_the_raw_names(tmp_path, capsysbinary):
    out = tmp_path / "out\n\x1b[2J.bpk"
    assert main(["convert", str(hostile_safetensors(tmp_path)), str(out)]) == 0
    assert text_lines(capsysbinary.readouterr().err) == [f"wrote {tmp_path}/out\\n\\033[2J.bpk"]
    with open_store(out) as written:
        assert {e.name for e in written.entries} == set(NAMES)


def test_diff_lists_names_escaped(tmp_path, capsysbinary):
    a = hostile_safetensors(tmp_path)
    save_file({"x\x1b[2J": np.zeros(2, np.float32), "only\x1b]52;c;aGk=\a": np.ones(1, np.float32)}, tmp_path / "b.st")
    assert main(["diff", str(a), str(tmp_path / "b.st"), "--no-values"]) == 0
    lines = text_lines(capsysbinary.readouterr().out)
    assert "different      x\\033[2J  " not in lines  # --no-values: bytes only, no statistics after the name
    assert len(lines) == len(NAMES) + 2
    assert "only_in_b      only\\033]52;c;aGk=\\a" in lines and "only_in_a      w\\n store-studio: OK" in lines
    assert lines[-1] == "1 different, 5 only in a, 1 only in b"


@pytest.mark.parametrize("content", [b"garbage", None], ids=["corrupt", "missing"])
def test_an_error_naming_a_hostile_file_is_one_escaped_line(tmp_path, capsysbinary, content):
    bad = tmp_path / "bad\n\x1b[2J\x1b]52;c;aGk=\a.safetensors"
    if content is not None:
        bad.write_bytes(content)
    assert main(["inspect", str(bad)]) == 1
    captured = capsysbinary.readouterr()
    [line] = text_lines(captured.err)
    assert line.startswith("store-studio: ") and r"bad\n\033[2J\033]52;c;aGk=\a.safetensors: " in line
    assert captured.out == b""


def test_a_usage_error_quoting_a_hostile_word_is_one_escaped_line(capsysbinary):
    with pytest.raises(SystemExit) as exit:
        main(["inspect", "a.bpk", "b\x1b[2J\nstore-studio: OK"])
    assert exit.value.code == 2
    lines = text_lines(capsysbinary.readouterr().err)
    assert lines[-1] == r"store-studio: error: unrecognized arguments: b\033[2J\nstore-studio: OK"
    assert all(line.startswith(("usage: ", " ")) for line in lines[:-1])


def test_migrate_names_hostile_record_files_escaped(tmp_path, capsysbinary):
    item, _ = model_item()
    write_record(tmp_path, "m\n\x1b[2J", item, Settings(recorder="NamedMpk"))
    assert main(["migrate", str(tmp_path)]) == 0
    assert text_lines(capsysbinary.readouterr().out) == [
        r"converted m\n\033[2J.mpk -> m\n\033[2J.bpk (11 tensors, 260 B)",
        f"migrated 1 of 1 record in {tmp_path} (260 B): 0 skipped, 0 failed"]
    assert (tmp_path / "m\n\x1b[2J.bpk").is_file()


def hostile_recipe(folder: Path) -> Path:
    path = folder / "shared.recipe.json"
    path.write_text(json.dumps({"version": 1, "sources": [{"path": "a\n\x1b[2J'\\n\u202e.pt"}],
                                "remaps": [{"pattern": "^x\x1b\\.", "replacement": "y\n"}],
                                "metadata": {"k\x1b]52;c;aGk=\a": "v"}}))
    return path


@pytest.mark.skipif(shutil.which("bash") is None, reason="reads the printed command back with bash")
def test_a_recipe_prints_as_a_command_line_bash_reads_back_unchanged(tmp_path, capsysbinary):
    assert main(["recipe", str(hostile_recipe(tmp_path))]) == 0
    [line] = text_lines(capsysbinary.readouterr().out)
    assert line.startswith(f"store-studio convert $'{tmp_path}/a\\n\\033[2J\\'\\\\n\\342\\200\\256.pt' OUT ")
    words = subprocess.run(["bash", "-c", f"printf '%s\\0' {line}"], capture_output=True, check=True).stdout
    assert words.decode().split("\0")[:-1] == ["store-studio", "convert", f"{tmp_path}/a\n\x1b[2J'\\n\u202e.pt", "OUT",
                                               "--remap", "^x\x1b\\.", "y\n", "--metadata", "k\x1b]52;c;aGk=\a=v"]


def test_a_recipe_prints_as_rust_whose_literals_escape_hidden_characters(tmp_path, capsysbinary):
    assert main(["recipe", str(hostile_recipe(tmp_path)), "--as", "rust"]) == 0
    lines = text_lines(capsysbinary.readouterr().out)
    source = f"{tmp_path}" + r"/a\u{a}\u{1b}[2J'\\n\u{202e}.pt"
    assert f'let mut store = PytorchStore::from_file("{source}")' in lines
    assert r'    .with_key_remapping("^x\u{1b}\\.", "y\u{a}")' in lines


def test_a_rust_comment_naming_a_hostile_source_stays_one_comment_line(tmp_path, capsysbinary):
    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps({"version": 1, "sources": [{"path": "p\nfn evil() {}\x1b[2J.safetensors",
                                                             "filter": {"exclude": ["\x1b"]}}]}))
    assert main(["recipe", str(recipe), "--as", "rust"]) == 0
    lines = text_lines(capsysbinary.readouterr().out)
    assert lines[-1] == (f"// Store Studio only: {tmp_path}/p\\nfn evil() {{}}\\033[2J.safetensors contributes only "
                         'its own names matching {"exclude": ["\\u001b"]}')
    assert not [line for line in lines if line.startswith("fn ")]


def test_the_progress_line_names_a_hostile_output_escaped(tmp_path, monkeypatch):
    out = tmp_path / "o\x1b[2J\n.safetensors"
    terminal = cli_on_a_terminal(monkeypatch, ["convert", str(SAMPLES / "sample_cnn.bpk"), str(out)])
    *drawn, result = terminal.replace("\r\n", "\n").split(ERASE)  # the pty's own line ends; our own erasures
    assert drawn[1].startswith("writing o\\033[2J\\n.safetensors  ")
    assert "\n" not in shown_text("".join(drawn).encode()) and text_lines(result.encode()) == [
        f"wrote {tmp_path}/o\\033[2J\\n.safetensors"]


def run_child(*args: str, encoding: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONIOENCODING": encoding}
    return subprocess.run([sys.executable, "-m", "gui.launch", *args], cwd=REPO, env=environment,
                          capture_output=True, timeout=120)


@pytest.mark.child
def test_a_latin1_terminal_gets_what_it_cannot_encode_escaped(tmp_path):
    path = tmp_path / "cjk.safetensors"
    save_file({"中文.权重": np.ones(2, np.float32), "café\x1b[2J": np.ones(1, np.float32)}, path)
    result = run_child("inspect", str(path), encoding="latin-1")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.decode("latin-1").split("\n")
    assert lines[2].startswith(r"café\033[2J  ")  # é is latin-1: written as it is
    assert lines[3].startswith(r"\u4e2d\u6587.\u6743\u91cd  ")
    missing = run_child("inspect", str(tmp_path / "坏.safetensors"), encoding="latin-1")
    assert missing.returncode == 1 and missing.stdout == b""
    [line] = missing.stderr.decode("latin-1").split("\n")[:-1]
    assert line.startswith("store-studio: ") and r"\u574f.safetensors" in line


@pytest.mark.child
def test_a_screenshot_that_cannot_open_its_file_names_it_escaped_in_one_line(tmp_path):
    """``store-studio FILE --screenshot out.png`` runs with no window to show an error in: the file's name,
    which holds a screen clear, reaches stderr as text."""
    hostile = tmp_path / "a\x1b[2Jb.pt"
    hostile.write_bytes(b"garbage")
    done = subprocess.run([sys.executable, "-m", "gui.launch", str(hostile), "--screenshot", str(tmp_path / "x.png")],
                          capture_output=True, timeout=120, cwd=REPO,
                          env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    ours = [line for line in text_lines(done.stderr) if line.startswith("store-studio:")]
    assert done.returncode == 1 and len(ours) == 1 and r"a\033[2Jb.pt: " in ours[0], done.stderr
