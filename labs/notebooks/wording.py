"""How notebook messages write times and amounts: in the lab's time zone, as a person writes them."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from django.utils import timezone


def at_local(moment: dt.datetime) -> str:
    """Mon 14:30, in the lab's time zone."""
    return timezone.localtime(moment).strftime("%a %H:%M")


def share_text(value: Decimal) -> str:
    """0.250 -> 0.25, 1.000 -> 1."""
    return format(Decimal(value).normalize(), "f")


def hours_text(value: Decimal | float) -> str:
    """GPU-hours to one decimal: 4 -> 4.0."""
    return f"{Decimal(value).quantize(Decimal('0.1'))}"
