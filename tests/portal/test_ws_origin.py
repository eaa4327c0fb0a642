"""WebSocket handshakes: the Origin is checked in full (scheme, host, port), and expired tokens sign nobody in.

Finding 10 of the security review: `http://portal.lab.example:8080` was accepted with a session, because only the
Origin's host was compared with ALLOWED_HOSTS. Connects to the real ASGI app as tests/labs/telemetry/test_websocket.py.
"""

import datetime as dt

import pytest
from asgiref.sync import async_to_sync
from django.utils import timezone

from accounts.models import ApiToken
from tests.labs.telemetry.test_collector import clean_store  # noqa: F401  (fixture)
from tests.labs.telemetry.test_websocket import connect, lab, session_headers, token_headers  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def people(lab):  # noqa: F811
    """The WebSocket tests' lab: four nodes, and a student, a teacher and an admin (and another student)."""
    return lab


def connects(headers) -> bool:
    async def scenario():
        socket, connected = await connect(headers)
        await socket.disconnect()
        return connected

    return async_to_sync(scenario)()


def with_origin(user, origin: str, *extra):
    return session_headers(user, origin=(b"origin", origin.encode())) + list(extra)


@pytest.mark.parametrize(
    "origin",
    [
        "http://testserver:8080",  # another port on the same host
        "https://testserver",  # another scheme: the handshake came in plain
        "https://testserver:80",
        "http://evil.example",
        "null",
        "http://testserver/some/page",
        "http://testserver:notaport",
    ],
)
def test_a_session_from_another_origin_is_refused(people, origin):
    assert connects(with_origin(people["student"], origin)) is False


@pytest.mark.parametrize("role", ["student", "teacher", "admin"])
def test_each_role_connects_from_the_portals_own_origin(people, role):
    assert connects(with_origin(people[role], "http://testserver")) is True
    assert connects(with_origin(people[role], "http://TestServer:80")) is True  # the same origin, spelt otherwise


def test_the_host_header_names_the_portals_origin_and_must_be_an_allowed_host(people):
    student = people["student"]
    assert connects(with_origin(student, "http://localhost:8000", (b"host", b"localhost:8000"))) is True
    assert connects(with_origin(student, "http://localhost:8001", (b"host", b"localhost:8000"))) is False
    # A made-up Host does not make a made-up origin the portal's own.
    assert connects(with_origin(student, "http://evil.example", (b"host", b"evil.example"))) is False


def test_a_trusted_origin_counts_in_full_too(people, settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://portal.lab.example", "https://*.lab.example"]
    student = people["student"]
    assert connects(with_origin(student, "https://portal.lab.example")) is True
    assert connects(with_origin(student, "https://notebooks.lab.example")) is True
    assert connects(with_origin(student, "http://portal.lab.example:8080")) is False
    assert connects(with_origin(student, "http://portal.lab.example")) is False
    assert connects(with_origin(student, "https://portal.lab.example:8443")) is False
    assert connects(with_origin(student, "https://evil-lab.example")) is False


def test_behind_a_tls_proxy_the_https_origin_is_the_portals_own(people, settings):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    student, proto = people["student"], (b"x-forwarded-proto", b"https")
    host = (b"host", b"testserver")
    assert connects(with_origin(student, "https://testserver", proto, host)) is True
    assert connects(with_origin(student, "http://testserver", proto, host)) is False
    assert connects(with_origin(student, "https://testserver", host)) is False


def test_a_script_with_a_token_needs_no_origin_but_a_foreign_origin_is_still_refused(people):
    assert connects(token_headers(people["admin"])) is True
    assert connects(token_headers(people["admin"]) + [(b"origin", b"http://testserver:8080")]) is False


def test_an_expired_token_does_not_open_a_socket(people, settings):
    settings.API_TOKEN_TTL_DAYS = 30
    headers = token_headers(people["admin"])
    assert connects(headers) is True
    ApiToken.objects.filter(user=people["admin"]).update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    assert connects(headers) is False
