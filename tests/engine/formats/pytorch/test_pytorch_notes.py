"""What opening a PyTorch file says before you ship it, word for word, and which files it claims (a wrong
note would let a user ship a file torch refuses): engine/formats/pytorch/__init__.py's ``sniff`` and notes.

Promises (README, "PyTorch files") -> tests:
- "when it names anything torch.load(weights_only=True) refuses by default ... say so: torch.load(weights_only=True)
  would refuse this file: it names 2 non-weight classes (...), shown here as placeholders; nothing was run"
  -> test_the_note_names_up_to_six_classes_then_counts_the_rest, test_one_foreign_class_is_singular
- "A TorchScript archive says a TorchScript archive: read as data, ..." -> tests/engine/formats/pytorch/
  test_torchscript_tables.py::test_the_archive_reads_as_jit_load_state_dict (and the note below)
- "2 keys naming tensors are neither text nor a whole number (first: ...)" -> test_the_keys_note_counts_keys
- the readers tell formats by their first bytes -> test_sniff_claims_zip_tar_and_binary_pickles_only
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from tests.helpers.pytorch_checkpoints import Storage, Tensor, zip_checkpoint

from engine.formats import open_store, pytorch


def classes(n: int) -> bytes:
    """A protocol 2 pickle: a list of ``n`` globals of classes nothing knows (m.C0, m.C1, ...)."""
    return b"\x80\x02(" + b"".join(f"cm\nC{i}\n".encode() for i in range(n)) + b"l."


def note(tmp_path: Path, data: bytes) -> str | None:
    path = tmp_path / "n.pt"
    path.write_bytes(data)
    with open_store(path) as store:
        return store.note


def test_one_foreign_class_is_singular(tmp_path: Path) -> None:
    assert note(tmp_path, classes(1)) == ("torch.load(weights_only=True) would refuse this file: it names 1 non-weight "
                                          "class (m.C0), shown here as placeholders; nothing was run")


def test_the_note_names_up_to_six_classes_then_counts_the_rest(tmp_path: Path) -> None:
    six = ", ".join(f"m.C{i}" for i in range(6))
    assert note(tmp_path, classes(6)) == ("torch.load(weights_only=True) would refuse this file: it names 6 non-weight "
                                          f"classes ({six}), shown here as placeholders; nothing was run")
    assert note(tmp_path, classes(8)) == ("torch.load(weights_only=True) would refuse this file: it names 8 non-weight "
                                          f"classes ({six} and 2 more), shown here as placeholders; nothing was run")


def test_a_plain_weights_file_has_no_note(tmp_path: Path) -> None:
    path = zip_checkpoint(tmp_path / "w.pt", {"w": Tensor(Storage("0", 4), 0, (4,), (1,))}, {"0": bytes(16)})
    with open_store(path) as store:
        assert store.note is None and store.foreign_classes == () and store.guessed_keys == ()


def test_the_keys_note_counts_keys(tmp_path: Path) -> None:
    one = {(1, "a"): Tensor(Storage("0", 4), 0, (4,), (1,))}
    with open_store(zip_checkpoint(tmp_path / "k1.pt", one, {"0": bytes(16)})) as store:
        assert store.note == ("1 key naming tensors is neither text nor a whole number (first: \"(1, 'a')\"), named "
                              "here as Python prints them; burn-store refuses such keys")
    two = {2.5: Tensor(Storage("0", 4), 0, (4,), (1,)), True: Tensor(Storage("0", 4), 0, (2,), (1,))}
    with open_store(zip_checkpoint(tmp_path / "k2.pt", two, {"0": bytes(16)})) as store:
        assert store.guessed_keys == ("2.5", "True")
        assert store.note == ("2 keys naming tensors are neither text nor a whole number (first: '2.5'), named "
                              "here as Python prints them; burn-store refuses such keys")


def test_both_notes_are_joined(tmp_path: Path) -> None:
    obj = {(1, "a"): Tensor(Storage("0", 4), 0, (4,), (1,)), "cls": Storage}  # a class of this test: a placeholder
    with open_store(zip_checkpoint(tmp_path / "both.pt", obj, {"0": bytes(16)})) as store:
        assert store.note == (f"torch.load(weights_only=True) would refuse this file: it names 1 non-weight class "
                              f"(tests.helpers.pytorch_checkpoints.Storage), shown here as placeholders; "
                              "nothing was run; 1 key naming tensors is neither text nor a whole number "
                              "(first: \"(1, 'a')\"), named here as Python prints them; burn-store refuses such keys")


@pytest.mark.parametrize(("head", "claimed"), [
    (b"PK\x03\x04" + bytes(300), True),
    (bytes(257) + b"ustar" + bytes(10), True),
    (bytes(257) + b"ustaR" + bytes(10), False),
    (b"\x80\x02}q\x00.", True),
    (b"\x80\x05.", True),
    (b"\x80\x06.", False),
    (b"\x80\x01.", False),
    (b"\x80", False),
    (b"PK\x03\x05", False),
    (pickle.dumps({}, protocol=0), False),
])
def test_sniff_claims_zip_tar_and_binary_pickles_only(head: bytes, claimed: bool) -> None:
    assert pytorch.sniff(head) is claimed


def test_a_tiny_pickle_opens(tmp_path: Path) -> None:
    """A file shorter than the tar signature's place (257 bytes) is read as what its first bytes say."""
    path = tmp_path / "tiny.pt"
    path.write_bytes(b"\x80\x02K\x07.")
    with open_store(path) as store:
        assert store.version == "pickle" and store.values == 7
