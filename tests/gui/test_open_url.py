"""File › Open URL…: a remote model opens in a tab off the UI thread, is remembered, and a slow server can be
left behind with Cancel while the window keeps working. A real HTTP server on loopback serves the files."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtWidgets import QDialogButtonBox
from safetensors.numpy import save as save_safetensors

from engine import RemoteLocation
from gui import settings
from gui.open_url import OpenUrlDialog
from tests.helpers.remote_http_site import Server, Site

ARRAYS = {"enc.weight": np.arange(96, dtype=np.float32).reshape(8, 12), "enc.bias": np.ones(8, np.float32)}


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("STORE_STUDIO_HTTP_TIMEOUT", "2")
    monkeypatch.setenv("STORE_STUDIO_HTTP_RETRIES", "0")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    site = Server(Site())
    site.site.files["/models/tiny.safetensors"] = save_safetensors(ARRAYS)
    yield site
    site.close()


def test_a_url_opens_in_a_tab_named_after_its_file_and_is_remembered(window, qtbot, server):
    url = server.url("/models/tiny.safetensors")
    window.open_file(url)
    qtbot.waitUntil(lambda: window.view_for(RemoteLocation(url)) is not None, timeout=10_000)
    view = window.view_for(RemoteLocation(url))
    assert window.tabs.tabText(window.tabs.indexOf(view)) == "tiny.safetensors"
    assert window.tabs.tabToolTip(window.tabs.indexOf(view)) == url
    assert sorted(view.store.names) == sorted(ARRAYS)
    assert settings.recent_urls() == [url] and settings.recent_files()[0] == url
    assert not window.stale.is_stale(view)
    dialog = OpenUrlDialog(window)
    assert [dialog.box.itemText(i) for i in range(dialog.box.count())] == [url]


def test_the_dialog_opens_only_an_address(qtbot):
    dialog = OpenUrlDialog()
    qtbot.addWidget(dialog)
    button = dialog.buttons.button(QDialogButtonBox.StandardButton.Open)
    assert not button.isEnabled()
    dialog.box.setEditText("/home/me/model.bpk")
    assert not button.isEnabled()
    dialog.box.setEditText("  hf://org/repo/model.safetensors ")
    assert button.isEnabled() and dialog.url() == "hf://org/repo/model.safetensors"


def test_cancel_leaves_a_silent_server_behind_and_the_window_keeps_working(window, qtbot, server, tmp_path):
    server.site.stall.add("/slow.safetensors")
    window.open_file(server.url("/slow.safetensors"))
    qtbot.waitUntil(lambda: window.cancel_opening_button.isVisible(), timeout=5_000)
    assert "slow.safetensors" in window.busy_label.text()
    window.cancel_opening_button.click()
    assert not window.busy.isVisible() and not window.cancel_opening_button.isVisible()
    url = server.url("/models/tiny.safetensors")  # meanwhile another file opens
    window.open_file(url)
    qtbot.waitUntil(lambda: window.view_for(RemoteLocation(url)) is not None, timeout=10_000)
    assert window.tabs.count() == 1


def test_a_url_given_on_the_command_line_opens_as_a_url(window, qtbot, server):
    from gui.app import _file
    url = server.url("/models/tiny.safetensors")
    window.open_files([_file(url)])  # what `store-studio URL` hands the window; a Path would mangle "//"
    qtbot.waitUntil(lambda: window.view_for(RemoteLocation(url)) is not None, timeout=10_000)
    assert str(window.view_for(RemoteLocation(url)).store.path) == url


def test_a_remote_model_exports_from_the_window_to_the_bytes_of_its_local_copy(window, qtbot, server, tmp_path):
    from engine import open_store
    from gui.workbench.document import RecipeDocument
    from gui.workbench.export_dialog import run_export
    url = server.url("/models/tiny.safetensors")
    (tmp_path / "tiny.safetensors").write_bytes(server.site.files["/models/tiny.safetensors"])
    store = open_store(url)
    document = RecipeDocument(store, window.work)
    qtbot.waitUntil(lambda: not document.busy and document.plan is not None, timeout=10_000)
    dialog = run_export(window, document)
    assert Path(dialog.path_edit.text()).parent == Path.home()  # a URL has no folder to write beside
    dialog.path_edit.setText(str(tmp_path / "remote.bpk"))
    dialog.export_button.click()
    qtbot.waitUntil(lambda: dialog.exported_path is not None, timeout=10_000)
    local_store = open_store(tmp_path / "tiny.safetensors")
    local = RecipeDocument(local_store, window.work)
    qtbot.waitUntil(lambda: not local.busy and local.plan is not None, timeout=10_000)
    local.plan.export(tmp_path / "local.bpk", None, metadata=dialog.metadata())
    with open_store(tmp_path / "remote.bpk") as a, open_store(tmp_path / "local.bpk") as b:
        assert a.names == b.names and all(np.array_equal(a.read(n), b.read(n)) for n in a.names)
    assert (tmp_path / "remote.bpk").read_bytes() == (tmp_path / "local.bpk").read_bytes()
    dialog.close()
    document.close()
    local.close()
    store.close()
    local_store.close()


# --- a server that ignores byte ranges: the whole download shows in the status bar, and Cancel stops it -------

@pytest.fixture
def whole_file(server, tmp_path, monkeypatch):
    """An 8 MiB model on a server that ignores Range and pauses after 3 MiB until ``resume`` is set; downloads go
    to ``tmp_path`` so leftovers can be seen."""
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("STORE_STUDIO_HTTP_TIMEOUT", "30")
    server.site.files["/whole.safetensors"] = save_safetensors({"w": np.arange(2 << 20, dtype=np.float32)})
    server.site.no_ranges.add("/whole.safetensors")
    resume = threading.Event()
    server.site.pauses["/whole.safetensors"] = (3 << 20, resume)
    yield server.url("/whole.safetensors"), len(server.site.files["/whole.safetensors"]), resume
    resume.set()


def _watch_status_bar(window) -> list[tuple[tuple[int, int], int, int, str]]:
    """What the status bar showed each time it showed a download: bytes and total, bar value and maximum, label."""
    seen: list[tuple[tuple[int, int], int, int, str]] = []
    window.download_progressed.connect(lambda d: seen.append(
        (d.progress, window.busy.value(), window.busy.maximum(), window.busy_label.text())))
    return seen


def test_a_whole_download_shows_its_bytes_rate_and_time_left_in_the_status_bar(window, qtbot, whole_file):
    url, size, resume = whole_file
    seen = _watch_status_bar(window)
    window.open_file(url)
    qtbot.waitUntil(lambda: bool(seen) and seen[-1][0] == (3 << 20, size), timeout=10_000)
    progress, value, maximum, label = seen[-1]
    assert (value, maximum) == (round(1000 * (3 << 20) / size), 1000) and window.busy.isVisible()
    assert label.startswith("Downloading all of whole.safetensors: 3 MiB of 8 MiB · ") and label.endswith(" left")
    count = len(seen)
    qtbot.waitUntil(lambda: window.busy_label.text() != label, timeout=10_000)  # stalled: the rate falls, shown
    assert seen[-1][0] == (3 << 20, size) and len(seen) > count
    resume.set()
    qtbot.waitUntil(lambda: window.view_for(RemoteLocation(url)) is not None, timeout=10_000)
    assert not window.busy.isVisible() and window.busy.maximum() == 0  # a plain busy bar again for the next open


def test_cancelling_a_whole_download_leaves_no_tab_and_no_partial_copy(window, qtbot, whole_file, tmp_path):
    url, size, resume = whole_file
    seen = _watch_status_bar(window)
    window.open_file(url)
    qtbot.waitUntil(lambda: bool(seen) and seen[-1][0] == (3 << 20, size), timeout=10_000)
    assert len(list(tmp_path.glob("store-studio-download-*"))) == 1  # the partial copy, unlinked only once open
    window.cancel_opening_button.click()
    assert not window.busy.isVisible() and not window.cancel_opening_button.isVisible()  # at once
    resume.set()  # the worker hears of the cancel at its next bytes
    qtbot.waitUntil(lambda: window.opener.active == 0, timeout=10_000)
    assert window.tabs.count() == 0 and list(tmp_path.glob("store-studio-download-*")) == []
