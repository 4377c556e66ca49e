"""A recipe file is UTF-8 whatever the locale, so one saved on a Latin-1 machine opens on a UTF-8 one.

Promise (README: Save Recipe and Open Recipe "keep the recipe as JSON (UTF-8 whatever the locale)") -> tests:
- save writes UTF-8 under an ASCII (C) locale -> test_save_writes_utf8_under_an_ascii_locale
- load reads UTF-8 under an ASCII (C) locale -> test_load_reads_utf8_under_an_ascii_locale

The locale is switched in-process (``locale.setlocale``), which is what ``open`` asks for its default
encoding when Python's UTF-8 mode is off; with UTF-8 mode on the default cannot differ, so nothing is tested.
"""
from __future__ import annotations

import json
import locale
import sys

import pytest

from engine.surgery import Recipe
from engine.surgery.remap import RemapRule

pytestmark = pytest.mark.skipif(sys.flags.utf8_mode == 1, reason="UTF-8 mode: the locale never picks the encoding")

RENAMED = "encodeur.poids_ü"


@pytest.fixture
def ascii_locale():
    saved = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    assert locale.getpreferredencoding(False) != "UTF-8"
    yield
    locale.setlocale(locale.LC_CTYPE, saved)


def test_save_writes_utf8_under_an_ascii_locale(tmp_path, ascii_locale):
    path = Recipe(remaps=(RemapRule(r"^enc\.w$", RENAMED),)).save(tmp_path / "r.recipe.json")
    doc = json.loads(path.read_bytes().decode("utf-8"))
    assert doc["remaps"] == [[r"^enc\.w$", RENAMED]]


def test_load_reads_utf8_under_an_ascii_locale(tmp_path, ascii_locale):
    path = tmp_path / "r.recipe.json"
    path.write_bytes(json.dumps({"version": 1, "remaps": [[r"^enc\.w$", RENAMED]]}, ensure_ascii=False).encode())
    assert Recipe.load(path).remaps == (RemapRule(r"^enc\.w$", RENAMED),)
