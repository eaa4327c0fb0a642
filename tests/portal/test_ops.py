import pytest

from tests.factories import NodeFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_healthz(client):
    assert client.get("/healthz").json() == {"status": "ok"}


def test_readyz_checks_postgres_and_redis(client):
    response = client.get("/readyz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ready"
    assert body["checks"] == {"database": "ok", "redis": "ok", "netpolicy": "off"}  # tests/portal/test_netcheck.py


def test_readyz_is_503_when_redis_is_unreachable(client, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["redis"].startswith("redis unreachable")


def test_metrics_are_prometheus_text(client, settings):
    settings.DEBUG = True  # open in development (pytest-django runs with DEBUG off)
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


# --- /metrics outside DEBUG (finding 9 of the security review: it was open unless METRICS_TOKEN was set) ---


def test_metrics_are_closed_outside_debug_without_a_token(client, settings):
    settings.DEBUG = False
    settings.METRICS_TOKEN = ""
    response = client.get("/metrics")
    assert response.status_code == 403
    assert "set METRICS_TOKEN" in response.content.decode()
    assert "portal_users" not in response.content.decode()
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer anything").status_code == 403


def test_metrics_outside_debug_answer_the_configured_bearer_token(client, settings):
    settings.DEBUG = False
    settings.METRICS_TOKEN = "s3cret"
    refused = client.get("/metrics")
    assert refused.status_code == 401 and refused["WWW-Authenticate"].startswith("Bearer")
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3crét").status_code == 401  # not a 500
    assert "portal_users" in client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret").content.decode()


@pytest.mark.parametrize("role", ["student", "teacher", "admin"])
def test_a_signed_in_session_does_not_open_metrics(client, settings, role):
    settings.DEBUG = False
    settings.METRICS_TOKEN = "s3cret"
    client.force_login(UserFactory(role=role))
    assert client.get("/metrics").status_code == 401


def test_check_deploy_warns_when_metrics_have_no_token(settings):
    from django.core import checks

    settings.METRICS_TOKEN = ""
    ids = {message.id for message in checks.run_checks(include_deployment_checks=True, tags=[checks.Tags.security])}
    assert "portal.W001" in ids
    settings.METRICS_TOKEN = "s3cret"
    ids = {message.id for message in checks.run_checks(include_deployment_checks=True, tags=[checks.Tags.security])}
    assert "portal.W001" not in ids
