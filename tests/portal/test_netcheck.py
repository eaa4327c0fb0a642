"""The NetworkPolicy self-check (portal/netcheck.py): a probe that a policy should refuse, on real sockets.

"Not enforced" when the forbidden port answers (a real listener on 127.0.0.1), "enforced" when it is refused or
times out, "unknown" when the canary's allowed port does not answer either, "off" when not configured; reported in
/readyz (which stays 200) and on the admins' dashboards, cached for a minute.
"""

from __future__ import annotations

import socket

import pytest

from portal import netcheck
from tests.factories import PASSWORD, UserFactory


@pytest.fixture
def listener():
    """A real TCP listener on 127.0.0.1 (the canary answering); its (host, port)."""
    server = socket.create_server(("127.0.0.1", 0))
    yield server.getsockname()[:2]
    server.close()


@pytest.fixture
def closed_port():
    """A port of 127.0.0.1 that nothing listens on: a connection is refused."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    address = sock.getsockname()[:2]
    sock.close()
    return address


@pytest.fixture(autouse=True)
def fresh_cache():
    netcheck.forget()
    yield
    netcheck.forget()


def times_out(host: str, port: int, timeout_s: float) -> None:
    raise TimeoutError("timed out")  # what a policy that drops packets looks like (Calico, Cilium)


def test_a_probe_that_connects_means_policies_are_not_enforced(listener):
    verdict = netcheck.check(probe=listener)
    assert verdict.state == "not enforced" and verdict.warn
    assert f"{listener[0]}:{listener[1]}" in verdict.detail and "Canal" in verdict.detail


def test_a_refused_probe_means_enforced(closed_port):
    verdict = netcheck.check(probe=closed_port)
    assert verdict.state == "enforced" and not verdict.warn
    assert "refused" in verdict.detail


def test_a_probe_that_times_out_means_enforced_when_the_control_port_answers(listener):
    verdict = netcheck.check(probe=("canary.gpu-lab.svc", 8080), control=listener, connect=lambda h, p, t: (
        times_out(h, p, t) if p == 8080 else netcheck.tcp_connect(h, p, t)
    ))  # fmt: skip
    assert verdict.state == "enforced" and "timed out" in verdict.detail


def test_no_answer_on_the_control_port_either_cannot_tell(closed_port):
    verdict = netcheck.check(probe=closed_port, control=closed_port)
    assert verdict.state == "unknown" and verdict.warn
    assert "is the canary running?" in verdict.detail


def test_a_name_that_does_not_resolve_cannot_tell():
    verdict = netcheck.check(probe=("no-such-host.invalid", 80))
    assert verdict.state == "unknown" and "could not be probed" in verdict.detail


def test_without_a_canary_the_check_is_off():
    assert netcheck.check(probe=None).state == "off"


@pytest.mark.parametrize("value", ["canary", "canary:", ":80", "canary:http", "canary:0", "canary:70000"])
def test_a_bad_canary_address_is_refused_with_its_name(value):
    with pytest.raises(ValueError, match="NETPOLICY_CANARY must be host:port"):
        netcheck.parse_address(value, name="NETPOLICY_CANARY")


def test_the_verdict_is_cached_for_a_minute(settings, listener):
    settings.NETPOLICY_CANARY = f"{listener[0]}:{listener[1]}"
    settings.NETPOLICY_CANARY_CONTROL = ""
    calls, clock = [], [1000.0]

    def counting(host, port, timeout_s):
        calls.append(port)
        netcheck.tcp_connect(host, port, timeout_s)

    first = netcheck.verdict(connect=counting, now=lambda: clock[0])
    clock[0] += 59
    assert netcheck.verdict(connect=counting, now=lambda: clock[0]) == first and len(calls) == 1
    clock[0] += 2
    netcheck.verdict(connect=counting, now=lambda: clock[0])
    assert len(calls) == 2


@pytest.mark.django_db
def test_readyz_reports_unenforced_policies_but_stays_ready(client, settings, listener):
    settings.NETPOLICY_CANARY = f"{listener[0]}:{listener[1]}"
    response = client.get("/readyz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ready" and body["checks"]["netpolicy"] == "not enforced"
    assert "NetworkPolicies are not enforced" in body["details"]["netpolicy"]


@pytest.mark.django_db
def test_readyz_reports_enforced_policies(client, settings, closed_port):
    settings.NETPOLICY_CANARY = f"{closed_port[0]}:{closed_port[1]}"
    body = client.get("/readyz").json()
    assert body["checks"]["netpolicy"] == "enforced"


@pytest.mark.django_db
def test_readyz_says_the_check_is_off_without_a_canary(client, settings):
    settings.NETPOLICY_CANARY = ""
    assert client.get("/readyz").json()["checks"]["netpolicy"] == "off"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "role,path,shown",
    [
        ("admin", "/", True),
        ("admin", "/admin/", True),
        ("teacher", "/", False),
        ("student", "/", False),
    ],
)
def test_admins_are_warned_on_their_dashboard_and_the_admin_console(client, settings, listener, role, path, shown):
    settings.NETPOLICY_CANARY = f"{listener[0]}:{listener[1]}"
    UserFactory(username="pat", role=role)
    assert client.login(username="pat", password=PASSWORD)
    response = client.get(path)
    assert response.status_code == 200
    page = response.content.decode()
    assert ('data-state="not enforced"' in page) is shown
    assert ("Network isolation is off." in page) is shown


@pytest.mark.django_db
def test_no_warning_where_policies_hold(client, settings, closed_port):
    settings.NETPOLICY_CANARY = f"{closed_port[0]}:{closed_port[1]}"
    UserFactory(username="pat", role="admin")
    assert client.login(username="pat", password=PASSWORD)
    for path in ("/", "/admin/"):
        page = client.get(path).content.decode()
        assert 'data-testid="netpolicy"' not in page
