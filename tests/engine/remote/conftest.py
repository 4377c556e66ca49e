"""Two real HTTP servers on loopback (a second origin for cross-host redirects), fresh per test."""

from __future__ import annotations

import pytest

from tests.helpers.remote_http_site import Server, Site


@pytest.fixture
def site():
    server = Server(Site())
    yield server
    server.close()


@pytest.fixture
def other_site():
    """Another origin (host name ``localhost``, its own port): a CDN the Hub redirects to."""
    server = Server(Site(), name="localhost")
    yield server
    server.close()


@pytest.fixture(autouse=True)
def quick_network(monkeypatch):
    """No token from the environment or a saved login leaks into a test; faults retry once, fast."""
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", "/nonexistent-store-studio-test-home")
    monkeypatch.setenv("STORE_STUDIO_HTTP_RETRIES", "2")
