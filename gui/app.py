"""Application set-up and the window's command line: ``store-studio [FILE...] [--screenshot PNG]``."""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Callable, Sequence

import engine
from engine import terminal

SCREENSHOT_SIZE = (1400, 900)
SCREENSHOT_TIMEOUT = 60.0  # seconds to wait for files and statistics before giving up
DOCKS = ("filters", "remap", "adapters", "sources", "preview")


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="store-studio", description="Open model files in the Store Studio window "
                                   "(with no file, the bundled sample). The subcommands above run "
                                   "on the command line instead.")
    root.add_argument("files", nargs="*", metavar="FILE", help="model files to open, one tab each")
    root.add_argument("--screenshot", metavar="PNG", type=Path,
                      help="render the window offscreen (at --size), save it as PNG and exit")
    root.add_argument("--size", metavar="WxH", type=_size, default=SCREENSHOT_SIZE,
                      help="the screenshot's size in pixels (default 1400x900)")
    root.add_argument("--select", metavar="NAME", help="select this tensor or group (full dotted name)")
    root.add_argument("--panel", choices=("selection", "file"), help="show this side panel")
    root.add_argument("--recipe", metavar="JSON", type=Path,
                      help="apply this recipe to the (first) file, or with no FILE open the recipe's own "
                           "sources, and show the surgery workbench")
    root.add_argument("--dock", choices=DOCKS, help="bring this workbench panel to the front (implies the workbench)")
    root.add_argument("--version", action="version", version=f"store-studio {engine.__version__}")
    root.add_argument("--install-desktop", action="store_true", help="add Store Studio to the desktop's menu and "
                      "open .bpk, .safetensors, .pt/.pth and .mpk files with it (freedesktop, per user)")
    root.add_argument("--uninstall-desktop", action="store_true", help="remove what --install-desktop added")
    root.add_argument("--theme", choices=("system", "dark"), default="system",
                      help="the desktop's colours, or a dark palette (every text colour at 4.5:1 contrast or more)")
    root.add_argument("--diff", metavar="FILE", type=Path,
                      help="show the diff view of the (first) file, after its --recipe if given, against FILE")
    return root


# The most pixels a --size side may have. An offscreen window is painted into an image of width x height x 4
# bytes, which Qt allocates and then draws into without checking: 100000x100000 (37 GiB) ended in SIGSEGV.
# 8192 is 256 MiB at most, past any screen made, and the largest window X11 and GPU textures commonly take.
MAX_SIDE = 8192


def _size(text: str) -> tuple[int, int]:
    """``1024x640`` as (1024, 640), for --size: each side a whole number of pixels from 1 to MAX_SIDE."""
    width, sep, height = text.lower().partition("x")
    if not (sep and _pixels(width) and _pixels(height)):
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT in pixels, like 1024x640, not {text!r}")
    if not (0 < int(width) <= MAX_SIDE and 0 < int(height) <= MAX_SIDE):
        raise argparse.ArgumentTypeError(f"each side is 1 to {MAX_SIDE} pixels (the offscreen window is one "
                                         f"image of that size), not {text!r}")
    return int(width), int(height)


def _pixels(text: str) -> bool:
    """ASCII digits, few enough for ``int`` (``isdigit`` alone takes ``²``, which ``int`` refuses)."""
    return text.isascii() and text.isdigit() and len(text) <= 9


