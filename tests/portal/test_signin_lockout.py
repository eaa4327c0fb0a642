"""Brute force against the HTML login and POST /api/v1/token/: locked per (username, address) as configured, per
address slowed by the throttles, and the real person signs in after the window (the clock is moved, never slept)
and at once from another address. django-axes (AXES_*), DRF throttles (LOGIN_/TOKEN_THROTTLE_RATE)."""

from __future__ import annotations

import datetime as dt
import secrets

import pytest
from axes.models import AccessAttempt
from django.core.cache import cache
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient
from rest_framework.throttling import SimpleRateThrottle

from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db

LIMIT = 3
COOLOFF_MIN = 10


@pytest.fixture(autouse=True)
def lockout(settings):
    settings.AXES_FAILURE_LIMIT = LIMIT
    settings.AXES_COOLOFF_TIME = dt.timedelta(minutes=COOLOFF_MIN)


@pytest.fixture
def clock(monkeypatch):
    """Move "now" for the portal and django-axes alike (axes imported `now` by name)."""
    import axes.attempts
    import axes.handlers.proxy

    state = {"now": timezone.now()}

    def now():
        return state["now"]

    for module in (timezone, axes.handlers.proxy, axes.attempts):
        monkeypatch.setattr(module, "now", now)

    def move(**delta):
        state["now"] += dt.timedelta(**delta)

    return move


def address() -> str:
    """An address of the test's own: the throttles' counters live in Redis, which outlives the test."""
    ip = f"198.18.{secrets.randbelow(256)}.{secrets.randbelow(254) + 1}"
    for scope in ("login", "token"):
        cache.delete(f"throttle_{scope}_{ip}")
    return ip


def html_login(ip: str, password: str, username: str = "ada"):
    return Client(REMOTE_ADDR=ip).post("/login/", {"username": username, "password": password})


def token(ip: str, password: str, username: str = "ada"):
    return APIClient(REMOTE_ADDR=ip).post("/api/v1/token/", {"username": username, "password": password}, format="json")


def test_html_login_locks_the_pair_after_the_limit_and_lets_the_person_in_after_the_window(clock):
    UserFactory(username="ada")
    attacker = address()
    statuses = [html_login(attacker, f"guess-{n}").status_code for n in range(LIMIT - 1)]
    assert statuses == [400] * (LIMIT - 1)  # wrong password: the form says so

    locked = html_login(attacker, "guess-last")  # the failure that reaches the limit is answered with the lock
    assert locked.status_code == 429
    page = locked.content.decode()
    assert "Sign-in paused" in page and "Too many failed sign-ins for ada" in page
    assert "in 10 minutes" in page and "From another network you can sign in now" in page
    assert int(locked["Retry-After"]) == COOLOFF_MIN * 60

    # Even the right password is refused from that address during the window, and trying does not extend it.
    clock(minutes=4)
    refused = html_login(attacker, PASSWORD)
    assert refused.status_code == 429 and "_auth_user_id" not in refused.client.session
    assert int(refused["Retry-After"]) == 6 * 60

    # The real person, from another address, signs in at once.
    elsewhere = html_login(address(), PASSWORD)
    assert elsewhere.status_code == 302 and elsewhere["Location"] == "/"

    # After the window, from the locked address too.
    clock(minutes=6, seconds=1)
    after = html_login(attacker, PASSWORD)
    assert after.status_code == 302 and after["Location"] == "/"
    assert not AccessAttempt.objects.filter(username="ada", ip_address=attacker).exists()  # a success resets


def test_token_endpoint_locks_the_pair_with_429_retry_after_and_json(clock):
    UserFactory(username="ada")
    attacker = address()
    assert [token(attacker, f"guess-{n}").status_code for n in range(LIMIT - 1)] == [401] * (LIMIT - 1)
    locked = token(attacker, "guess-last")
    assert locked.status_code == 429
    body = locked.json()
    assert body["code"] == "locked_out" and "token" not in body
    assert "Too many failed sign-ins for ada" in body["detail"] and "in 10 minutes" in body["detail"]
    assert body["retry_after_s"] == COOLOFF_MIN * 60 == int(locked["Retry-After"])

    clock(minutes=9)
    again = token(attacker, PASSWORD)
    assert again.status_code == 429 and again.json()["retry_after_s"] == 60
    assert token(address(), PASSWORD).status_code == 200  # another address: the person gets the token

    clock(minutes=1, seconds=1)
    assert token(attacker, PASSWORD).status_code == 200


