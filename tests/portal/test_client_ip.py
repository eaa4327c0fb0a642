"""client_ip: the one reading of a caller's address, for requests and WebSocket scopes alike, believing
X-Forwarded-For only from the proxies FORWARDED_ALLOW_IPS names."""

import ipaddress
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rest_framework.test import APIRequestFactory

from accounts.addresses import client_ip, client_ip_address, forwarded_client, parse_proxies, scope_client_ip

PROXY = "10.0.0.2"
NAMED = "10.0.0.0/24"
ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.mark.parametrize(
    "peer_address,forwarded,proxies,expected",
    [
        ("198.51.100.1", "", "", "198.51.100.1"),
        ("198.51.100.1", "203.0.113.9", "", "198.51.100.1"),  # no named proxy: the header is the client's word
        ("127.0.0.1", "203.0.113.9", "", "127.0.0.1"),  # loopback is no proxy unless named (uvicorn's old default)
        ("198.51.100.1", "203.0.113.9", NAMED, "198.51.100.1"),  # a peer that is not a named proxy wrote it
        (PROXY, "203.0.113.9", NAMED, "203.0.113.9"),
        (PROXY, "6.6.6.6, 203.0.113.9", NAMED, "203.0.113.9"),  # what the client prepended does not count
        (PROXY, "6.6.6.6, 203.0.113.9, 10.0.0.3", NAMED, "203.0.113.9"),  # a CDN of ours, then the load balancer
        (PROXY, "6.6.6.6, 203.0.113.9, 10.0.0.3", PROXY, "10.0.0.3"),  # only the load balancer named
        (PROXY, "10.0.0.7, 10.0.0.3", NAMED, "10.0.0.7"),  # the client is itself a named proxy
        (PROXY, " , ", NAMED, PROXY),
        (PROXY, "not-an-address", NAMED, PROXY),
        (PROXY, "203.0.113.9, not-an-address", NAMED, PROXY),
        (PROXY, "2001:db8::1", NAMED, "2001:db8::1"),
        ("::ffff:10.0.0.2", "203.0.113.9", NAMED, "203.0.113.9"),  # an IPv4 proxy seen through a dual-stack socket
        ("2001:db8::5", "203.0.113.9", "2001:db8::/64", "203.0.113.9"),
    ],
)
def test_client_ip(peer_address, forwarded, proxies, expected, settings):
    named = parse_proxies(proxies)
    assert forwarded_client(peer_address, forwarded, named) == expected
    settings.FORWARDED_ALLOW_IPS = named
    request = APIRequestFactory().get("/", REMOTE_ADDR=peer_address, HTTP_X_FORWARDED_FOR=forwarded)
    assert client_ip(request) == expected
    assert client_ip_address(request) == str(ipaddress.ip_address(expected))
    scope = {"client": (peer_address, 5000), "headers": [(b"x-forwarded-for", forwarded.encode())]}
    assert scope_client_ip(scope) == expected


def test_reading_the_result_again_changes_nothing(settings):
    """uvicorn (with the same list) hands Django the client it found; client_ip then reads the same address."""
    settings.FORWARDED_ALLOW_IPS = parse_proxies(NAMED)
    first = forwarded_client(PROXY, "6.6.6.6, 203.0.113.9", settings.FORWARDED_ALLOW_IPS)
    assert forwarded_client(first, "6.6.6.6, 203.0.113.9", settings.FORWARDED_ALLOW_IPS) == first


def test_no_address_is_none_for_the_lockout(settings):
    settings.FORWARDED_ALLOW_IPS = ()
    assert client_ip_address(APIRequestFactory().get("/", REMOTE_ADDR="")) is None


@pytest.mark.parametrize("raw", ["*", "10.0.0.0/8, *", "proxy.lab.example", "10.0.0.300"])
def test_forwarded_allow_ips_that_cannot_be_read_are_refused(raw):
    with pytest.raises(ValueError):
        parse_proxies(raw)


def _settings(env: dict[str, str]) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("FORWARDED_ALLOW_IPS", "NUM_PROXIES")}
    code = "import portal.settings as s; print(s.FORWARDED_ALLOW_IPS, s.REST_FRAMEWORK['NUM_PROXIES'])"
    return subprocess.run(  # noqa: S603
        [sys.executable, "-c", code], cwd=ROOT, env={**base, "DEBUG": "true", **env}, capture_output=True, text=True
    )


@pytest.mark.parametrize(
    "env,sentence",
    [
        ({"FORWARDED_ALLOW_IPS": "*"}, "FORWARDED_ALLOW_IPS: '*' would believe X-Forwarded-For from any client"),
        ({"FORWARDED_ALLOW_IPS": "nginx"}, "FORWARDED_ALLOW_IPS: 'nginx' is neither an IP address nor a network"),
        ({"NUM_PROXIES": "1"}, "NUM_PROXIES is gone: name the proxies in front of the portal in FORWARDED_ALLOW_IPS"),
    ],
)
def test_settings_refuse_a_proxy_setting_that_would_believe_clients(env, sentence):
    result = _settings(env)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and sentence in result.stderr


def test_settings_read_the_named_proxies_and_believe_nobody_by_default():
    named = _settings({"FORWARDED_ALLOW_IPS": "10.0.0.2, 10.1.0.0/16", "NUM_PROXIES": "0"})
    assert named.returncode == 0, named.stderr
    assert named.stdout.split("\n")[0] == f"{parse_proxies('10.0.0.2/32,10.1.0.0/16')} 0"
    default = _settings({})
    assert default.returncode == 0, default.stderr
    assert default.stdout.strip() == "() 0"
