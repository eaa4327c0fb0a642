"""Address-keyed limits read the client's address through the proxies FORWARDED_ALLOW_IPS names, never from what a
client wrote.

Finding 2 of the security review: /api/v1/token/ was throttled on the whole X-Forwarded-For header, so a new
made-up header bought a new budget of password guesses.
"""

import secrets

import pytest
from django.core.cache import cache
from rest_framework.settings import api_settings
from rest_framework.test import APIRequestFactory
from rest_framework.throttling import AnonRateThrottle, ScopedRateThrottle, SimpleRateThrottle, UserRateThrottle

from accounts.addresses import parse_proxies
from portal.api.views import TokenApi
from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db

RATE = 5


@pytest.fixture
def token_rate(monkeypatch, settings):
    """The token endpoint at 5 tries a minute (production's default is 20; the test settings lift it); the lockout
    per (username, address) out of the way (tests/portal/test_signin_lockout.py tests it)."""
    settings.AXES_FAILURE_LIMIT = 1000
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {**SimpleRateThrottle.THROTTLE_RATES, "token": "5/min"})


@pytest.fixture
def peer():
    """A client address of this test's own, so no other test's budget (or an earlier run's) counts."""
    address = f"198.18.{secrets.randbelow(256)}.{secrets.randbelow(254) + 1}"
    cache.delete(f"throttle_token_{address}")
    yield address
    cache.delete(f"throttle_token_{address}")


def ask_for_token(api, password, **meta):
    return api.post("/api/v1/token/", {"username": "ada", "password": password}, format="json", **meta)


def test_rotating_x_forwarded_for_does_not_reset_the_token_throttle(api, token_rate, peer):
    UserFactory(username="ada")

    guesses = [
        ask_for_token(api, f"guess-{n}", REMOTE_ADDR=peer, HTTP_X_FORWARDED_FOR=f"203.0.113.{n}").status_code
        for n in range(25)
    ]
    right = ask_for_token(api, PASSWORD, REMOTE_ADDR=peer, HTTP_X_FORWARDED_FOR="203.0.113.200")

    assert guesses[:RATE] == [401] * RATE
    assert guesses[RATE:] == [429] * (25 - RATE)
    assert right.status_code == 429
    assert right.json()["code"] == "throttled" and "token" not in right.json()
    assert int(right["Retry-After"]) > 0


def test_another_client_keeps_its_own_budget(api, token_rate, peer):
    UserFactory(username="ada")
    for n in range(RATE + 1):
        ask_for_token(api, f"guess-{n}", REMOTE_ADDR=peer)
    assert ask_for_token(api, PASSWORD, REMOTE_ADDR=peer).status_code == 429

    other = f"198.19.{secrets.randbelow(256)}.{secrets.randbelow(254) + 1}"
    try:
        assert ask_for_token(api, PASSWORD, REMOTE_ADDR=other).status_code == 200
    finally:
        cache.delete(f"throttle_token_{other}")


def test_behind_one_proxy_the_address_it_appended_counts_not_what_the_client_wrote(api, settings, token_rate, peer):
    proxy = "10.9.8.7"
    settings.FORWARDED_ALLOW_IPS = parse_proxies(proxy)
    UserFactory(username="ada")
    attacker, neighbour = peer, f"198.19.{secrets.randbelow(256)}.{secrets.randbelow(254) + 1}"
    try:
        statuses = [
            # The client writes its own X-Forwarded-For; the proxy appends the address it saw.
            ask_for_token(api, "guess", REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR=f"192.0.2.{n}, {attacker}").status_code
            for n in range(RATE + 3)
        ]
        assert statuses == [401] * RATE + [429] * 3
        # Someone else behind the same proxy is not throttled with the attacker.
        assert ask_for_token(api, PASSWORD, REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR=neighbour).status_code == 200
    finally:
        cache.delete(f"throttle_token_{neighbour}")


@pytest.mark.parametrize("throttle_class", [*TokenApi.throttle_classes, AnonRateThrottle, UserRateThrottle])
def test_no_throttle_keys_an_anonymous_caller_on_a_made_up_header(throttle_class):
    """Every DRF throttle (the token endpoint's, and DRF's own that other views may add) reads the same address."""
    assert api_settings.NUM_PROXIES == 0  # DRF's own throttles key on REMOTE_ADDR
    throttle = throttle_class.__new__(throttle_class)  # get_ident needs no rate
    factory = APIRequestFactory()
    idents = {
        throttle.get_ident(factory.get("/", REMOTE_ADDR="198.51.100.7", HTTP_X_FORWARDED_FOR=f"203.0.113.{n}"))
        for n in range(10)
    }
    assert idents == {"198.51.100.7"}


def test_drf_believes_no_header_and_the_token_throttle_is_ours(settings):
    assert settings.REST_FRAMEWORK["NUM_PROXIES"] == 0
    assert issubclass(TokenApi.throttle_classes[0], ScopedRateThrottle)


def test_a_client_that_reaches_the_portal_past_the_proxy_cannot_name_its_address(api, settings, token_rate, peer):
    """With a proxy named, a peer that is not that proxy is the client, whatever X-Forwarded-For it writes."""
    settings.FORWARDED_ALLOW_IPS = parse_proxies("10.9.8.7")
    UserFactory(username="ada")
    statuses = [
        ask_for_token(api, f"guess-{n}", REMOTE_ADDR=peer, HTTP_X_FORWARDED_FOR=f"10.9.8.7, 203.0.113.{n}").status_code
        for n in range(RATE + 3)
    ]
    assert statuses == [401] * RATE + [429] * 3
