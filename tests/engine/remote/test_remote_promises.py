"""README "Remote files and the Hugging Face Hub" promises, each with the test that fails when it breaks. A real
HTTP server on loopback (tests/helpers/remote_http_site.py) serves files written by real safetensors.

``here::`` is this module, ``rf::`` is test_remote_files.py beside it; the others are paths under tests/.
"(checked)" marks a pair verified by breaking the product line in a worktree and watching the test fail.

Where addresses go:
- `inspect`, `config`, `diff` take URLs -> rf::test_inspect_config_and_diff_take_urls; `convert` sources ->
  rf::test_convert_from_a_url_writes_the_bytes_converting_the_downloaded_file_writes; `--template` ->
  here::test_a_template_may_be_an_address; recipe sources -> rf::test_a_recipe_keeps_a_url_source_as_written;
  `store-studio URL` -> gui/test_open_url.py::test_a_url_given_on_the_command_line_opens_as_a_url
- File › Open URL… opens in the background, Cancel leaves a slow server behind ->
  gui/test_open_url.py::test_a_url_opens_in_a_tab_named_after_its_file_and_is_remembered,
  gui/test_open_url.py::test_cancel_leaves_a_silent_server_behind_and_the_window_keeps_working,
  gui/test_open_url.py::test_the_dialog_opens_only_an_address; it lists the last ten addresses ->
  here::test_the_last_ten_addresses_are_remembered_and_clear_recent_forgets_them (checked)
- the workbench's pickers (Sources › Add…, the diff's file, Set Template…) take a path, an address or a recent one,
  with Browse… -> gui/workbench/test_url_pickers.py (whole module), gui/test_model_picker.py (whole module)
- `https://`/`http://`, Hub page URLs, `hf://ORG/REPO[@REV]/PATH` ->
  rf::test_hf_address_and_page_url_read_the_resolve_url_with_the_token_only_on_the_hub; revision `main` when
  omitted, `hf://datasets/...` -> rf::test_a_dataset_repository_file_opens_by_hf_address_and_by_its_page (checked)

What is read:
- nothing downloaded to open: a SafeTensors or Burnpack header in one 64 KiB request ->
  here::test_a_header_is_read_in_one_64_kib_request (checked), rf::test_opening_a_64_mib_file_fetches_only_its_header;
  a `.pt`'s zip directory, data.pkl and each storage's zip header -> rf::test_a_pt_with_many_storages_opens_by_their_zip_headers_only
- a tensor's bytes only when shown or converted -> rf::test_statistics_of_one_tensor_fetch_only_that_tensor
- sharded checkpoints from their index, local or remote -> rf::test_a_sharded_hub_model_reads_the_index_and_each_shard_header_only_then_converts,
  rf::test_a_pytorch_bin_index_opens_its_shards_as_one_model
- `convert URL` writes the bytes converting the downloaded file writes, 16 MiB at a time ->
  rf::test_convert_from_a_url_writes_the_bytes_converting_the_downloaded_file_writes,
  rf::test_a_large_tensor_streams_in_pieces_through_dropped_connections_to_the_same_bytes; memory within a few
  pieces -> rf::test_a_remote_conversion_holds_a_few_pieces_not_what_it_streams; the same progress line ->
  test_remote_convert_progress.py::test_converting_an_address_draws_the_progress_line_on_a_terminal (checked); in the window ->
  gui/test_open_url.py::test_a_remote_model_exports_from_the_window_to_the_bytes_of_its_local_copy
- redirects are followed -> rf::test_hf_address_and_page_url_read_the_resolve_url_with_the_token_only_on_the_hub

The token:
- `HF_TOKEN`, else the one `hf auth login` saved -> rf::test_the_token_hf_auth_login_saved_is_used_when_hf_token_is_unset
- sent only to the Hub endpoint, never to another host, a redirect's target included ->
  rf::test_hf_address_and_page_url_read_the_resolve_url_with_the_token_only_on_the_hub (checked),
  rf::test_the_token_never_goes_to_another_host_even_when_the_url_names_it
- never printed, nor written into a recipe (which keeps the address as written) ->
  rf::test_a_missing_token_and_a_refused_one_each_say_so_without_printing_it,
  here::test_a_recipe_keeps_an_hf_address_as_written_and_never_the_token

Faults, one line, nothing left behind:
- 401 and 403 say which -> rf::test_a_missing_token_and_a_refused_one_each_say_so_without_printing_it (checked); 404 ->
  rf::test_a_missing_file_is_one_line
- a dropped connection is retried, the interrupted range asked again -> rf::test_a_connection_dropped_mid_tensor_is_resumed,
  rf::test_a_first_answer_that_breaks_off_is_asked_again; a 429 or 5xx is retried -> here::test_429_and_5xx_are_retried (checked);
  then reported -> rf::test_a_connection_that_keeps_dropping_ends_in_one_line_and_no_output
- a silent server times out -> rf::test_a_silent_server_times_out_in_one_line
- a file replaced on the server (ETag, Last-Modified or size changed) is refused ->
  rf::test_a_file_replaced_on_the_server_between_reads_is_refused (ETag),
  here::test_a_changed_identity_without_an_etag_is_refused[last_modified] (checked),
  here::test_a_changed_identity_without_an_etag_is_refused[size] (checked); every request of a stream is checked ->
  rf::test_a_file_replaced_on_the_server_while_it_streams_is_refused_and_nothing_is_written
- a server ignoring ranges is downloaded whole with a warning, up to a limit ->
  rf::test_a_server_ignoring_ranges_is_downloaded_whole_with_a_warning,
  rf::test_a_server_ignoring_ranges_is_refused_above_the_download_limit_naming_the_variable (checked); the window's
  status bar shows that download's bytes, rate and time left, its Cancel removes the partial copy ->
  gui/test_open_url.py::test_a_whole_download_shows_its_bytes_rate_and_time_left_in_the_status_bar,
  gui/test_open_url.py::test_cancelling_a_whole_download_leaves_no_tab_and_no_partial_copy,
  rf::test_a_watcher_hears_a_whole_download_and_can_stop_it_leaving_nothing

Variables: `HF_ENDPOINT` -> rf (every Hub test); (connecting: at most 10 s, of `STORE_STUDIO_HTTP_TIMEOUT`: not
tested, a loopback server always connects at once); `STORE_STUDIO_HTTP_TIMEOUT` -> rf::test_a_silent_server_times_out_in_one_line;
`STORE_STUDIO_HTTP_RETRIES` (further tries) -> rf::test_a_connection_that_keeps_dropping_ends_in_one_line_and_no_output;
`STORE_STUDIO_MAX_DOWNLOAD` -> rf::test_a_server_ignoring_ranges_is_refused_above_the_download_limit_naming_the_variable.

What is cached where:
- ranges read are kept in memory while the file is open -> here::test_a_range_read_once_is_not_fetched_again (checked); up to 32 MiB,
  least recently read first out, and never the bytes a conversion streams -> test_remote_cache_bounds.py (whole module;
  checked: 16 MiB, 64 MiB and remembered stream pieces each fail it)
- a whole download's temporary file is deleted the moment it is opened -> here::test_a_whole_download_leaves_no_file_behind (checked)
- a remote `.gz` record's inflated copy is removed when it is closed -> test_remote_gz_record_cleanup.py (whole module;
  checked); in the window, when its tab closes -> gui/test_window_gap_promises.py::test_closing_the_tab_of_a_gz_record_removes_its_temporary_copy (checked)
- the window remembers addresses, Clear Recent Files forgets them ->
  here::test_the_last_ten_addresses_are_remembered_and_clear_recent_forgets_them; never a token ->
  gui/test_remembered_addresses_no_token.py (whole module; checked)
- the Hub's download cache is neither used nor filled -> here::test_the_hubs_download_cache_is_neither_used_nor_filled
"""

