"""How notebook messages write times and amounts: in the lab's time zone, as a person writes them."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from django.utils import formats, timezone

from accounts.locale import fmt_number


def at_local(moment: dt.datetime) -> str:
    """Mon 14:30 (seg 14:30), in the lab's time zone and the active language."""
    return formats.date_format(timezone.localtime(moment), "D H:i")


def share_text(value: Decimal) -> str:
    """0.250 -> 0.25, 1.000 -> 1."""
    return format(Decimal(value).normalize(), "f")


def hours_text(value: Decimal | float) -> str:
    """GPU-hours to one decimal, as the active language writes them: 4 -> 4.0 (4,0)."""
    return fmt_number(Decimal(value).quantize(Decimal("0.1")), 1)
