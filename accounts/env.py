"""Typed readers for settings that come from the environment.

Each helper raises ImproperlyConfigured on a value it cannot read, so a typo in a
deployment fails at start-up instead of silently falling back to a default.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import re

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def envstr(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(name)
    return default if value is None else value


def envbool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (true/false, 1/0), got {value!r}")


def envint(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {number}")
    if maximum is not None and number > maximum:
        raise ImproperlyConfigured(f"{name} must be at most {maximum}, got {number}")
    return number


def envlist(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None:
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def envintlist(name: str, default: list[str], *, what: str = "whole numbers") -> list[int]:
    """A comma-separated list of integers (`what` they are names them in the error)."""
    try:
        return [int(item) for item in envlist(name, default)]
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a comma-separated list of {what}.") from None


def envmatch(name: str, default: str, pattern: str, why: str) -> str:
    """A string the regular expression `pattern` matches whole; otherwise the error is "<name> <why>"."""
    value = envstr(name, default)
    if not re.fullmatch(pattern, value, flags=re.DOTALL):
        raise ImproperlyConfigured(f"{name} {why}")
    return value


_RATE = re.compile(r"^\d+/[smhd]\w*$")


def envrate(name: str, default: str) -> str:
    """A DRF throttle rate such as 20/min (a number, '/', a period: s, min, hour, day), blanks around it dropped."""
    value = envstr(name, default).strip()
    if not _RATE.match(value):
        raise ImproperlyConfigured(f"{name} must be a rate such as 20/min (a number, '/', s|min|hour|day): {value!r}")
    return value


def envchoice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = os.environ.get(name, default).strip().lower()
    if value not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value


def envmonthdays(name: str, default: list[str]) -> tuple[tuple[int, int], ...]:
    """A comma-separated list of month-days (MM-DD) that exist in every year, as sorted (month, day) pairs."""
    raw = envlist(name, default)
    why = (
        f"{name} must be a comma-separated list of month-days (MM-DD, such as 02-01,08-01) that every year has "
        f"(not 02-29), got {os.environ.get(name, ','.join(default))!r}"
    )
    pairs = set()
    for text in raw:
        if not re.fullmatch(r"\d{2}-\d{2}", text):
            raise ImproperlyConfigured(why)
        month, day = int(text[:2]), int(text[3:])
        try:
            for year in (2023, 2024):  # a common year and a leap year
                dt.date(year, month, day)
        except ValueError:
            raise ImproperlyConfigured(why) from None
        pairs.add((month, day))
    if not pairs:
        raise ImproperlyConfigured(why)
    return tuple(sorted(pairs))


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(raw: str) -> tuple[Network, ...]:
    """Comma-separated addresses or networks (10.0.0.0/8). ValueError names what cannot be read; `*` (everyone) is
    refused: a list of trusted peers that trusts anyone trusts nobody's word."""
    networks = []
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        if item == "*":
            raise ValueError("'*' would believe X-Forwarded-For from any client; name the proxies' addresses")
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ValueError(f"{item!r} is neither an IP address nor a network such as 10.0.0.0/8") from None
    return tuple(networks)


def envnetworks(name: str) -> tuple[Network, ...]:
    """Addresses and networks (parse_networks); empty or unset: none."""
    try:
        return parse_networks(envstr(name, "") or "")
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}: {exc}") from None


def parse_hostport(value: str, *, name: str = "address") -> tuple[str, int] | None:
    """'host:port' -> (host, port); empty -> None; anything else raises ValueError naming the problem."""
    value = value.strip()
    if not value:
        return None
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{name} must be host:port (a port from 1 to 65535), got {value!r}")
    return host.strip("[]"), int(port)


def envhostport(name: str) -> str:
    """A host:port (parse_hostport), blanks around it dropped; empty or unset: ""."""
    value = (envstr(name, "") or "").strip()
    try:
        parse_hostport(value, name=name)
    except ValueError as exc:
        raise ImproperlyConfigured(str(exc)) from None
    return value
