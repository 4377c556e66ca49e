"""GGUF files open like any model file (engine/formats/gguf.py, engine/ggml.py): every tensor's name, GGML type and
shape (numpy order), the key-values with arrays as their length and first items, and values equal, bit for bit, to
``gguf.quants.dequantize`` of the same bytes; hostile headers end in one line naming the file. Without these a
user converting a llama.cpp model would get other names, shapes or values than llama.cpp's own library reads."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from gguf import GGUFReader
from gguf.quants import dequantize

from engine import FormatError, open_store
from engine.values.chunked import values_of
from tests.helpers.gguf_files import key_u32, raw_file, tensor_info, text, write_model


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("gguf") / "tiny.gguf"
    write_model(path)
    return path


def reference(path: Path) -> dict[str, tuple[str, tuple[int, ...], np.ndarray, int]]:
    """What llama.cpp's ``GGUFReader`` and ``dequantize`` say of each tensor: type, shape, values, data offset."""
    reader = GGUFReader(str(path))
    return {t.name: (t.tensor_type.name, shape_of(t), values_of_reader(t), int(t.data_offset)) for t in reader.tensors}


def shape_of(tensor) -> tuple[int, ...]:
    return tuple(int(n) for n in reversed(tensor.shape))


def values_of_reader(tensor) -> np.ndarray:
    """``dequantize``'s values; an integer type's as the reader maps them (``dequantize`` leaves those out)."""
    if tensor.tensor_type.name.startswith("I"):
        return np.asarray(tensor.data).reshape(shape_of(tensor))
    return dequantize(tensor.data, tensor.tensor_type).reshape(shape_of(tensor))


def test_every_tensor_has_the_name_type_shape_and_place_gguf_reader_gives(model):
    expected = reference(model)
    with open_store(model) as store:
        assert store.format == "gguf" and store.version == "v3"
        assert [e.name for e in store.entries] == list(expected)  # the header's order
        for entry in store.entries:
            kind, shape, values, offset = expected[entry.name]
            assert (str(entry.dtype), tuple(entry.shape), entry.offset) == (kind, shape, offset), entry.name
    assert [expected[n][0] for n in expected] == ["Q8_0", "Q4_0", "Q4_K", "Q6_K", "F32", "F16", "I32"]


def test_every_value_is_gguf_dequantize_bit_for_bit(model):
    expected = reference(model)
    with open_store(model) as store:
        for entry in store.entries:
            want = expected[entry.name][2]
            got = store.read(entry.name)
            if entry.dtype.name == "F16":  # read as stored; gguf widens to F32, which is exact
                got = got.astype(np.float32)
            assert got.shape == want.shape and got.dtype == want.dtype, entry.name
            assert got.tobytes() == want.tobytes(), entry.name


@pytest.mark.parametrize("name", ["blk.0.attn_k.weight", "blk.0.ffn_up.weight", "blk.0.ffn_down.weight"])
def test_any_run_of_values_is_the_same_run_of_the_whole_tensor(model, name):
    """Statistics and the histogram read a chunk at a time: a run that starts and ends mid-block gives the same
    values as the whole tensor decoded at once."""
    want = reference(model)[name][2].reshape(-1)
    with open_store(model) as store:
        values = values_of(store.entry(name))
        read = values.reader(1000)
        for start, stop in [(0, 1), (5, 37), (31, 33), (250, 700), (want.size - 3, want.size)]:
            assert read(start, stop).tobytes() == want[start:stop].tobytes(), (start, stop)


def test_key_values_are_shown_as_text_and_arrays_as_length_and_first_items(model):
    with open_store(model) as store:
        meta = store.metadata
        assert meta["general.architecture"] == "llama" and meta["general.name"] == "tiny llama"
        assert meta["llama.attention.head_count"] == "4" and meta["llama.rope.freq_base"] == "10000.0"
        assert meta["tokenizer.ggml.add_bos_token"] == "True"
        assert meta["tokenizer.ggml.tokens"] == ("[1,000 × STRING] 'tok0', 'tok1', 'tok2', 'tok3', 'tok4', 'tok5', "
                                                 "'tok6', 'tok7', …")
        assert meta["tokenizer.ggml.scores"].startswith("[1,000 × FLOAT32] 0.0, 0.5, 1.0, 1.5,")
        assert store.keys["llama.attention.head_count"] == 4
        assert store.keys["tokenizer.ggml.tokens"]["length"] == 1000


