"""Numbers and names as people read them."""

import codecs
import os
import shutil
import subprocess
import unicodedata
import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine import humanize


def test_sizes_are_binary_units_with_exact_bytes_below_one_kibibyte():
    assert humanize.size(576) == "576 B"
    assert humanize.size(2304) == "2.25 KiB"
    assert humanize.size(409_600) == "400 KiB"
    assert humanize.size(3 << 30) == "3 GiB"


def test_durations_read_like_time_left():
    assert humanize.duration(4.6) == "5 s"
    assert humanize.duration(185) == "3 min 5 s"
    assert humanize.duration(3720) == "1 h 2 min"
    assert humanize.duration(-1) == "0 s"


# --- names for a terminal ---------------------------------------------------------------------------------

# Names GNU ls (quoting style "c") and printable() spell alike: C0 controls, ESC, DEL, a C1 control, a line
# separator, a byte that is no UTF-8, and printable text (CJK included) left as it is.
AS_LS_SHOWS = {"a\nb": r"a\nb", "a\tb": r"a\tb", "a\rb\ab\bb\vb\fb": r"a\rb\ab\bb\vb\fb", "a\x1b[2Jb": r"a\033[2Jb",
               "a\x7fb": r"a\177b", "a\x9bb": r"a\302\233b", "a\u2028b": r"a\342\200\250b", "a\x01b": r"a\001b",
               "中文.权重": "中文.权重", "a b.c-d_e": "a b.c-d_e", "a\\b": r"a\\b",
               os.fsdecode(b"bad\x80name"): r"bad\200name"}


def _ls_c_style(folder) -> list[str]:
    listing = subprocess.run(["ls", "--quoting-style=c", str(folder)], capture_output=True, check=True,
                             env={**os.environ, "LC_ALL": "C.UTF-8"}).stdout.decode()
    return sorted(line[1:-1] for line in listing.splitlines())


@pytest.mark.skipif(shutil.which("ls") is None, reason="needs ls")
def test_printable_spells_controls_as_gnu_ls_shows_them(tmp_path):
    for name in AS_LS_SHOWS:
        (tmp_path / name).write_bytes(b"")
    try:
        listed = _ls_c_style(tmp_path)
    except subprocess.CalledProcessError:
        pytest.skip("ls has no --quoting-style (not GNU coreutils)")
    assert listed == sorted(AS_LS_SHOWS.values())
    assert {humanize.printable(name): name for name in AS_LS_SHOWS} == {v: k for k, v in AS_LS_SHOWS.items()}


def test_printable_escapes_the_format_characters_ls_leaves_raw():
    # bidi override and isolate, zero-width space and joiner, soft hyphen, BOM, a tag past U+FFFF
    assert humanize.printable("evil\u202etxt.pt") == r"evil\342\200\256txt.pt"
    assert humanize.printable("a\u2066b\u2069c") == r"a\342\201\246b\342\201\251c"
    assert humanize.printable("a\u200bb\u200dc\xadd\ufeffe") == r"a\342\200\213b\342\200\215c\302\255d\357\273\277e"
    assert humanize.printable("a\U000e0001") == r"a\363\240\200\201"
    assert humanize.printable("a\u2029b") == r"a\342\200\251b"


def test_printable_leaves_printable_text_alone():
    for text in ("encoder.layers.0.weight", "中文.权重", "é ß ÿ", "a\u00a0b", "emoji 🙂", ""):
        assert humanize.printable(text) == text


def test_a_backslash_is_doubled_only_where_it_could_start_an_escape():
    assert humanize.printable("a\\nb") == r"a\\nb"  # not to be taken for a newline
    assert humanize.printable("a\\033b") == r"a\\033b"  # nor for an ESC
    assert humanize.printable("\\u4e2d") == r"\\u4e2d"  # nor for what backslashreplace writes on latin-1
    assert humanize.printable("x\\\n") == r"x\\\n"  # a backslash, then a newline
    assert humanize.printable("ends\\") == "ends\\\\"
    assert humanize.printable(r"^fc(\d)\.") == r"^fc(\d)\."  # a regex reads as typed
    assert humanize.printable(r"\.bias$ \w+ \( \[") == r"\.bias$ \w+ \( \["


def _read_back(shown: str) -> str:
    """What C's and Python's string-literal rules read ``shown`` as (octal escapes are UTF-8 bytes, as in ls)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # "\d": an unknown escape, kept as it is
        return codecs.escape_decode(shown.encode("utf-8"))[0].decode("utf-8")


HIDDEN = {"Cc", "Cf", "Zl", "Zp", "Cs"}


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",))))
def test_printable_text_holds_nothing_hidden_and_reads_back_as_the_name(name):
    shown = humanize.printable(name)
    assert not [c for c in shown if unicodedata.category(c) in HIDDEN]
    assert _read_back(shown) == name  # so two names never show alike


@given(st.text(alphabet="\\nu0x.\n\x1b\u202e", max_size=12))
def test_backslashes_next_to_escapes_read_back_as_the_name(name):
    assert _read_back(humanize.printable(name)) == name
