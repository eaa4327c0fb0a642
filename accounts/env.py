"""Typed readers for settings that come from the environment.

Each helper raises ImproperlyConfigured on a value it cannot read, so a typo in a
deployment fails at start-up instead of silently falling back to a default.
"""

from __future__ import annotations

import datetime as dt
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
