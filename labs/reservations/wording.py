"""How reservation messages write times and amounts: in the lab's time zone, as a person writes them."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from django.utils import timezone

from accounts.timefmt import fmt_datetime


def when(moment: dt.datetime) -> str:
    """Day and time in the lab's zone and the reader's language: the one rule for time (accounts.timefmt)."""
    return fmt_datetime(moment)


def amount(value: Decimal | float | int) -> str:
    """1, 2.5, 160: a limit as a person writes it."""
    return f"{Decimal(str(value)).quantize(Decimal('0.1')).normalize():f}"


def iso(moment: dt.datetime) -> str:
    return timezone.localtime(moment).isoformat()