@pytest.mark.parametrize("door", ["token", "page"])
def test_a_made_up_x_forwarded_for_neither_escapes_nor_spreads_the_lock(clock, door):
    """No proxy is named (the default): each try names another address in X-Forwarded-For, the lock holds all the
    same, for the peer's address only."""
    UserFactory(username="ada")
    attacker = address()

    def attempt(password, n, ip=attacker):
        forged = {"HTTP_X_FORWARDED_FOR": f"203.0.113.{n}"}
        if door == "token":
            return APIClient(REMOTE_ADDR=ip, **forged).post(
                "/api/v1/token/", {"username": "ada", "password": password}, format="json"
            )
        return Client(REMOTE_ADDR=ip, **forged).post("/login/", {"username": "ada", "password": password})

    statuses = [attempt(f"guess-{n}", n).status_code for n in range(LIMIT + 3)]
    assert statuses[LIMIT - 1 :] == [429] * 4
    assert attempt(PASSWORD, 99).status_code == 429
    assert set(AccessAttempt.objects.filter(username="ada").values_list("ip_address", flat=True)) == {attacker}
    # Someone else whose real address is another one, writing the attacker's address, is not locked.
    assert attempt(PASSWORD, 100, ip=address()).status_code in (200, 302)


def test_failures_count_across_both_doors_and_per_username(clock):
    """Page and API share the pair's count; another username from the same address is not locked."""
    UserFactory(username="ada")
    UserFactory(username="bob")
    ip = address()
    html_login(ip, "a")
    token(ip, "b")
    assert html_login(ip, "c").status_code == 429
    assert token(ip, PASSWORD).status_code == 429
    assert html_login(ip, PASSWORD, username="bob").status_code == 302


def test_an_unknown_username_locks_too_and_says_nothing_about_existence(clock):
    ip = address()
    answers = [token(ip, "x", username="nobody-here") for _ in range(LIMIT)]
    assert [a.status_code for a in answers] == [401] * (LIMIT - 1) + [429]
    UserFactory(username="ada")
    known = [token(address(), "x") for _ in range(1)][0]
    assert known.json()["detail"] == answers[0].json()["detail"] == "Wrong username or password."


@pytest.fixture
def slow_rates(monkeypatch):
    monkeypatch.setattr(
        SimpleRateThrottle, "THROTTLE_RATES", {**SimpleRateThrottle.THROTTLE_RATES, "login": "4/min", "token": "4/min"}
    )


def test_the_html_login_is_throttled_per_address_across_usernames(slow_rates, settings):
    """Password spraying (one guess for many names) from one address is slowed by LOGIN_THROTTLE_RATE."""
    settings.AXES_FAILURE_LIMIT = 100
    ip = address()
    for n in range(4):
        UserFactory(username=f"user{n}")
    statuses = [html_login(ip, "Winter2026!", username=f"user{n}").status_code for n in range(4)]
    paused = html_login(ip, PASSWORD, username="user0")
    assert statuses == [400] * 4
    assert paused.status_code == 429
    assert "Too many sign-in attempts from your network address: try again in" in paused.content.decode()
    assert 0 < int(paused["Retry-After"]) <= 60
    assert html_login(address(), PASSWORD, username="user0").status_code == 302  # another address is not slowed


def test_the_admin_console_login_is_locked_too(clock):
    UserFactory(username="root", role="admin", is_staff=True, is_superuser=True)
    ip = address()
    client = Client(REMOTE_ADDR=ip)
    answers = [client.post("/admin/login/", {"username": "root", "password": "x"}).status_code for _ in range(LIMIT)]
    assert answers[-1] == 429
    assert client.post("/admin/login/", {"username": "root", "password": PASSWORD}).status_code == 429
    clock(minutes=COOLOFF_MIN, seconds=1)
    assert client.post("/admin/login/", {"username": "root", "password": PASSWORD}).status_code == 302


def test_a_username_longer_than_any_is_counted_without_a_5xx(clock):
    """Normalisation can make a username longer than the form's limit; the lockout keeps 150 characters of it."""
    ip = address()
    long_name = "𝕏\u0301" * 200
    answers = [html_login(ip, "x", username=long_name).status_code for _ in range(LIMIT)]
    assert answers == [400] * (LIMIT - 1) + [429]
    assert token(ip, "x", username="y" * 300).status_code in (400, 401)


def test_a_session_naming_the_first_backend_still_finds_its_user():
    """The lockout backend is first in AUTHENTICATION_BACKENDS; sessions written naming it (the benchmark's) work."""
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    ada = UserFactory(username="ada")
    session = SessionStore()
    session[SESSION_KEY], session[BACKEND_SESSION_KEY] = str(ada.pk), settings.AUTHENTICATION_BACKENDS[0]
    session[HASH_SESSION_KEY] = ada.get_session_auth_hash()
    session.create()
    client = Client()
    client.cookies[settings.SESSION_COOKIE_NAME] = session.session_key
    assert client.get("/account/").status_code == 200