from __future__ import annotations

import json
import tempfile

import numpy as np
import pytest
from safetensors.numpy import save as save_safetensors

from engine import ArrayStore, FormatError, export, open_store
from engine.cli import main
from engine.sources.remote import traffic

TOKEN = "hf_secret_token_5678"
ARRAYS = {f"w{i}": np.full((64, 64), i, np.float32) for i in range(4)}


def test_a_header_is_read_in_one_64_kib_request(site, tmp_path):
    export(ArrayStore(ARRAYS).entries, tmp_path / "m.bpk")
    site.site.files["/m.bpk"] = (tmp_path / "m.bpk").read_bytes()
    site.site.files["/m.safetensors"] = save_safetensors(ARRAYS)
    for name in ("m.bpk", "m.safetensors"):
        site.site.log.clear()
        with open_store(site.url("/" + name)) as store:
            assert store.names == list(ARRAYS)
            assert [r.range for r in site.site.log] == ["bytes=0-65535"], name


def test_a_template_may_be_an_address(site, tmp_path, capsys):
    site.site.files["/template.safetensors"] = save_safetensors({"w0": np.zeros((2, 2), np.float32)})
    source = export(ArrayStore({"w0": np.zeros(3, np.float32)}).entries, tmp_path / "a.safetensors")
    assert main(["convert", str(source), str(tmp_path / "o.bpk"), "--template", site.url("/template.safetensors")]) == 3
    assert "  shape mismatch w0: source [3]" in capsys.readouterr().out and not (tmp_path / "o.bpk").exists()
    assert any(r.path == "/template.safetensors" for r in site.site.log)


