import pytest

from tests.factories import NodeFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_healthz(client):
    assert client.get("/healthz").json() == {"status": "ok"}


def test_readyz_checks_postgres_and_redis(client):
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ready", "checks": {"database": "ok", "redis": "ok"}}


def test_readyz_is_503_when_redis_is_unreachable(client, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["redis"].startswith("redis unreachable")


def test_metrics_are_prometheus_text(client):
    UserFactory(role="teacher")
    NodeFactory(status="cordoned")
    text = client.get("/metrics").content.decode()
    assert 'portal_users{role="teacher"} 1.0' in text
    assert 'portal_nodes{status="cordoned"} 1.0' in text
    assert 'portal_allocations_open{kind="job"} 0.0' in text


def test_metrics_token_when_configured(client, settings):
    settings.METRICS_TOKEN = "s3cret"
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret").status_code == 200
