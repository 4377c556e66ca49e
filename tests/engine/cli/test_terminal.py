"""What the command line writes is text for a terminal (engine.cli.terminal): each line escaped whole, JSON
escaped as JSON, program text as its language escapes it, and a stream that cannot encode a character gets
an escape instead of an exception."""

from __future__ import annotations

import io
import json
import sys
import warnings

from engine.cli import show_warning, terminal


def test_a_line_is_escaped_whole_on_stdout_and_stderr(capsysbinary):
    terminal.out("tensor w\n store-studio: OK")
    terminal.err("store-studio: x\x1b[2J.pt: bad\r")
    captured = capsysbinary.readouterr()
    assert captured.out == b"tensor w\\n store-studio: OK\n" and captured.err == b"store-studio: x\\033[2J.pt: bad\\r\n"


def test_a_warning_is_one_escaped_line(capsysbinary):
    with warnings.catch_warnings():
        warnings.showwarning = show_warning
        warnings.warn("http://127.0.0.1/m\x1b]52;c;aGk=\a\nstore-studio: OK ignores byte ranges")
    assert capsysbinary.readouterr().err == \
        b"store-studio: warning: http://127.0.0.1/m\\033]52;c;aGk=\\a\\nstore-studio: OK ignores byte ranges\n"


def test_json_keeps_its_own_escapes_and_spells_what_it_would_write_raw(capsysbinary):
    value = {"k\x7f\u202e": ["\x9b\n中", "\U000e0001", "a\\b"]}
    terminal.document(value, ascii_only=False)
    raw = capsysbinary.readouterr().out
    assert raw.decode().split("\n") == ['{', '  "k\\u007f\\u202e": [', '    "\\u009b\\n中",', '    "\\udb40\\udc01",',
                                        '    "a\\\\b"', '  ]', '}', '']
    assert json.loads(raw) == value
    terminal.document(value)
    assert json.loads(capsysbinary.readouterr().out) == value


def test_program_text_keeps_its_backslashes_and_still_shows_a_stray_control_escaped(capsysbinary):
    terminal.code('let p = r"^fc\\.(\\d+)";\nlet q = "a\\\\n";\n// \x1b[2J\u202e')
    assert capsysbinary.readouterr().out == \
        b'let p = r"^fc\\.(\\d+)";\nlet q = "a\\\\n";\n// \\033[2J\\342\\200\\256\n'


def test_columns_are_padded_to_the_width_each_name_takes_once_escaped():
    rows = [("name", "size"), ("a\x1b[2J", "8 B"), ("long.name.here", "1,024 B")]
    # "a\033[2J" takes 8 columns of the 14 the longest name does, so 6 more before the column gap
    assert terminal.aligned(rows, right_from=1) == ["name" + " " * 15 + "size", "a\x1b[2J" + " " * 12 + "8 B",
                                                    "long.name.here  1,024 B"]
    assert terminal.aligned([("a", "from x"), ("a\nb", "from y")]) == ["a     from x", "a\nb  from y"]
    assert terminal.aligned([]) == []


def test_a_stream_that_cannot_encode_a_name_gets_an_escape_instead_of_an_error(monkeypatch):
    latin1 = io.TextIOWrapper(io.BytesIO(), encoding="latin-1")
    monkeypatch.setattr(sys, "stdout", latin1)
    terminal.prepare_streams()
    terminal.out("中文.权重 café")
    latin1.flush()
    assert latin1.buffer.getvalue() == b"\\u4e2d\\u6587.\\u6743\\u91cd caf\xe9\n"


def test_preparing_leaves_streams_that_are_not_text_wrappers_alone(monkeypatch):
    captured = io.StringIO()
    monkeypatch.setattr(sys, "stdout", captured)
    terminal.prepare_streams()
    terminal.out("中")
    assert captured.getvalue() == "中\n"
