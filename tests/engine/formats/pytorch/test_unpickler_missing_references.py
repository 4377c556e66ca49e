"""A zip checkpoint's data.pkl whose memo stores, calls and persistent ids take what is not there: the edges of the
in-memory loop (``_Machine.run_in_memory``, which decodes these opcodes by index into data.pkl) , each refused in
exact words rather than with a Python error. Each file is a real
zip checkpoint written by ``checkpoint``; each refusal names the file's name, data.pkl, the opcode and its byte.

Promises (README, "PyTorch files": a forged pickle is refused in one line naming the file and what is wrong;
"Listing a .pt": the opcodes decoded by index keep their handlers' checks and messages) -> tests:
- a memo store (BINPUT, LONG_BINPUT) or a persistent id (BINPERSID) with an empty stack is refused as a stack
  underflow -> test_a_memo_store_or_persistent_id_on_an_empty_stack_is_refused_as_an_underflow
- a memo store, a REDUCE or a persistent id never takes an item from below a MARK: refused as a stack underflow
  -> test_a_memo_store_call_or_persistent_id_never_takes_an_item_below_a_mark
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.pytorch_pickle_builders import checkpoint, op_global, plain
from tests.refusals import refusal

BINPUT, LONG_BINPUT, BINPERSID, REDUCE = b"q\x00", b"r\x00\x00\x00\x00", b"Q", b"R"
PROTO = 2  # bytes of data.pkl before the ops ``checkpoint`` is given (PROTO 2)


@pytest.mark.parametrize(("op", "name"), [(BINPUT, "BINPUT"), (LONG_BINPUT, "LONG_BINPUT"), (BINPERSID, "BINPERSID")],
                         ids=["BINPUT", "LONG_BINPUT", "BINPERSID"])
def test_a_memo_store_or_persistent_id_on_an_empty_stack_is_refused_as_an_underflow(
        tmp_path: Path, op: bytes, name: str) -> None:
    """The first opcode after PROTO finds nothing to store or load: the loop says so, not Python's IndexError."""
    path = checkpoint(tmp_path / "empty.pt", op)
    assert refusal(path) == f"{path.name}: data.pkl is malformed ({name} at byte {PROTO}): stack underflow"


@pytest.mark.parametrize(("below", "above", "op", "name"), [
    (plain("w"), b"", BINPUT, "BINPUT"),
    (plain("w"), b"", LONG_BINPUT, "LONG_BINPUT"),
    (plain("w"), b"", BINPERSID, "BINPERSID"),
    (op_global("collections", "OrderedDict"), b")", REDUCE, "REDUCE"),  # the target below the mark, () above
], ids=["BINPUT", "LONG_BINPUT", "BINPERSID", "REDUCE"])
def test_a_memo_store_call_or_persistent_id_never_takes_an_item_below_a_mark(
        tmp_path: Path, below: bytes, above: bytes, op: bytes, name: str) -> None:
    """What lies below a MARK belongs to the container the MARK opens later: an opcode reaching it is refused
    rather than storing, calling or loading it."""
    path = checkpoint(tmp_path / "mark.pt", below + b"(" + above + op)
    at = PROTO + len(below) + 1 + len(above)
    assert refusal(path) == f"{path.name}: data.pkl is malformed ({name} at byte {at}): stack underflow"
