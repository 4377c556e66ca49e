"""``store-studio FILE --recipe R.json --screenshot PNG`` renders the workbench with the recipe applied."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QImage

from tests.helpers.samples import SAMPLES
from gui.app import main
from tests.helpers.gui_workbench import SAMPLE_PT

RECIPE = SAMPLES / "pytorch_to_burn.recipe.json"


def test_recipe_and_dock_flags_render_the_workbench(qapp, tmp_path: Path):
    out = tmp_path / "workbench.png"
    assert main([str(SAMPLE_PT), "--recipe", str(RECIPE), "--dock", "remap", "--screenshot", str(out)]) == 0
    image = QImage(str(out))
    assert (image.width(), image.height()) == (1400, 900)


def test_a_missing_recipe_fails_the_screenshot(qapp, tmp_path: Path):
    out = tmp_path / "workbench.png"
    assert main([str(SAMPLE_PT), "--recipe", str(tmp_path / "nope.json"), "--screenshot", str(out)]) == 1
    assert not out.exists()


def run_window(argv: list[str], inspect, monkeypatch) -> int:
    """``gui.app.main`` as a user starts it; ``inspect(window)`` runs once the window is idle with its file open
    and the workbench planned, records what it sees, and the window is then closed so that main returns.

    The application's event loop is replaced by a local one: ending a real ``QApplication.exec`` would leave
    Qt's quit flag set, and every later test's event loop would return at once."""
    from PySide6.QtCore import QEventLoop, QThreadPool, QTimer
    from PySide6.QtWidgets import QApplication

    from gui.main_window import MainWindow

    loop = QEventLoop()
    monkeypatch.setattr(QApplication, "exec", lambda self: loop.exec())
    deadline = [200]  # polls of 50 ms
    earlier = set(QApplication.topLevelWidgets())  # windows of earlier tests may linger until deleted

    def poll() -> None:
        window = next((w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow) and w not in earlier),
                      None)
        view = window.current_view() if window is not None else None
        ready = view is not None and view.document is not None and not view.document.busy and window.is_idle()
        deadline[0] -= 1
        if not ready and deadline[0] > 0:
            QTimer.singleShot(50, poll)
            return
        try:
            inspect(window)
        finally:
            if window is not None:
                window.close()
            loop.exit(0)

    QTimer.singleShot(0, poll)
    code = main(argv)
    QThreadPool.globalInstance().waitForDone(60_000)
    return code


def test_the_interactive_window_applies_select_recipe_and_dock(qapp, monkeypatch):
    seen = {}

    def inspect(window) -> None:
        view = window.current_view()
        seen["file"] = view.path.name
        seen["selected"] = view.current_node().path
        seen["recipe"] = view.document.path.name if view.document and view.document.path else None
        seen["dock"] = window.docks["adapters"].isVisible() and not window.docks["adapters"].visibleRegion().isEmpty()
        seen["adapters"] = view.document.recipe.adapters if view.document else None

    code = run_window([str(SAMPLE_PT), "--select", "fc1.weight", "--recipe", str(RECIPE), "--dock", "adapters"],
                      inspect, monkeypatch)
    assert code == 0
    assert seen == {"file": "sample_cnn.pt", "selected": "fc1.weight", "recipe": RECIPE.name, "dock": True,
                    "adapters": ("pytorch-to-burn",)}


def test_the_interactive_window_reports_an_unknown_selection_in_the_status_bar(qapp, monkeypatch):
    seen = {}

    def inspect(window) -> None:
        seen["status"] = window.statusBar().currentMessage()
        seen["surgery"] = window.current_view().document is not None

    assert run_window([str(SAMPLE_PT), "--select", "no.such.tensor", "--dock", "remap"], inspect, monkeypatch) == 0
    assert seen == {"status": "sample_cnn.pt has no tensor or group named 'no.such.tensor'", "surgery": True}
