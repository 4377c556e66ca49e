"""Metadata keys keep burn-store's meaning in everything Store Studio writes.

burn-store writes ``format``, ``producer`` and ``version`` (its crate version) into every Burnpack and
SafeTensors file (``default_metadata``: crates/burn-store/src/burnpack/store.rs:66-71 at v0.20.0, :73-78 at
v0.21.0, crates/burn-store/src/burnpack.rs:64-69 at v0.22.0-pre.2; crates/burn-store/src/safetensors/store.rs:105-110
at v0.20.0). A PyTorch archive's ``version`` record (the zip layout's version) must not become that ``version``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from safetensors.torch import save_file as torch_save_file

import engine
from engine import ArrayStore, open_store
from engine.cli import main
from engine.exporting.metadata import carried_fields
from engine.surgery import Recipe, carried_metadata, plan


def metadata_of(path) -> dict[str, str]:
    with open_store(path) as store:
        return dict(store.metadata)


def test_a_pytorch_archives_records_travel_under_pytorch_names(tmp_path):
    source = tmp_path / "m.pt"
    torch.save({"fc.weight": torch.ones(2, 3)}, source)
    assert metadata_of(source) == {"byteorder": "little", "version": "3"}  # what torch's zip writes
    assert main(["convert", str(source), str(tmp_path / "m.bpk"), "-q"]) == 0
    assert metadata_of(tmp_path / "m.bpk") == {"format": "burnpack", "producer": "store-studio",
                                              "version": engine.__version__, "pytorch.archive_version": "3",
                                              "pytorch.byteorder": "little"}
    assert main(["convert", str(source), str(tmp_path / "m.safetensors"), "-q"]) == 0
    assert metadata_of(tmp_path / "m.safetensors") == {"producer": "store-studio", "pytorch.archive_version": "3",
                                                      "pytorch.byteorder": "little"}


def test_a_burn_written_burnpacks_producer_and_version_say_where_they_came_from(tmp_path):
    source = tmp_path / "burn.bpk"  # the three keys burn-store 0.21 writes, plus a user's own key
    plan([ArrayStore({"w": np.ones(2, np.float32)})]).export(
        source, metadata={"producer": "burn", "version": "0.21.0", "licence": "MIT"})
    assert metadata_of(source)["version"] == "0.21.0"
    out = tmp_path / "again.bpk"
    assert main(["convert", str(source), str(out), "--remap", "^w$", "weight", "-q"]) == 0
    written = metadata_of(out)
    assert written["producer"] == "store-studio" and written["version"] == engine.__version__
    assert written["burnpack.producer"] == "burn" and written["burnpack.version"] == "0.21.0"
    assert written["licence"] == "MIT" and written["format"] == "burnpack"


def test_safetensors_format_pt_is_kept_between_safetensors_and_renamed_into_burnpack(tmp_path):
    source = tmp_path / "hf.safetensors"
    torch_save_file({"w": torch.ones(2)}, str(source), metadata={"format": "pt"})
    assert main(["convert", str(source), str(tmp_path / "o.safetensors"), "-q"]) == 0
    assert metadata_of(tmp_path / "o.safetensors") == {"format": "pt", "producer": "store-studio"}
    assert main(["convert", str(source), str(tmp_path / "o.bpk"), "-q"]) == 0
    written = metadata_of(tmp_path / "o.bpk")
    assert written["format"] == "burnpack" and written["safetensors.format"] == "pt"


def test_a_file_store_studio_wrote_does_not_pile_up_its_own_producer(tmp_path):
    first = tmp_path / "one.bpk"
    plan([ArrayStore({"w": np.ones(2, np.float32)})]).export(first)
    assert main(["convert", str(first), str(tmp_path / "two.bpk"), "-q"]) == 0
    assert metadata_of(tmp_path / "two.bpk") == {"format": "burnpack", "producer": "store-studio",
                                                "version": engine.__version__}


@pytest.mark.parametrize("fmt", ["burnpack", "safetensors", None])
def test_no_reserved_key_is_filled_from_a_source(fmt):
    class Source:
        def __init__(self, format, metadata):
            self.format, self.metadata = format, metadata

    sources = [Source("pytorch", {"version": "3", "byteorder": "big"}),
               Source("safetensors", {"format": "pt", "producer": "burn", "version": "0.20.0"}),
               Source("burnpack", {"format": "burnpack", "producer": "burn", "version": "0.22.0", "store_studio.recipe": "ab"})]
    carried = carried_fields(sources, fmt)
    assert not {"producer", "version", "store_studio.recipe"} & set(carried)
    assert carried.get("format") == {"safetensors": "pt", "burnpack": "burnpack", None: None}[fmt]  # same format only
    assert carried["pytorch.archive_version"] == "3" and carried["burnpack.version"] == "0.22.0"


def test_clear_metadata_drops_every_carried_field(tmp_path):
    source = tmp_path / "m.pt"
    torch.save({"w": torch.ones(2)}, source)
    with open_store(source) as store:
        assert carried_metadata([store], Recipe(clear_metadata=True), "burnpack")[0] == {}
        assert carried_metadata([store], Recipe(), None)[0] == {"pytorch.archive_version": "3", "pytorch.byteorder": "little"}
