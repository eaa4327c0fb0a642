import uuid

import pytest
from django.db import connection
from rest_framework.test import APIClient

from tests.factories import PASSWORD, UserFactory

ROLES = ("anonymous", "student", "teacher", "admin")
# The role matrix's fifth role: a student who is the teaching assistant of a course (user_of_role("assistant")).
# The tests that index their expectations by ROLES keep four; tests/test_role_matrix.py checks all five.
ROLES_WITH_ASSISTANT = (*ROLES, "assistant")


@pytest.fixture(autouse=True, scope="session")
def _real_services(django_db_setup, django_db_blocker):
    """The suite is meant for PostgreSQL and Redis; say so plainly instead of failing oddly later."""
    from django.conf import settings

    with django_db_blocker.unblock():
        if getattr(settings, "TESTS_ON_SQLITE", False):  # tests/settings_sqlite.py: the embedded path, on purpose
            assert connection.vendor == "sqlite"
            return
        assert connection.vendor == "postgresql", "Run the tests on PostgreSQL: see README (scripts/test.sh)."


@pytest.fixture(autouse=True, scope="session")
def _translations_compiled():
    """The .mo files are built, not committed: compile locale/ (only what changed) before the first test, as
    scripts/test.sh does, so that a targeted pytest run speaks Portuguese too. Needs Debian's gettext (msgfmt)."""
    import shutil

    from django.core.management import call_command

    if shutil.which("msgfmt"):
        call_command("compilemessages", verbosity=0, ignore_patterns=[".venv/*", "node_modules/*"])


def pytest_collection_modifyitems(config, items):
    """On SQLite (tests/settings_sqlite.py), skip what needs PostgreSQL itself."""
    from django.conf import settings

    if not getattr(settings, "TESTS_ON_SQLITE", False):
        return
    skip = pytest.mark.skip(reason="needs PostgreSQL itself (its exclusion constraint or advisory locks)")
    for item in items:
        if "postgresql_only" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _fresh_rate_limits(settings):
    """Each test counts its own presses: the counters live in Redis, which outlives the test databases (whose
    user ids come back on the next run)."""
    settings.RATE_LIMIT_KEY_PREFIX = f"ratelimit-test-{uuid.uuid4().hex}"


@pytest.fixture(autouse=True)
def _language_of_the_lab():
    """Each test starts in the lab's language: a test that activated another one (a page in pt-BR, an e-mail in the
    recipient's language) must not leave it to the next test's sentences."""
    from django.utils import translation

    yield
    translation.deactivate()


@pytest.fixture(autouse=True)
def _fresh_telemetry_state():
    """Each test starts with no live GPU state: the cache (Redis) outlives tests, and the state one test wrote would be
    what the next test's pages and API show."""
    from django.core.cache import cache

    client = getattr(getattr(cache, "_cache", None), "get_client", None)
    if client is None:  # the local-memory cache of the SQLite session: one per process, cleared outright
        cache.clear()
        return
    redis = client(write=True)
    keys = list(redis.scan_iter(match=cache.make_key("telemetry:*")))
    if keys:
        redis.delete(*keys)


@pytest.fixture(autouse=True)
def _fresh_banners():
    """Each test reads its own banners: the rows every page shows are kept in the cache (Redis outlives tests) until
    a write moves their version on, and a test's writes are rolled back without one."""
    from django.core.cache import cache

    from labs.maintenance.selectors import BANNERS_KEY

    cache.delete(BANNERS_KEY)


@pytest.fixture(autouse=True)
def _fresh_channel_layer():
    """Each test gets its own channel layer: the Redis layer keeps locks bound to the event loop that used them, so a
    test that failed mid-receive would otherwise fail every later test that uses the layer from another loop."""
    from channels.layers import channel_layers

    yield
    channel_layers.backends.clear()


@pytest.fixture
def redis_server(tmp_path):
    """A private redis-server on a free loopback port, for drills that kill and restart it (never the shared one)."""
    from tests.fault_tools import RedisServer

    server = RedisServer(tmp_path).start()
    yield server
    server.stop()


@pytest.fixture
def user_of_role(db):
    def make(role: str):
        if role == "anonymous":
            return None
        if role == "assistant":
            from tests.factories import CourseFactory, EnrollmentFactory

            user = UserFactory(username="assistant-x", role="student")
            EnrollmentFactory(user=user, course=CourseFactory(), role="assistant")
            return user
        return UserFactory(username=f"{role}-x", role=role)

    return make


@pytest.fixture
def api():
    return APIClient()


@pytest.fixture
def api_as(user_of_role):
    """An API client signed in (by token) as a fresh user of the role, or anonymous."""

    def make(role: str) -> APIClient:
        client = APIClient()
        user = user_of_role(role)
        if user is not None:
            from accounts.services import token_issue

            client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)}")
        return client

    return make


@pytest.fixture
def browser_client(client, user_of_role):
    def make(role: str):
        user = user_of_role(role)
        if user is not None:
            assert client.login(username=user.username, password=PASSWORD)
        return client

    return make


# --- A fixed "now" for tests whose result names the time of day or the day (never the real clock's hour) --------------
@pytest.fixture
def frozen_now(monkeypatch):
    """Freeze django.utils.timezone.now: frozen_now("2026-03-30 23:30") is 23:30 in the lab's zone (TIME_ZONE).

    Code that calls timezone.now() / timezone.localdate() sees it; returns the aware moment."""
    import datetime as dt

    from django.utils import timezone

    def freeze(local: str | dt.datetime) -> dt.datetime:
        moment = dt.datetime.fromisoformat(local) if isinstance(local, str) else local
        if timezone.is_naive(moment):
            moment = timezone.make_aware(moment)
        monkeypatch.setattr(timezone, "now", lambda: moment)
        return moment

    return freeze


# --- E-mail through a real SMTP server on loopback --------------------------------------------------------------------
@pytest.fixture
def smtp_server(settings):
    """A real SMTP server (aiosmtpd, tests/mail.py) on a free port of 127.0.0.1, with Django's SMTP backend pointed
    at it; `smtp_server.messages` / `.to(address)` are what arrived. Stops after the test."""
    from tests.mail import SmtpServer

    server = SmtpServer().start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", server.port
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_TIMEOUT = 10
    settings.DEFAULT_FROM_EMAIL = "GPU Lab <gpu-lab@lab.example>"
    yield server
    server.stop()
