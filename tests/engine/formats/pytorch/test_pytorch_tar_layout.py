"""The tar layout (torch before 0.1.10): what it reads, byte for byte, and each refusal with its reason.

Every file is built here member by member (torch no longer writes this layout); one member at a time
is broken, so each test fails only on the check it names.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from tests.helpers.pytorch_checkpoints import write_tar

from engine.errors import FormatError
from engine.formats import open_store
from tests.helpers.pytorch_tar_archives import (
    FLOATS,
    Ref,
    checkpoint,
    dump,
    storages,
    tensors,
)


def test_a_tensor_reads_its_view_of_the_storage(tmp_path: Path) -> None:
    with open_store(checkpoint(tmp_path / "ok.pt")) as store:
        assert store.version == "tar" and store.names == ["w"] and store.values == {"epoch": 3}
        assert store.read("w").tobytes() == FLOATS[2:8].tobytes()


def test_a_big_endian_file_reads_as_little_endian_values(tmp_path: Path) -> None:
    path = checkpoint(tmp_path / "big.pt", sys_info=dump({"protocol_version": 1000, "little_endian": False}),
                      storages=storages(big=True))
    with open_store(path) as store:
        assert store.metadata["byteorder"] == "big"
        assert store.read("w").tobytes() == FLOATS[2:8].tobytes()


def test_a_storage_view_reads_its_part_of_the_root_storage(tmp_path: Path) -> None:
    path = checkpoint(tmp_path / "view.pt", storages=storages(views=[("2", "1", 4, 4)]),
                      tensors=tensors([("10", "2", 1, (3,), (1,), 1)]))
    with open_store(path) as store:
        assert store.read("w").tobytes() == FLOATS[5:8].tobytes()


@pytest.mark.parametrize(("members", "problem"), [
    ({"storages": dump(1, ("1", "cpu"))}, "is not (key, location, storage class)"),
    ({"storages": storages([("1", "cpu", torch.FloatStorage, -1, b"")])}, "storage 1 has a negative size"),
    ({"storages": storages(views=[("2", "9", 0, 1)])}, "is not (key, known root key, offset, size)"),
    ({"storages": storages(count=10**9)}, "claims 1000000000 records"),
    ({"tensors": tensors([("10", "7", 1, (2,), (1,), 0)])}, "is not (key, known storage key, tensor class)"),
    ({"tensors": tensors([("10", "1", 99, (), (), 0)])}, "tensor 10 claims 99 dimensions"),
    ({"tensors": tensors(count=-1)}, "claims -1 records"),
    ({"pickle": dump({"w": Ref("404")}, refs=True)}, "refers to tensor '404', which the archive does not hold"),
    ({"pickle": dump({"m": Ref(("module", "Net", "net.py", "class Net: ..."))}, refs=True)},
     "refers to outside data ('module', 'Net', 'net.py'"),
])
def test_a_broken_member_is_refused_saying_what_is_wrong(tmp_path: Path, members: dict, problem: str) -> None:
    with pytest.raises(FormatError, match=f"^broken.pt: .*{re.escape(problem)}"):
        open_store(checkpoint(tmp_path / "broken.pt", **members))


def test_a_missing_member_is_refused_naming_it(tmp_path: Path) -> None:
    path = write_tar(tmp_path / "three.pt", {"sys_info": dump({}), "storages": storages(), "tensors": dump([])})
    with pytest.raises(FormatError, match="tar archive has no 'pickle' member: not a PyTorch checkpoint"):
        open_store(path)


def test_a_member_cut_short_is_refused(tmp_path: Path) -> None:
    path = checkpoint(tmp_path / "cut.pt", pickle=dump({"w": Ref("10"), "pad": "x" * 4000}, refs=True))
    data = path.read_bytes()
    end = data.rindex(b"x" * 100) + 100  # inside the last member's data
    path.write_bytes(data[:end])
    with pytest.raises(FormatError, match=r"^cut.pt: (file is truncated: it has \d+ bytes, but tar member 'pickle' |"
                                          r"not a readable tar archive: unexpected end of data)"):
        open_store(path)


def test_a_damaged_tar_header_is_refused(tmp_path: Path) -> None:
    path = checkpoint(tmp_path / "bad.pt")
    data = bytearray(path.read_bytes())
    data[148:156] = b"zzzzzzzz"  # the first header's checksum field; "ustar" at 257 still says tar
    path.write_bytes(bytes(data))
    with pytest.raises(FormatError, match="not a readable tar archive"):
        open_store(path)
