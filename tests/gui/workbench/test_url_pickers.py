"""The workbench's pickers take an address as well as a path: a source to merge, the file the diff compares
with, the template. The address is typed into the real picker; a real HTTP server on loopback serves the file."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QDialogButtonBox
from safetensors.numpy import save as save_safetensors

from engine import RemoteLocation, open_store
from gui import settings
from gui.main_window import MainWindow
from gui.model_picker import ModelPicker
from gui.workbench.diff_panel import show_diff_dock
from gui.workbench.template_picker import choose_template
from tests.helpers.gui_workbench import SAMPLE_PT
from tests.helpers.remote_http_site import Server, Site

PATH = "/org/repo/resolve/main/other.safetensors"


@pytest.fixture
def url(monkeypatch):
    """The sample model's tensors, plus one of its own, served as SafeTensors."""
    monkeypatch.setenv("STORE_STUDIO_HTTP_RETRIES", "0")
    with open_store(SAMPLE_PT) as sample:
        arrays = {e.name: np.ascontiguousarray(sample.read(e.name)) for e in sample.entries}
    server = Server(Site())
    server.site.files[PATH] = save_safetensors(arrays | {"extra.weight": np.ones(3, np.float32)})
    yield server.url(PATH)
    server.close()


def answer_picker(text: str) -> list[str]:
    """Type ``text`` into the picker about to open and press Open; returns the picker's title once it has."""
    titles: list[str] = []

    def answer() -> None:
        picker = QApplication.activeModalWidget()
        if not isinstance(picker, ModelPicker):
            if picker is not None:
                picker.close()  # never leave a test waiting on a dialog it did not expect
            return
        titles.append(picker.windowTitle())
        picker.box.setEditText(text)
        picker.buttons.button(QDialogButtonBox.StandardButton.Open).click()

    QTimer.singleShot(0, answer)
    return titles


def test_a_source_to_merge_can_be_an_address(window: MainWindow, surgery, qtbot, url):
    document = surgery()
    titles = answer_picker(url)
    window.panels["sources"].add_dialog()
    qtbot.waitUntil(lambda: len(document.recipe.sources) == 2, timeout=10_000)
    assert titles == ["Add a source to merge"] and document.recipe.sources[1].path == url
    qtbot.waitUntil(lambda: not document.busy and "extra.weight" in {t.name for t in document.plan.tensors},
                    timeout=10_000)
    assert settings.recent_urls()[0] == url


def test_the_diff_compares_with_an_address(window: MainWindow, surgery, qtbot, url):
    document = surgery()
    panel = show_diff_dock(window, document)
    titles = answer_picker(url)
    panel._choose_file()
    qtbot.waitUntil(lambda: panel.other is not None, timeout=10_000)
    assert titles == ["Compare with"] and panel.other.path == RemoteLocation(url)
    assert panel.other.remote and "extra.weight" in panel.other.names


def test_the_template_can_be_an_address(window: MainWindow, surgery, qtbot, url):
    document = surgery()
    titles = answer_picker(url)
    assert choose_template(window, document, window.work, document.store.path)
    qtbot.waitUntil(lambda: document.template is not None, timeout=10_000)
    assert titles == ["Choose a template: a file saved from the target model, or its Rust source"]
    assert document.template.path == RemoteLocation(url) and "extra.weight" in document.template.names
