"""Each entry reads through its store with itself: exporting or planning never looks a tensor up by name."""

import numpy as np

from engine import ArrayStore, export, open_store
from engine.store import Store
from engine.surgery import Recipe, RemapRule, plan


def test_export_and_a_planned_read_make_no_lookup_by_name(tmp_path, monkeypatch):
    arrays = {f"layer{i}.weight": np.arange(12, dtype=np.float32).reshape(3, 4) + i for i in range(3)}
    export(ArrayStore(arrays).entries, tmp_path / "a.safetensors")
    with open_store(tmp_path / "a.safetensors") as store:
        looked_up = []
        original = Store.entry
        monkeypatch.setattr(Store, "entry", lambda self, name: looked_up.append(name) or original(self, name))
        export(store.entries, tmp_path / "b.bpk")
        planned = plan([store], Recipe(remaps=(RemapRule("layer", "block"),), adapters=("pytorch-to-burn",)))
        values = {t.name: t.read() for t in planned.tensors}
        assert looked_up == []
    np.testing.assert_array_equal(values["block2.weight"], arrays["layer2.weight"].T)
    with open_store(tmp_path / "b.bpk") as copy:
        assert {e.name: copy.read(e.name).tolist() for e in copy.entries} == {k: v.tolist() for k, v in arrays.items()}