def test_a_file_opens_by_its_bytes_and_reads_only_its_header(model, tmp_path):
    renamed = tmp_path / "model.bin"
    renamed.write_bytes(model.read_bytes())
    with open_store(renamed) as store:
        assert store.format == "gguf" and len(store.entries) == 7


def one_tensor(data_bytes: int = 32, **fields) -> bytes:
    info = fields.pop("info", tensor_info("w", (32,), 0, 0))
    return raw_file(infos=(info,), data=bytes(data_bytes), **fields)


HOSTILE = {
    "version 1": (one_tensor(version=1), "GGUF version 1 is not read (versions 2 and 3 are)"),
    "big-endian": (b"GGUF" + struct.pack(">IQQ", 3, 0, 0), "is a big-endian GGUF file, which is not read"),
    "a billion tensors": (raw_file(n_tensors=10**9), "claims 1,000,000,000 tensors, over the limit of 100,000"),
    "more tensors than bytes": (raw_file(n_tensors=50), "file is truncated or its header is wrong: 50 tensors need"),
    "a key 2**60 bytes long": (raw_file(keys=struct.pack("<Q", 1 << 60) + bytes(64), n_keys=1),
                               "a key is 1,152,921,504,606,846,976 bytes long, over the limit of 4,096"),
    "a value type GGUF lacks": (raw_file(keys=text("k") + struct.pack("<I", 99), n_keys=1),
                                "key 'k' has value type 99, which GGUF does not define"),
    "an array longer than the file": (raw_file(keys=text("k") + struct.pack("<IIQ", 9, 8, 1 << 20) + bytes(64),
                                               n_keys=1), "file is truncated or its header is wrong: "
                                                          "1,048,576 items in key 'k' need at least"),
    "an array of 2**40 items": (raw_file(keys=text("k") + struct.pack("<IIQ", 9, 8, 1 << 40) + bytes(64), n_keys=1),
                                "claims 1,099,511,627,776 items in key 'k', over the limit of 16,777,216"),
    "arrays nested deep": (raw_file(keys=text("k") + struct.pack("<IIQ", 9, 9, 1) + struct.pack("<IQ", 9, 1) * 5
                                    + bytes(64), n_keys=1), "key 'k' nests arrays over 4 deep"),
    "a key given twice": (raw_file(keys=key_u32("k", 1) + key_u32("k", 2), n_keys=2), "key 'k' is given twice"),
    "a GGML type the library lacks": (one_tensor(info=tensor_info("w", (32,), 200, 0)),
                                      "tensor 'w' has GGML type 200, which the gguf library does not know"),
    "five dimensions": (one_tensor(info=tensor_info("w", (1, 1, 1, 1, 32), 0, 0)),
                        "tensor 'w' has 5 dimensions; GGML has at most 4"),
    "rows not whole blocks": (one_tensor(info=tensor_info("w", (31,), 8, 0)),
                              "tensor 'w': rows of 31 values are not whole Q8_0 blocks of 32"),
    "an unaligned offset": (one_tensor(info=tensor_info("w", (4,), 0, 4)),
                            "tensor 'w' starts at offset 4, not a multiple of the alignment 32"),
    "a tensor past the end": (one_tensor(info=tensor_info("w", (64,), 0, 0)),
                              "file is truncated or its header is wrong: tensor 'w' ends at byte 256"),
    "a name given twice": (raw_file(infos=(tensor_info("w", (8,), 0, 0), tensor_info("w", (8,), 0, 32)),
                                    data=bytes(64)), "'w'"),
    "cut inside a key": (raw_file(keys=text("k") + struct.pack("<I", 8) + text("a long value") + bytes(8),
                                  n_keys=1)[:40], "file is truncated: the value of key 'k' needs 8 bytes at byte 37, and the file has 40"),
    "an alignment of 3": (raw_file(keys=key_u32("general.alignment", 3), n_keys=1),
                          "general.alignment is 3, not a power of two"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_header_is_one_line_naming_the_file(tmp_path, case):
    raw, words = HOSTILE[case]
    path = tmp_path / "bad.gguf"
    path.write_bytes(raw)
    with pytest.raises(FormatError) as refused:
        open_store(path).close()
    message = str(refused.value)
    assert message.startswith("bad.gguf: ") and "\n" not in message
    assert words in message, message


def test_a_long_token_list_is_skipped_not_kept(tmp_path):
    """A tokenizer of 200,000 strings opens with its length and eight items kept, not 200,000 objects."""
    path = tmp_path / "many.gguf"
    items = b"".join(text(f"t{i}") for i in range(200_000))
    path.write_bytes(raw_file(keys=text("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 200_000) + items,
                              n_keys=1))
    with open_store(path) as store:
        kept = store.keys["tokenizer.ggml.tokens"]
        assert kept["length"] == 200_000 and kept["first"] == [f"t{i}" for i in range(8)]


def test_a_remote_gguf_opens_by_byte_ranges_and_reads_gguf_values(tmp_path):
    """Over HTTP only the header's ranges are fetched at open; a tensor's values arrive with its own range."""
    from tests.helpers.remote_http_site import Server, Site
    model = tmp_path / "big.gguf"
    write_model(model, output_rows=2048)  # 8 MiB of weights behind the header
    server = Server(Site(files={"/tiny.gguf": model.read_bytes()}))
    try:
        with open_store(server.url("/tiny.gguf")) as store:
            served_at_open = server.site.bytes_served()
            assert [str(e.dtype) for e in store.entries][:4] == ["Q8_0", "Q4_0", "Q4_K", "Q6_K"]
            assert all(r.range for r in server.site.log)
            want = reference(model)["blk.0.ffn_up.weight"][2]
            assert store.read("blk.0.ffn_up.weight").tobytes() == want.tobytes()
    finally:
        server.close()
    assert served_at_open <= 2 << 20 < model.stat().st_size


def test_inspect_and_config_say_what_a_gguf_holds(model):
    from tests.helpers.engine_cli_run import run
    shown = run("inspect", str(model))
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == "tiny.gguf · GGUF v3"
    assert any(line.split()[:3] == ["blk.0.ffn_up.weight", "Q4_K", "[8,"] for line in lines)
    assert "  tokenizer.ggml.tokens = [1,000 × STRING] 'tok0', 'tok1', 'tok2', 'tok3', 'tok4', 'tok5', 'tok6', " \
           "'tok7', …" in lines
    keys = __import__("json").loads(run("inspect", str(model), "--json").stdout)["gguf_keys"]
    assert keys["llama.attention.head_count"] == 4 and keys["llama.rope.freq_base"] == 10000.0
    assert keys["tokenizer.ggml.tokens"] == {"type": "STRING", "length": 1000, "first": [f"tok{i}" for i in range(8)]}
    config = run("config", str(model))
    assert config.stdout == "{}\n"
    assert config.stderr == ("store-studio config: tiny.gguf holds no values besides its tensors and 8 metadata keys "
                             "(gguf); `store-studio inspect` lists both\n")


def test_a_header_past_its_bound_and_an_array_past_its_count_are_one_line(tmp_path, monkeypatch):
    """On a file of many gigabytes, counts checked against the bytes left still allow a walk of billions of items:
    the header's size and an array's count have bounds of their own."""
    from engine.formats import gguf
    monkeypatch.setattr(gguf, "MAX_HEADER", 1 << 20)
    path = tmp_path / "long.gguf"
    path.write_bytes(raw_file(keys=text("k") + struct.pack("<IIQ", 9, 8, 300_000) + text("ab") * 300_000, n_keys=1))
    with pytest.raises(FormatError) as refused:
        open_store(path)
    assert str(refused.value) == ("long.gguf: its header runs past 1 MiB, over the limit for a GGUF header (its "
                                  "key-values and tensor list)")
    monkeypatch.setattr(gguf, "MAX_ITEMS", 1000)
    path.write_bytes(raw_file(keys=text("k") + struct.pack("<IIQ", 9, 8, 1001) + text("a") * 1001, n_keys=1))
    with pytest.raises(FormatError) as refused:
        open_store(path)
    assert str(refused.value) == "long.gguf: claims 1,001 items in key 'k', over the limit of 1,000"
