import ipaddress

import pytest

from tests.webhook import WebhookServer


@pytest.fixture
def webhook(settings):
    """A webhook receiver on 127.0.0.1 (tests/webhook.py), with loopback allowed as a chat address."""
    settings.NOTIFY_ALLOW_PRIVATE_URLS = (ipaddress.ip_network("127.0.0.1/32"),)
    settings.NOTIFY_RETRIES = 2
    settings.NOTIFY_WEBHOOK_TIMEOUT_S = 2
    server = WebhookServer().start()
    yield server
    server.stop()


@pytest.fixture
def on_commit(django_capture_on_commit_callbacks):
    """Run what the block queued for after its commit, at its end (the tests' transaction never commits)."""
    return lambda: django_capture_on_commit_callbacks(execute=True)