def test_429_and_5xx_are_retried(site, monkeypatch):
    monkeypatch.setenv("STORE_STUDIO_HTTP_RETRIES", "2")
    site.site.files["/m.safetensors"] = save_safetensors(ARRAYS)
    site.site.errors["/m.safetensors"] = [429, 502]
    with open_store(site.url("/m.safetensors")) as store:
        assert store.read("w3")[0, 0] == 3
    assert site.site.errors["/m.safetensors"] == []


@pytest.mark.parametrize("change", ["last_modified", "size"])
def test_a_changed_identity_without_an_etag_is_refused(site, change):
    """A server that sends no ETag: the file is known by its Last-Modified and size alone."""
    site.site.files["/m.safetensors"] = save_safetensors(ARRAYS)
    site.site.no_etag.add("/m.safetensors")
    with open_store(site.url("/m.safetensors")) as store:
        if change == "last_modified":  # same bytes, a newer date: replaced with an equal copy is still replaced
            site.site.modified["/m.safetensors"] = "Tue, 24 Nov 2026 10:00:00 GMT"
        else:
            site.site.files["/m.safetensors"] += b" " * 8
        with pytest.raises(FormatError, match="changed on the server since it was opened"):
            store.read("w3")


def test_a_range_read_once_is_not_fetched_again(site):
    site.site.files["/m.safetensors"] = save_safetensors({"big": np.ones((512, 512), np.float32), **ARRAYS})
    with open_store(site.url("/m.safetensors")) as store:
        first = store.read("big").copy()
        before = traffic.bytes
        requests = len(site.site.log)
        assert np.array_equal(store.read("big"), first)
        assert traffic.bytes == before and len(site.site.log) == requests


def test_a_whole_download_leaves_no_file_behind(site, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    site.site.files["/m.safetensors"] = save_safetensors(ARRAYS)
    site.site.no_ranges.add("/m.safetensors")
    with pytest.warns(Warning, match="ignores byte ranges"):
        store = open_store(site.url("/m.safetensors"))
    with store:
        assert list(tmp_path.iterdir()) == []  # deleted the moment it was opened
        assert store.read("w2")[0, 0] == 2
    assert list(tmp_path.iterdir()) == []


def test_a_recipe_keeps_an_hf_address_as_written_and_never_the_token(site, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", site.base)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    site.site.files["/org/repo/resolve/main/m.safetensors"] = save_safetensors(ARRAYS)
    recipe = tmp_path / "r.json"
    assert main(["convert", "hf://org/repo/m.safetensors", str(tmp_path / "o.bpk"), "-q",
                 "--save-recipe", str(recipe)]) == 0
    assert json.loads(recipe.read_text())["sources"][0]["path"] == "hf://org/repo/m.safetensors"
    assert TOKEN not in recipe.read_text()
    assert {r.authorization for r in site.site.log} == {f"Bearer {TOKEN}"}


def test_the_hubs_download_cache_is_neither_used_nor_filled(site, tmp_path, monkeypatch):
    home = tmp_path / "hf"
    (home / "hub").mkdir(parents=True)
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_ENDPOINT", site.base)
    site.site.files["/org/repo/resolve/main/m.safetensors"] = save_safetensors(ARRAYS)
    assert main(["convert", "hf://org/repo/m.safetensors", str(tmp_path / "o.bpk"), "-q"]) == 0
    assert list(home.rglob("*")) == [home / "hub"]


def test_the_last_ten_addresses_are_remembered_and_clear_recent_forgets_them(tmp_path):
    from PySide6.QtCore import QSettings

    from gui import settings
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp_path / "settings"))
    for i in range(12):
        settings.remember_url(f"https://example.org/m{i}.safetensors")
    assert settings.recent_urls() == [f"https://example.org/m{i}.safetensors" for i in range(11, 1, -1)]
    settings.remember_recent("/models/a.bpk")
    settings.clear_recent()
    assert settings.recent_urls() == [] and settings.recent_files() == []


@pytest.mark.parametrize("address", ["s3://bucket/m.safetensors", "gs://b/m.bpk", "ftp://host/m.pt"])
def test_an_address_of_another_scheme_is_refused_by_its_scheme(address, capsys):
    assert main(["inspect", address]) == 1
    err = capsys.readouterr().err.strip()
    scheme = address.split("://")[0]
    assert err.endswith(f"{scheme}:// addresses are not read (only http://, https:// and hf://); "
                        "download the file and open it from disk")
    assert len(err.splitlines()) == 1
