"""The lean install holds: the app imports no Qt module outside QtCore, QtGui and QtWidgets (PySide6-Essentials)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers.samples import SAMPLES

REPO = Path(__file__).resolve().parent.parent.parent
QT_MODULES = {"PySide6.QtCore", "PySide6.QtGui", "PySide6.QtWidgets"}  # PySide6.support.* is binding plumbing

# The screenshot path with the workbench open draws every panel, icon, chart and dock the window has.
PROBE = """
import json, sys
from gui.launch import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "qt": sorted(m for m in sys.modules if m.split(".")[0] in ("PySide6", "shiboken6"))}))
"""


def test_the_window_imports_only_qtcore_qtgui_and_qtwidgets(tmp_path):
    result = subprocess.run([sys.executable, "-c", PROBE, str(SAMPLES / "sample_cnn.pt"), "--recipe",
                             str(SAMPLES / "pytorch_to_burn.recipe.json"), "--dock", "adapters",
                             "--screenshot", str(tmp_path / "w.png")], cwd=REPO, capture_output=True, text=True,
                            timeout=180)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["code"] == 0 and (tmp_path / "w.png").stat().st_size > 0
    assert {m for m in report["qt"] if m.startswith("PySide6.Qt")} == QT_MODULES
