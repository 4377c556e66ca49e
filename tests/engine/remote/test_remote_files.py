"""Remote files open wherever paths do: byte ranges from a real HTTP server on loopback, the Hub's rules for
its token, faults ending in one line. Files are written by real torch and safetensors."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from tests.helpers.remote_http_site import RANGE
from safetensors.numpy import save as save_safetensors

from engine import ArrayStore, FormatError, export, open_store
from engine.cli import main
from engine.sources.remote import RemoteWarning, traffic

TOKEN = "hf_secret_token_1234"
ARRAYS = {f"blocks.{i}.weight": np.arange(i * 1000, i * 1000 + 64 * 48, dtype=np.float32).reshape(64, 48)
          for i in range(4)} | {"head.bias": np.arange(10, dtype=np.int64)}


def pt_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    torch.save({k: torch.from_numpy(v) for k, v in arrays.items()}, buffer)
    return buffer.getvalue()


def bpk_bytes(tmp_path, arrays: dict[str, np.ndarray]) -> bytes:
    export(ArrayStore(arrays).entries, tmp_path / "m.bpk")
    return (tmp_path / "m.bpk").read_bytes()


@pytest.fixture
def served(site, tmp_path):
    """The same tensors as SafeTensors, PyTorch and Burnpack files on the site."""
    site.site.files.update({"/m.safetensors": save_safetensors(ARRAYS), "/m.pt": pt_bytes(ARRAYS),
                            "/m.bpk": bpk_bytes(tmp_path, ARRAYS)})
    return site


@pytest.mark.parametrize("name", ["m.safetensors", "m.pt", "m.bpk"])
def test_every_format_opens_from_a_url_with_the_same_names_and_values(served, name):
    with open_store(served.url("/" + name)) as store:
        assert sorted(store.names) == sorted(ARRAYS)
        for key, array in ARRAYS.items():
            assert np.array_equal(store.read(key), array)
        assert store.remote and store.path.name == name and store.file_size == len(served.site.files["/" + name])
        assert all(r.range for r in served.site.log)  # every request was a byte range


def test_opening_a_64_mib_file_fetches_only_its_header(site):
    big = {f"w{i}": np.full((1024, 1024), i, np.float32) for i in range(16)}  # 64 MiB
    site.site.files["/big.safetensors"] = save_safetensors(big)
    before = traffic.bytes
    with open_store(site.url("/big.safetensors")) as store:
        fetched = traffic.bytes - before
        assert len(store) == 16 and store.entry("w3").shape == (1024, 1024)
    asked = [RANGE.fullmatch(r.range) for r in site.site.log]
    assert fetched < 4 << 20 and sum(int(m[2]) + 1 - int(m[1]) for m in asked) < 4 << 20


def test_statistics_of_one_tensor_fetch_only_that_tensor(site):
    big = {f"w{i}": np.full((512, 512), i, np.float32) for i in range(8)}  # 1 MiB each
    site.site.files["/big.safetensors"] = save_safetensors(big)
    with open_store(site.url("/big.safetensors")) as store:
        before = traffic.bytes
        assert float(store.read("w5").mean()) == 5.0
        assert traffic.bytes - before <= (1 << 20) + (64 << 10)


def test_convert_from_a_url_writes_the_bytes_converting_the_downloaded_file_writes(served, tmp_path, capsys):
    for name in ("m.safetensors", "m.pt"):
        local = tmp_path / name
        local.write_bytes(served.site.files["/" + name])
        assert main(["convert", str(local), str(tmp_path / "local.bpk"), "-q", "--overwrite"]) == 0
        assert main(["convert", served.url("/" + name), str(tmp_path / "remote.bpk"), "-q", "--overwrite"]) == 0
        assert (tmp_path / "remote.bpk").read_bytes() == (tmp_path / "local.bpk").read_bytes()


def test_inspect_config_and_diff_take_urls(served, tmp_path, capsys):
    assert main(["inspect", served.url("/m.safetensors")]) == 0
    assert "blocks.3.weight" in capsys.readouterr().out
    assert main(["diff", served.url("/m.safetensors"), served.url("/m.bpk")]) == 0
    buffer = io.BytesIO()
    torch.save({"state_dict": {"w": torch.ones(2)}, "epoch": 7, "config": {"lr": 0.5}}, buffer)
    served.site.files["/ckpt.pt"] = buffer.getvalue()
    capsys.readouterr()
    assert main(["config", served.url("/ckpt.pt"), "--key", "config"]) == 0
    assert json.loads(capsys.readouterr().out) == {"lr": 0.5}


def test_a_recipe_keeps_a_url_source_as_written(served, tmp_path):
    recipe = tmp_path / "r.json"
    url = served.url("/m.safetensors")
    assert main(["convert", url, str(tmp_path / "o.bpk"), "-q", "--save-recipe", str(recipe)]) == 0
    assert json.loads(recipe.read_text())["sources"][0]["path"] == url
    assert main(["convert", "--recipe", str(recipe), str(tmp_path / "again.bpk"), "-q"]) == 0
    assert (tmp_path / "again.bpk").read_bytes() == (tmp_path / "o.bpk").read_bytes()


# --- the Hub ----------------------------------------------------------------------------------

def test_hf_address_and_page_url_read_the_resolve_url_with_the_token_only_on_the_hub(site, other_site,
                                                                                        monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", site.base)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    data = save_safetensors(ARRAYS)
    site.site.tokens["/org/repo/resolve/v1/sub/m.safetensors"] = TOKEN
    site.site.redirects["/org/repo/resolve/v1/sub/m.safetensors"] = other_site.url("/cdn/m.safetensors")
    other_site.site.files["/cdn/m.safetensors"] = data
    for address in ("hf://org/repo@v1/sub/m.safetensors", site.url("/org/repo/blob/v1/sub/m.safetensors")):
        with open_store(address) as store:
            assert np.array_equal(store.read("blocks.2.weight"), ARRAYS["blocks.2.weight"])
            assert str(store.path) == address
    assert {r.authorization for r in site.site.log} == {f"Bearer {TOKEN}"}
    assert other_site.site.log and all(r.authorization is None for r in other_site.site.log)


def test_a_dataset_repository_file_opens_by_hf_address_and_by_its_page(site, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", site.base)
    site.site.files["/datasets/org/data/resolve/main/w.safetensors"] = save_safetensors(ARRAYS)
    for address in ("hf://datasets/org/data/w.safetensors", site.url("/datasets/org/data/blob/main/w.safetensors")):
        with open_store(address) as store:
            assert len(store) == len(ARRAYS)


def test_the_token_never_goes_to_another_host_even_when_the_url_names_it(site, other_site, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", site.base)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    other_site.site.files["/m.safetensors"] = save_safetensors(ARRAYS)
    with open_store(other_site.url("/m.safetensors")) as store:
        assert len(store) == len(ARRAYS)
    assert all(r.authorization is None for r in other_site.site.log)


def test_a_missing_token_and_a_refused_one_each_say_so_without_printing_it(site, monkeypatch, capsys):
    monkeypatch.setenv("HF_ENDPOINT", site.base)
    site.site.tokens["/org/gated/resolve/main/m.safetensors"] = "the-right-one"
    site.site.files["/org/gated/resolve/main/m.safetensors"] = save_safetensors(ARRAYS)
    assert main(["inspect", "hf://org/gated/m.safetensors"]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "needs a token (HTTP 401)" in error and "HF_TOKEN" in error
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    assert main(["inspect", "hf://org/gated/m.safetensors"]) == 1
    error = capsys.readouterr().err
    assert "access refused with the token given (HTTP 403)" in error and TOKEN not in error


def test_a_missing_file_is_one_line(site, capsys):
    assert main(["inspect", site.url("/nothing.safetensors")]) == 1
    assert capsys.readouterr().err == "store-studio: nothing.safetensors: not found on the server (HTTP 404)\n"


# --- sharded checkpoints -------------------------------------------------------------------------

def sharded_site(site, shard_bytes, names: list[str], index: str, arrays=ARRAYS, folder: str = "/repo") -> None:
    weight_map = {}
    for data, shard in zip(shard_bytes, names):
        site.site.files[f"{folder}/{shard}"] = data
    for i, key in enumerate(arrays):
        weight_map[key] = names[i % len(names)]
    site.site.files[f"{folder}/{index}"] = json.dumps({"metadata": {"total_size": 1},
                                                       "weight_map": weight_map}).encode()


def split(n: int, arrays=ARRAYS) -> list[dict[str, np.ndarray]]:
    keys = list(arrays)
    return [{k: arrays[k] for j, k in enumerate(keys) if j % n == i} for i in range(n)]


def test_a_sharded_hub_model_reads_the_index_and_each_shard_header_only_then_converts(site, tmp_path,
                                                                                       monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", site.base)
    big = {f"w{i}": np.full((256, 256), i, np.float32) for i in range(6)}  # 256 KiB each
    names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    folder = "/org/repo/resolve/v2"
    sharded_site(site, [save_safetensors(p) for p in split(2, big)], names, "model.safetensors.index.json", big,
                 folder)
    with open_store("hf://org/repo@v2/model.safetensors.index.json") as store:
        opened = {r.path for r in site.site.log}
        assert len(store) == len(big) and store.version == "sharded"
        assert opened == {f"{folder}/model.safetensors.index.json", *(f"{folder}/{n}" for n in names)}
        assert len(site.site.log) == 3 and site.site.bytes_served() <= 3 * (64 << 10)  # one request each
        assert [str(f) for f in store.files] == [f"hf://org/repo@v2/{n}" for n in names]
        assert np.array_equal(store.read("w5"), big["w5"])
    assert main(["convert", "hf://org/repo@v2/model.safetensors.index.json", str(tmp_path / "m.bpk"), "-q"]) == 0
    with open_store(tmp_path / "m.bpk") as out:
        assert sorted(out.names) == sorted(big) and np.array_equal(out.read("w4"), big["w4"])


@pytest.mark.parametrize("remote", [False, True])
def test_a_pytorch_bin_index_opens_its_shards_as_one_model(site, tmp_path, remote):
    parts = split(2)
    names = ["pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin"]
    sharded_site(site, [pt_bytes(p) for p in parts], names, "pytorch_model.bin.index.json")
    for path, data in site.site.files.items():
        (tmp_path / path.rsplit("/", 1)[1]).write_bytes(data)
    where = site.url("/repo/pytorch_model.bin.index.json") if remote else tmp_path / "pytorch_model.bin.index.json"
    with open_store(where) as store:
        assert store.format == "pytorch" and store.version == "sharded" and sorted(store.names) == sorted(ARRAYS)
        assert np.array_equal(store.read("blocks.3.weight"), ARRAYS["blocks.3.weight"])
        assert len(store.files) == 2
    assert main(["convert", str(where), str(tmp_path / "o.bpk"), "-q"]) == 0
    with open_store(tmp_path / "o.bpk") as out:
        assert np.array_equal(out.read("head.bias"), ARRAYS["head.bias"])


# --- faults ----------------------------------------------------------------------------------------

def test_a_server_ignoring_ranges_is_downloaded_whole_with_a_warning(served):
    served.site.no_ranges.add("/m.pt")
    with pytest.warns(RemoteWarning, match="ignores byte ranges"):
        store = open_store(served.url("/m.pt"))
    with store:
        assert np.array_equal(store.read("blocks.0.weight"), ARRAYS["blocks.0.weight"])
        assert store.note.startswith("The server ignores byte ranges: the whole file")


def test_a_server_ignoring_ranges_is_refused_above_the_download_limit_naming_the_variable(served, monkeypatch,
                                                                                             capsys):
    served.site.no_ranges.add("/m.pt")
    monkeypatch.setenv("STORE_STUDIO_MAX_DOWNLOAD", "1K")
    assert main(["inspect", served.url("/m.pt")]) == 1
    error = capsys.readouterr().err
    assert "ignores byte ranges" in error and "STORE_STUDIO_MAX_DOWNLOAD" in error and error.count("\n") == 1


def test_a_connection_dropped_mid_tensor_is_resumed(site):
    big = {"w": np.arange(1 << 20, dtype=np.float32)}
    site.site.files["/b.safetensors"] = save_safetensors(big)
    with open_store(site.url("/b.safetensors")) as store:
        site.site.drops["/b.safetensors"] = 2
        assert np.array_equal(store.read("w"), big["w"])
        assert site.site.drops["/b.safetensors"] == 0


def test_a_connection_that_keeps_dropping_ends_in_one_line_and_no_output(site, tmp_path, capsys):
    big = {"w": np.arange(1 << 20, dtype=np.float32)}
    site.site.files["/b.safetensors"] = save_safetensors(big)
    with open_store(site.url("/b.safetensors")) as store:
        site.site.errors["/b.safetensors"] = [503] * 10
        with pytest.raises(FormatError, match="could not be reached after 3 tries \\(HTTP 503\\)"):
            store.read("w")
    site.site.errors["/b.safetensors"] = [503] * 10
    assert main(["convert", site.url("/b.safetensors"), str(tmp_path / "o.bpk"), "-q"]) == 1
    assert capsys.readouterr().err.count("\n") == 1
    assert not (tmp_path / "o.bpk").exists() and list(tmp_path.iterdir()) == []


def test_a_file_replaced_on_the_server_between_reads_is_refused(site):
    big = {f"w{i}": np.full((256, 256), i, np.float32) for i in range(4)}
    site.site.files["/m.safetensors"] = save_safetensors(big)
    with open_store(site.url("/m.safetensors")) as store:
        site.site.files["/m.safetensors"] = save_safetensors({k: v + 1 for k, v in big.items()})
        with pytest.raises(FormatError, match="changed on the server since it was opened"):
            store.read("w3")
        with pytest.raises(FormatError, match="changed on the server"):  # and stays refused
            store.verify("w0")


def test_a_silent_server_times_out_in_one_line(site, monkeypatch, capsys):
    monkeypatch.setenv("STORE_STUDIO_HTTP_TIMEOUT", "0.2")
    monkeypatch.setenv("STORE_STUDIO_HTTP_RETRIES", "0")
    site.site.stall.add("/slow.safetensors")
    assert main(["inspect", site.url("/slow.safetensors")]) == 1
    assert capsys.readouterr().err == ("store-studio: slow.safetensors: the server could not be reached after 1 "
                                       "tries (timed out)\n")


# --- Burn's legacy records: a Bin record maps a whole local copy; the others read by ranges ----------

@pytest.mark.parametrize("recorder", ["NamedMpk", "NamedMpkGz", "Bin", "BinGz", "PrettyJson"])
def test_burn_records_open_from_a_url_as_from_a_file(site, tmp_path, recorder):
    from tests.helpers.formats_burn_record_writers import Settings, model_item, write_record
    item, _ = model_item()
    path = write_record(tmp_path, "model", item, Settings(recorder=recorder, version="0.17.0"))
    site.site.files["/" + path.name] = path.read_bytes()
    with open_store(path) as local, open_store(site.url("/" + path.name)) as remote:
        assert remote.names == local.names and remote.description == local.description
        for name in local.names:
            assert np.array_equal(remote.read(name), local.read(name))


def test_a_first_answer_that_breaks_off_is_asked_again(served):
    served.site.drops["/m.safetensors"] = 1
    with open_store(served.url("/m.safetensors")) as store:
        assert np.array_equal(store.read("head.bias"), ARRAYS["head.bias"])
    assert served.site.drops["/m.safetensors"] == 0 and len(served.site.log) == 2


def test_a_large_tensor_streams_in_pieces_through_dropped_connections_to_the_same_bytes(site, tmp_path):
    big = {"embed": np.arange(3 << 20, dtype=np.float32).reshape(-1, 1024), "bias": np.ones(7, np.float32)}  # 12 MiB
    (tmp_path / "b.safetensors").write_bytes(save_safetensors(big))
    site.site.files["/b.safetensors"] = (tmp_path / "b.safetensors").read_bytes()
    assert main(["convert", str(tmp_path / "b.safetensors"), str(tmp_path / "local.bpk"), "-q"]) == 0
    with open_store(site.url("/b.safetensors")) as store:
        site.site.drops["/b.safetensors"] = 2
        export(store.entries, tmp_path / "remote.bpk")
    assert site.site.drops["/b.safetensors"] == 0
    assert (tmp_path / "remote.bpk").read_bytes() == (tmp_path / "local.bpk").read_bytes()
    asked = [(int(m[1]), int(m[2]) + 1) for m in (RANGE.fullmatch(r.range) for r in site.site.log[1:])]
    answered = sorted(set(asked))
    assert len(asked) == len(answered) + 2  # the two broken answers were asked again, nothing else
    assert all(a[1] == b[0] for a, b in zip(answered, answered[1:]))  # one stream, its requests end to end
    assert answered[-1][1] == len(site.site.files["/b.safetensors"]) and len(answered) <= 5  # growing requests


def test_a_file_replaced_on_the_server_while_it_streams_is_refused_and_nothing_is_written(site, tmp_path, capsys):
    big = {f"w{i}": np.full((1024, 1024), i, np.float32) for i in range(8)}  # 32 MiB, several requests
    site.site.files["/m.safetensors"] = save_safetensors(big)
    site.site.swaps["/m.safetensors"] = (3, save_safetensors({k: v + 1 for k, v in big.items()}))
    assert main(["convert", site.url("/m.safetensors"), str(tmp_path / "o.bpk"), "-q"]) == 1
    assert capsys.readouterr().err == "store-studio: m.safetensors: changed on the server since it was opened " \
        "(its ETag, Last-Modified or size differ); reopen it to read the new contents\n"
    assert list(tmp_path.iterdir()) == []


def test_a_remote_conversion_holds_a_few_pieces_not_what_it_streams(site, tmp_path):
    import tracemalloc
    big = {f"l{i:02}.w": np.full((512, 512), i, np.float32) for i in range(48)} | \
        {f"l{i:02}.z": np.full(1000, i, np.float32) for i in range(48)}  # 48 MiB, small tensors between big ones
    site.site.files["/m.safetensors"] = save_safetensors(big)
    with open_store(site.url("/m.safetensors")) as store:
        tracemalloc.start()
        try:
            export(store.entries, tmp_path / "o.bpk")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    with open_store(tmp_path / "o.bpk") as out:
        assert all(np.array_equal(out.read(k), v) for k, v in big.items())
    assert peak < 24 << 20  # the stream's few pieces, never the range cache's 32 MiB of what streamed by


@pytest.mark.child
def test_the_token_hf_auth_login_saved_is_used_when_hf_token_is_unset(site, tmp_path, monkeypatch):
    import subprocess
    monkeypatch.setenv("HF_ENDPOINT", site.base)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "token").write_text(TOKEN)  # where `hf auth login` saves it
    site.site.tokens["/org/gated/resolve/main/m.safetensors"] = TOKEN
    site.site.files["/org/gated/resolve/main/m.safetensors"] = save_safetensors(ARRAYS)
    run = subprocess.run([sys.executable, "-m", "engine", "inspect", "hf://org/gated/m.safetensors"],
                         capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[3])
    assert run.returncode == 0, run.stderr
    assert "head.bias" in run.stdout and TOKEN not in run.stdout + run.stderr
    assert [r.authorization for r in site.site.log] == [f"Bearer {TOKEN}"]


def test_a_pt_with_many_storages_opens_by_their_zip_headers_only(site):
    many = {f"layers.{i}.weight": np.full((128, 128), i, np.float32) for i in range(200)}  # 64 KiB each, 12.5 MiB
    site.site.files["/many.pt"] = pt_bytes(many)
    before = traffic.bytes
    with open_store(site.url("/many.pt")) as store:
        fetched = traffic.bytes - before
        assert len(store) == 200 and float(store.read("layers.123.weight")[5, 7]) == 123.0
    assert fetched < 1 << 20  # the directory, data.pkl and 30 bytes per storage, not a block each


def test_the_zip_headers_of_small_neighbouring_storages_come_in_few_requests(site):
    small = {f"norm.{i}.bias": np.full(256, i, np.float32) for i in range(400)}  # 1 KiB each, 400 KiB
    site.site.files["/small.pt"] = pt_bytes(small)
    with open_store(site.url("/small.pt")) as store:
        assert float(store.read("norm.242.bias")[0]) == 242.0
    assert len(site.site.log) < 20  # not one request per storage in the middle of the file


def test_two_readers_streaming_one_file_at_once_each_get_their_own_bytes(site):
    big = {f"w{i}": np.arange(i, i + (1 << 20), dtype=np.float32) for i in range(3)}  # 4 MiB each
    site.site.files["/m.safetensors"] = save_safetensors(big)
    with open_store(site.url("/m.safetensors")) as store:
        first, second = store.iter_bytes("w2", 1 << 20), store.iter_bytes("w0", 1 << 20)
        got: dict[str, bytearray] = {"w2": bytearray(), "w0": bytearray()}
        for a, b in zip(first, second):  # in turn: the second reader cannot share the first one's stream
            got["w2"] += a
            got["w0"] += b
        assert {k: bytes(v) for k, v in got.items()} == {k: big[k].tobytes() for k in got}
        assert b"".join(store.iter_bytes("w1")) == big["w1"].tobytes()  # kept chunks stay valid


def test_closing_a_file_while_another_thread_streams_it_ends_that_read_in_one_line(site):
    import threading
    big = {"w": np.arange(4 << 20, dtype=np.float32)}  # 16 MiB: the stream is still reading when the file closes
    site.site.files["/m.safetensors"] = save_safetensors(big)
    resume = threading.Event()
    site.site.pauses["/m.safetensors"] = (3 << 20, resume)
    store = open_store(site.url("/m.safetensors"))
    chunks = store.iter_bytes("w", 1 << 20)
    first = next(chunks)  # the stream is under way; the server now holds the rest back
    store.close()  # from this thread, as a window closes a tab while a worker streams
    resume.set()
    with pytest.raises(FormatError, match="closed"):
        for _ in chunks:
            pass
    assert bytes(first) == big["w"].tobytes()[:1 << 20]


def test_a_watcher_hears_a_whole_download_and_can_stop_it_leaving_nothing(served, tmp_path, monkeypatch):
    import tempfile

    from engine import watch_downloads
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(downloads))
    served.site.no_ranges.add("/m.pt")
    size = len(served.site.files["/m.pt"])
    heard: list[tuple[int, int]] = []
    with pytest.warns(RemoteWarning), watch_downloads(lambda done, total: heard.append((done, total))):
        with open_store(served.url("/m.pt")) as store:
            assert np.array_equal(store.read("head.bias"), ARRAYS["head.bias"])
    assert heard[0] == (0, size) and heard[-1] == (size, size)

    def stop(done: int, total: int) -> None:
        if done:
            raise InterruptedError("cancelled")

    with pytest.warns(RemoteWarning), watch_downloads(stop), pytest.raises(InterruptedError):
        open_store(served.url("/m.pt"))
    assert list(downloads.iterdir()) == []
