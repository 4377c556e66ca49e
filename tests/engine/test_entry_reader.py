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


def test_an_entry_reads_as_its_store_reads_it_by_name_quantized_too(tmp_path):
    from tests.helpers.formats_quantized_files import f32, gen2, i8, write
    path = write(tmp_path, {"w": ({"QFloat": gen2()}, [4], i8(-127, -71, 0, 35) + f32(0.5))})
    with open_store(path) as store:
        entry = store.entries[0]
        assert entry.read().tolist() == store.read("w").tolist() == [-63.5, -35.5, 0.0, 17.5]


def test_a_closed_store_is_freed_without_the_collector_and_its_entries_say_it_is_closed(tmp_path):
    import gc
    import weakref

    import pytest

    export(ArrayStore({"w": np.arange(4, dtype=np.float32), "b": np.ones(2, np.float32)}).entries,
           tmp_path / "a.safetensors")
    was_enabled = gc.isenabled()
    gc.disable()  # only reference counting frees now: a cycle left between store and entries would keep both
    try:
        with open_store(tmp_path / "a.safetensors") as store:
            entry = store.entry("b")
            assert entry.store is store and entry.read().tolist() == [1.0, 1.0]
        gone = weakref.ref(store)
        del store
        assert gone() is None
    finally:
        if was_enabled:
            gc.enable()
    with pytest.raises(ValueError, match="a.safetensors is closed"):
        entry.read()
    with pytest.raises(ValueError, match="a.safetensors is closed"):
        entry.byte_range()
    entry.release()  # nothing mapped any more: a no-op, as on the closed store
    assert (entry.name, entry.shape, entry.nbytes) == ("b", (2,), 8)
