"""The window remembers the addresses opened, never the token (README "Remote files and the Hugging Face Hub", what is
cached where: "The window remembers the addresses you opened (never tokens) in its settings file"): a token written
there would leak a user's Hub credentials to anyone who reads the file. A real HTTP server on loopback plays the Hub
(`HF_ENDPOINT`) and answers only with the bearer token.

Promise -> test:
- a gated `hf://` file opened in the window is remembered as written, and no settings file holds the token ->
  test_a_gated_hub_file_is_remembered_by_its_address_and_never_its_token (checked: a settings entry holding the
  address with the token as a query fails it)
"""

from __future__ import annotations

import numpy as np
from safetensors.numpy import save as save_safetensors

from engine import RemoteLocation
from gui import settings
from tests.helpers.remote_http_site import Server, Site

TOKEN = "hf_window_secret_2468"
ADDRESS = "hf://org/gated/m.safetensors"


def test_a_gated_hub_file_is_remembered_by_its_address_and_never_its_token(window, qtbot, isolated_settings,
                                                                          monkeypatch):
    server = Server(Site())
    try:
        server.site.files["/org/gated/resolve/main/m.safetensors"] = save_safetensors({"w": np.ones(4, np.float32)})
        server.site.tokens["/org/gated/resolve/main/m.safetensors"] = TOKEN
        monkeypatch.setenv("HF_ENDPOINT", server.base)
        monkeypatch.setenv("HF_TOKEN", TOKEN)
        monkeypatch.setenv("STORE_STUDIO_HTTP_RETRIES", "0")
        window.open_file(ADDRESS)
        qtbot.waitUntil(lambda: window.view_for(RemoteLocation(ADDRESS)) is not None, timeout=10_000)
        assert window.view_for(RemoteLocation(ADDRESS)).store.names == ["w"]
        assert {r.authorization for r in server.site.log} == {f"Bearer {TOKEN}"}  # it was needed, and sent
    finally:
        server.close()
    assert settings.recent_urls() == [ADDRESS]
    window.close()
    written = [path for path in isolated_settings.rglob("*") if path.is_file()]
    assert written and not any(TOKEN.encode() in path.read_bytes() for path in written)
    assert any(ADDRESS.encode() in path.read_bytes() for path in written)
