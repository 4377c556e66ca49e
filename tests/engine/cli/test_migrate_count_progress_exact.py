"""``migrate``: every failure counted, and a progress line per record on a terminal, in-process on Burn records
written by the test writers (issue 25: survivors of ``engine/cli/migrate.py``).

Promises (README "Command line": migrate's summary line; a progress line on a terminal only, silenced by ``-q``)
-> tests:
- the summary counts every record that failed, not just whether one did -> ``test_two_broken_records_are_two_failed``
- each record's writing shows a ``writing NAME`` line on a terminal, none with ``-q``
  -> ``test_migrate_draws_a_writing_line_per_record_on_a_terminal``
"""

from __future__ import annotations

from pathlib import Path

from engine.cli import main
from engine.cli.progress import ERASE
from tests.terminals import cli_on_a_terminal

from tests.helpers.formats_burn_record_writers import Settings, model_item, write_record


def two_models(folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    item, _ = model_item()
    return (write_record(folder, "a", item, Settings(recorder="NamedMpk")),
            write_record(folder, "b", item, Settings(recorder="NamedMpk")))


def test_two_broken_records_are_two_failed(tmp_path, capsys):
    for record in two_models(tmp_path):
        record.write_bytes(record.read_bytes()[:200])
    assert main(["migrate", str(tmp_path)]) == 1
    assert capsys.readouterr().out.splitlines()[-1].endswith(": 0 skipped, 2 failed")


def migrate_on_a_terminal(monkeypatch, *args: str) -> str:
    return cli_on_a_terminal(monkeypatch, ["migrate", *args])


def test_migrate_draws_a_writing_line_per_record_on_a_terminal(tmp_path, monkeypatch):
    two_models(tmp_path / "loud")
    drawn = [text for text in migrate_on_a_terminal(monkeypatch, str(tmp_path / "loud")).split(ERASE) if text]
    assert [text.split("  ")[0] for text in drawn if "(100%)" in text] == ["writing a.bpk", "writing b.bpk"]
    two_models(tmp_path / "quiet")
    assert migrate_on_a_terminal(monkeypatch, str(tmp_path / "quiet"), "-q") == ""
