"""The error dialog's message reads as a sentence, but a file's name that opens it stays as the file spells it."""

from __future__ import annotations

from gui.dialogs import as_sentence


def test_a_message_becomes_a_sentence_but_a_leading_file_name_keeps_its_case() -> None:
    assert as_sentence("the header is broken") == "The header is broken."
    assert as_sentence("model.rs: not a Burnpack file") == "model.rs: not a Burnpack file."
    assert as_sentence("  done!  ") == "Done!"
    assert as_sentence("") == ""
