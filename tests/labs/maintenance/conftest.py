import pytest

from tests.webhook import WebhookServer  # noqa: F401 - the notify fixtures' module, for webhooks if needed


@pytest.fixture
def on_commit(django_capture_on_commit_callbacks):
    return lambda: django_capture_on_commit_callbacks(execute=True)
