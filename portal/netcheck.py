"""Are the cluster's NetworkPolicies enforced? Ask the network itself, from this pod.

Flannel, the lab's network plugin, accepts NetworkPolicy objects and enforces none of them: every policy in deploy/
would silently change nothing. No API says whether a plugin enforces policies (the objects are stored either way,
and a Canal or Calico agent may be installed but not running on this node, or this pod may predate it), so the
check tries what a policy forbids. deploy/components/netpolicy-check runs a canary Service with two ports:

- the **probe** port, which every policy refuses to this pod (the canary's namespace denies all by default and
  nothing admits the portal there): if a connection to it succeeds, policies are not enforced on this path;
- the **control** port, which the policies admit from web: if it answers while the probe does not, the canary is
  up and the probe was refused by policy. Without an answer from the control port, nothing can be told (the canary
  is down, or DNS), and the verdict says so rather than claim enforcement.

`check()` is the one call; `verdict()` caches it for a minute per process, so /readyz (probed every few seconds) and
the admin's dashboard cost at most one probe a minute. The result is reported, never a reason to fail readiness:
every web pod sees the same network, so failing them all would take the whole portal down over a cluster setting
that no restart fixes.
"""

from __future__ import annotations

import dataclasses
import socket
import threading
import time
from collections.abc import Callable

from django.utils.translation import gettext_lazy as _

from accounts.env import parse_hostport

ENFORCED = "enforced"
NOT_ENFORCED = "not enforced"
UNKNOWN = "unknown"
OFF = "off"
CACHE_S = 60.0

# connect(host, port, timeout_s): returns once a TCP connection is made (and closed), raises OSError otherwise
# (ConnectionRefusedError, TimeoutError, socket.gaierror, ...).
Connect = Callable[[str, int, float], None]


@dataclasses.dataclass(frozen=True)
class Verdict:
    state: str  # ENFORCED, NOT_ENFORCED, UNKNOWN or OFF
    detail: str

    @property
    def warn(self) -> bool:
        """Worth an admin's attention: policies are not enforced, or the check cannot tell."""
        return self.state in (NOT_ENFORCED, UNKNOWN)


parse_address = parse_hostport  # NETPOLICY_CANARY's reader (accounts.env) and this check read host:port alike


def tcp_connect(host: str, port: int, timeout_s: float) -> None:
    with socket.create_connection((host, port), timeout=timeout_s):
        pass


def _outcome(connect: Connect, address: tuple[str, int], timeout_s: float) -> str:
    try:
        connect(address[0], address[1], timeout_s)
    except ConnectionRefusedError:
        return "refused"
    except TimeoutError:
        return "timed out"
    except OSError as exc:
        return f"failed ({exc.__class__.__name__})"
    return "connected"


def check(
    *,
    probe: tuple[str, int] | None,
    control: tuple[str, int] | None = None,
    connect: Connect = tcp_connect,
    timeout_s: float = 1.0,
) -> Verdict:
    """Probe the canary now: OFF without a probe address; NOT_ENFORCED if the forbidden port answers; ENFORCED if
    it is refused or times out (and the control port, when given, answers); UNKNOWN otherwise."""
    if probe is None:
        return Verdict(OFF, str(_("The NetworkPolicy check is off (NETPOLICY_CANARY is not set).")))
    where = f"{probe[0]}:{probe[1]}"
    outcome = _outcome(connect, probe, timeout_s)
    if outcome == "connected":
        return Verdict(
            NOT_ENFORCED,
            str(
                _(
                    "NetworkPolicies are not enforced: this pod reached the canary %(where)s, which every policy "
                    "refuses it. Notebooks and jobs can reach the database, Redis and each other. Install a network "
                    "plugin that enforces policies (Canal on Flannel: deploy/README.md)."
                )
                % {"where": where}
            ),
        )
    if outcome not in ("refused", "timed out"):
        sentence = _("The canary %(where)s could not be probed: %(outcome)s.")
        return Verdict(UNKNOWN, str(sentence) % {"where": where, "outcome": outcome})
    if control is not None:
        control_outcome = _outcome(connect, control, timeout_s)
        if control_outcome != "connected":
            return Verdict(
                UNKNOWN,
                str(
                    _(
                        "Cannot tell whether NetworkPolicies are enforced: the canary's allowed port %(control)s "
                        "%(outcome)s too (is the canary running?)."
                    )
                    % {"control": f"{control[0]}:{control[1]}", "outcome": control_outcome}
                ),
            )
    sentence = _("NetworkPolicies are enforced: the canary %(where)s %(outcome)s.")
    return Verdict(ENFORCED, str(sentence) % {"where": where, "outcome": outcome})


_cache: tuple[float, tuple[str, str], Verdict] | None = None
_checking = False
_lock = threading.Lock()


def verdict(*, connect: Connect = tcp_connect, now: Callable[[], float] = time.monotonic) -> Verdict:
    """The check as the settings configure it, at most once a minute per process.

    Between checks, and while one is under way in another thread, the last verdict is answered at once: a probe
    that waits for its timeout never holds up a readiness probe.
    """
    global _cache, _checking
    from django.conf import settings

    key = (settings.NETPOLICY_CANARY, settings.NETPOLICY_CANARY_CONTROL)
    with _lock:
        if _cache is not None and _cache[1] == key and (_checking or now() - _cache[0] < CACHE_S):
            return _cache[2]
        if _checking:
            return Verdict(UNKNOWN, str(_("The NetworkPolicy check has not finished yet.")))
        _checking = True
    result = None
    try:
        result = check(
            probe=parse_address(settings.NETPOLICY_CANARY, name="NETPOLICY_CANARY"),
            control=parse_address(settings.NETPOLICY_CANARY_CONTROL, name="NETPOLICY_CANARY_CONTROL"),
            connect=connect,
            timeout_s=settings.NETPOLICY_CHECK_TIMEOUT_MS / 1000,
        )
    finally:
        with _lock:
            _checking = False
            if result is not None:
                _cache = (now(), key, result)
    return result


def forget() -> None:
    """Drop the cached verdict (tests; a settings change)."""
    global _cache
    with _lock:
        _cache = None
