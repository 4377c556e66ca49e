"""The window survives strangers' files: each broken or hostile file gets a dialog, nothing runs,
and a good file still opens afterwards."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtWidgets import QMessageBox

from tests.helpers.samples import SAMPLES
from gui.dialogs import ERROR_DIALOG
from gui.main_window import MainWindow

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
HOSTILE = FIXTURES / "hostile"
REGRESSIONS = Path(__file__).resolve().parent.parent / "hardening" / "regressions"


def bad_files(tmp_path: Path) -> list[tuple[Path, str]]:
    """(file, what its dialog must mention): hostile pickles, fuzzer finds and plain damage."""
    expected = json.loads((HOSTILE / "HOSTILE.json").read_text())
    files = [(HOSTILE / name, info["refuses"]) for name, info in sorted(expected.items())][:14]
    files += [(path, "") for path in sorted(REGRESSIONS.glob("*.*")) if path.suffix in (".bpk", ".pt")]
    sample = (SAMPLES / "sample_cnn.bpk").read_bytes()
    damaged = {"empty.bpk": b"", "truncated.bpk": sample[:300], "newer.bpk": sample[:4] + b"\x09\x00" + sample[6:],
               "noise.safetensors": bytes(range(256)) * 4}
    for name, content in damaged.items():
        (tmp_path / name).write_bytes(content)
        files.append((tmp_path / name, ""))
    return files


def visible_error(window: MainWindow) -> QMessageBox | None:
    box = window.findChild(QMessageBox, ERROR_DIALOG)
    return box if box is not None and box.isVisible() else None


def test_twenty_bad_files_each_get_a_dialog_and_a_good_file_opens_after(window: MainWindow, open_view, qtbot,
                                                                          tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where a payload that ran would leave its sentinel
    files = bad_files(tmp_path)
    assert len(files) >= 20
    for path, mention in files:
        window.open_file(path)
        qtbot.waitUntil(lambda: visible_error(window) is not None, timeout=30_000)
        box = visible_error(window)
        assert path.name in box.text()
        assert mention in box.informativeText()
        assert "Traceback" not in box.informativeText()
        box.close()
        qtbot.waitUntil(lambda: visible_error(window) is None, timeout=30_000)
        assert window.isVisible() and window.tabs.count() == 0
    assert not (tmp_path / "HOSTILE_RAN").exists()
    view = open_view(SAMPLES / "sample_cnn.safetensors")
    assert window.tabs.count() == 1 and view.model.rowCount() > 0
