"""client_ip: the one reading of a caller's address, for requests and WebSocket scopes alike."""

import pytest
from rest_framework.test import APIRequestFactory

from portal.api.throttles import client_ip, forwarded_client, scope_client_ip


@pytest.mark.parametrize(
    "peer_address,forwarded,num_proxies,expected",
    [
        ("198.51.100.1", "", 0, "198.51.100.1"),
        ("198.51.100.1", "203.0.113.9", 0, "198.51.100.1"),  # no trusted proxy: the header is the client's word
        ("10.0.0.2", "203.0.113.9", 1, "203.0.113.9"),
        ("10.0.0.2", "6.6.6.6, 203.0.113.9", 1, "203.0.113.9"),  # what the client prepended does not count
        ("10.0.0.2", "6.6.6.6, 203.0.113.9, 10.0.0.3", 2, "203.0.113.9"),  # a CDN, then the load balancer
        ("10.0.0.2", "203.0.113.9", 3, "203.0.113.9"),  # fewer hops than proxies: the first one
        ("10.0.0.2", " , ", 1, "10.0.0.2"),
        ("10.0.0.2", "not-an-address", 1, "10.0.0.2"),
        ("10.0.0.2", "2001:db8::1", 1, "2001:db8::1"),
    ],
)
def test_client_ip(peer_address, forwarded, num_proxies, expected, settings):
    assert forwarded_client(peer_address, forwarded, num_proxies) == expected
    settings.NUM_PROXIES = num_proxies
    request = APIRequestFactory().get("/", REMOTE_ADDR=peer_address, HTTP_X_FORWARDED_FOR=forwarded)
    assert client_ip(request) == expected
    scope = {"client": (peer_address, 5000), "headers": [(b"x-forwarded-for", forwarded.encode())]}
    assert scope_client_ip(scope) == expected