def create_app(argv: Sequence[str], theme: str = "system") -> "QApplication":  # noqa: F821 - Qt is imported lazily
    """The application, its palette set before any window module is imported (gui.visual reads it once)."""
    from PySide6.QtWidgets import QApplication

    from gui import settings
    from gui.resources import icon, stylesheet

    app = QApplication.instance() or QApplication(list(argv))
    app.setOrganizationName(settings.ORGANIZATION)
    app.setApplicationName(settings.APPLICATION)
    app.setApplicationDisplayName("Store Studio")
    app.setWindowIcon(icon("app"))
    if theme == "dark":
        from gui.visual_palette import dark_palette
        app.setStyle("Fusion")  # the platform style may ignore a palette; Fusion paints with it
        app.setPalette(dark_palette())
    from gui.visual import themed
    app.setStyleSheet(themed(stylesheet()))
    return app  # type: ignore[return-value]


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.screenshot is not None:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        _forget_settings()
    from gui.samples import default_sample

    app = create_app([sys.argv[0]], args.theme)
    from gui.main_window import MainWindow  # after the palette: the window's colours follow it
    window = MainWindow()
    files = [_file(f) for f in args.files] or recipe_home(args.recipe) or [default_sample()]
    if args.screenshot is not None:
        return screenshot(window, files, args.screenshot, args.select, args.panel, args.recipe, args.dock,
                          args.size, args.diff)
    window.show()
    window.open_files(files)
    if args.select or args.panel or args.recipe or args.dock or args.diff:
        def arrange(view: "StoreView") -> None:  # noqa: F821
            if view.path != _absolute(files[0]):
                return
            problem = _arrange(view, args.select, args.panel)
            if problem:
                window.statusBar().showMessage(problem, 10_000)
            _start_surgery(window, args.recipe, args.dock, args.diff)

        window.file_opened.connect(arrange)
    return leave(app.exec())


QUIT_GRACE_MS = 100  # what work in flight gets, after the window cancelled it, to notice before the process ends


def leave(code: int) -> int:
    """The window closed: end now, whatever work is still in flight. Closing cancelled every task; one that
    cannot notice at once (reading a 1 GB tensor for the heat map) would otherwise hold the exit until it ends,
    since Qt waits for its thread pool. Everything such a task does is reading: the settings and output streams
    are flushed, and the process ends without awaiting it."""
    from PySide6.QtCore import QThreadPool

    from gui import settings

    if QThreadPool.globalInstance().waitForDone(QUIT_GRACE_MS):
        return code  # nothing left running: the ordinary exit
    settings.app_settings().sync()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def recipe_home(recipe: Path | None) -> list[Path]:
    """The recipe's first source (relative to the recipe's folder): what ``--recipe R.json`` alone opens.

    An unreadable recipe opens nothing here; applying it then reports why.
    """
    from engine import RecipeError
    from engine.surgery import Recipe

    if recipe is None:
        return []
    try:
        sources = Recipe.load(recipe).sources
    except RecipeError:
        return []
    if not sources:
        return []
    return [_file(sources[0].path)]  # Recipe.load resolved it from the recipe's folder


def _file(text: str) -> "Path | RemoteLocation":  # noqa: F821
    """A command-line file: a path, or an http(s):// or hf:// address (which a Path would mangle)."""
    from engine import is_url, location
    return location(text) if is_url(text) else Path(text)


def _absolute(where: "Path | RemoteLocation") -> "Path | RemoteLocation":  # noqa: F821
    return where.absolute() if isinstance(where, Path) else where


def _forget_settings() -> None:
    """Screenshots show the defaults, never this user's remembered sizes and recent files."""
    from PySide6.QtCore import QSettings

    folder = tempfile.mkdtemp(prefix="store-studio-screenshot-")
    atexit.register(shutil.rmtree, folder, True)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, folder)


def _start_surgery(window: "MainWindow", recipe: Path | None, dock: str | None,  # noqa: F821
                   diff: Path | None = None) -> None:
    """Apply --recipe, --dock and --diff: any one shows the workbench; --diff compares once the recipe is in."""
    if recipe is not None:
        window.open_recipe(recipe)
    elif dock is not None or diff is not None:
        window.start_surgery()
    if dock is not None:
        window.docks[dock].raise_()
    if diff is not None:
        window.show_diff()
        window.diff_panel().compare_with_file(diff)


def _arrange(view: "StoreView", select: str | None, panel: str | None) -> str | None:  # noqa: F821
    """Apply --select and --panel to a freshly opened tab; returns a problem to report, if any."""
    if select and not view.select(select):
        return f"{view.path.name} has no tensor or group named {select!r}"
    if panel == "file":
        view.side.setCurrentWidget(view.file_info)
    elif panel == "selection":
        view.side.setCurrentIndex(0)
    return None


