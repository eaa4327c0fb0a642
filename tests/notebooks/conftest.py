"""A real JupyterHub on loopback for the notebook tests: one per test session, echo spawner."""

from __future__ import annotations

import pytest

from labs.notebooks.localhub import HubFailed, HubNotInstalled, LocalHub


@pytest.fixture(scope="session")
def hub():
    """The hub every notebook test talks to (started once; its private data directory goes at the end)."""
    local = LocalHub(spawner="echo", portal_url="http://127.0.0.1:9")
    try:
        local.start(timeout=90)
    except (HubNotInstalled, HubFailed) as problem:
        local.close()
        pytest.fail(str(problem), pytrace=False)
    yield local
    local.close()


@pytest.fixture
def hub_settings(settings, hub):
    """The portal's settings pointed at the test hub."""
    settings.NOTEBOOKS_HUB_API_URL = hub.api_url
    settings.NOTEBOOKS_HUB_PUBLIC_URL = hub.public_url
    return settings
