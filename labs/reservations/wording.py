"""How reservation messages write times and amounts: in the lab's time zone, as a person writes them."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from django.utils import timezone


def when(moment: dt.datetime) -> str:
    return timezone.localtime(moment).strftime("%a %d %b %Y %H:%M")


def amount(value: Decimal | float | int) -> str:
    """1, 2.5, 160: a limit as a person writes it."""
    return f"{Decimal(str(value)).quantize(Decimal('0.1')).normalize():f}"


def iso(moment: dt.datetime) -> str:
    return timezone.localtime(moment).isoformat()