def _wait(condition: Callable[[], bool], timeout: float) -> bool:
    """Run the event loop until ``condition()`` holds or ``timeout`` seconds pass.

    An event loop polled by a timer, not ``processEvents()`` in a loop: PySide6 6.12's ``processEvents``
    drops a reference to ``None`` on each call, so a wait of a few thousand calls ends the interpreter
    ("deallocating None"); a timer's slot does not.
    """
    from PySide6.QtCore import QEventLoop, QTimer

    if condition():
        return True
    loop = QEventLoop()
    poll, give_up = QTimer(), QTimer()
    poll.setInterval(10)
    poll.timeout.connect(lambda: condition() and loop.quit())
    give_up.setSingleShot(True)
    give_up.timeout.connect(loop.quit)
    poll.start()
    give_up.start(int(timeout * 1000))
    loop.exec()
    poll.stop()
    give_up.stop()
    return condition()


def screenshot(window: "MainWindow", files: list[Path], out: Path, select: str | None,  # noqa: F821
               panel: str | None, recipe: Path | None = None, dock: str | None = None,
               size: tuple[int, int] = SCREENSHOT_SIZE, diff: Path | None = None) -> int:
    """Open, arrange, wait until every worker is done, then grab the window, exactly ``size``, into a PNG.

    A file that cannot be opened is shown as the window shows it (its error dialog over the empty window):
    the PNG is written and the exit code is 1, the file's problem on stderr.
    """
    from PySide6.QtWidgets import QApplication

    failures: list[str] = []
    window.open_failed.connect(lambda path, failure: failures.append(
        failure.message if failure.message.startswith(f"{path.name}:") else f"{path.name}: {failure.message}"))
    window.resize(*size)
    window.show()
    window.open_files(files)
    if not _wait(window.is_idle, SCREENSHOT_TIMEOUT):
        terminal.err("store-studio: timed out opening files")
        return 1
    view = window.current_view()
    if view is None:
        terminal.err(f"store-studio: {'; '.join(failures) or 'nothing opened'}")
        _grab(window, out, size)  # the error state, as a user would see it; still a failure to report
        return 1
    problem = _arrange(view, select, panel)
    if problem:
        terminal.err(f"store-studio: {problem}")
        return 2
    _start_surgery(window, recipe, dock)
    if not _wait(window.is_idle, SCREENSHOT_TIMEOUT):
        terminal.err("store-studio: timed out computing statistics")
        return 1
    if recipe is not None and (view.document is None or view.document.path is None):
        terminal.err(f"store-studio: could not apply the recipe {recipe}")
        return 1
    if diff is not None:
        _start_surgery(window, None, None, diff)
        if not _wait(lambda: window.is_idle() and window.diff_panel().is_idle(), SCREENSHOT_TIMEOUT):
            terminal.err("store-studio: timed out comparing")
            return 1
    QApplication.processEvents()
    if not _grab(window, out, size):
        terminal.err(f"store-studio: cannot write {out}")
        return 1
    window.close()
    return 0


def _grab(window: "MainWindow", out: Path, size: tuple[int, int]) -> bool:  # noqa: F821
    """The window and any dialog over it, as one PNG of exactly ``size``: what a user would see on screen."""
    from PySide6.QtCore import QPoint
    from PySide6.QtGui import QPainter, QPalette
    from PySide6.QtWidgets import QApplication, QDialog

    window.resize(*size)  # the layout may have asked for more; a screen would not have given it
    QApplication.processEvents()
    image = window.grab()
    if image.size().toTuple() != size:
        image = image.copy(0, 0, *size)
    painter = QPainter(image)
    for dialog in window.findChildren(QDialog):
        if dialog.isVisible():
            shot = dialog.grab()
            corner = QPoint((size[0] - shot.width()) // 2, (size[1] - shot.height()) // 3)
            painter.drawPixmap(corner, shot)
            painter.setPen(window.palette().color(QPalette.ColorRole.Mid))  # offscreen dialogs have no frame
            painter.drawRect(corner.x() - 1, corner.y() - 1, shot.width() + 1, shot.height() + 1)
            dialog.close()
    painter.end()
    return image.save(str(out), "PNG")
