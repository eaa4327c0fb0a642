"""One rule for time on every page, e-mail, CSV file and table the server writes: a moment is shown in the lab's
zone (LAB_TIME_ZONE, settings.TIME_ZONE), in one format per kind, in the person's language (the active one: the
request's, or the recipient's for an e-mail, accounts.locale.speaking).

    kind        en                   pt-BR                 format
    date        2026-11-27           27/11/2026            DATE_FORMAT
    time        14:05                14:05                 TIME_FORMAT
    datetime    2026-11-27 14:05     27/11/2026 14:05      DATETIME_FORMAT
    duration    2 h 05 min           2 h 05 min            (below)

The formats live in portal/formats/<language>/formats.py; pages use them through the template filters of
accounts/templatetags/timefmt.py (`{{ value|when }}`, `|day`, `|clock`, `|duration`)."""

from __future__ import annotations

import datetime as dt
import zoneinfo

from django.conf import settings
from django.utils import formats, timezone
from django.utils.translation import gettext as _


def lab_zone() -> zoneinfo.ZoneInfo:
    return zoneinfo.ZoneInfo(settings.TIME_ZONE)


def in_lab_zone(value: dt.datetime) -> dt.datetime:
    """The moment on the lab's clock (a naive time is taken as the lab's already)."""
    if timezone.is_naive(value):
        return value.replace(tzinfo=lab_zone())
    return value.astimezone(lab_zone())


def _kind(value, fmt: str) -> str:
    if value is None or value == "":
        return ""
    if isinstance(value, dt.datetime):
        value = in_lab_zone(value)
    return formats.date_format(value, fmt)


def fmt_date(value: dt.date | dt.datetime | None) -> str:
    """The day, in the lab's zone: "2026-11-27" / "27/11/2026"."""
    if isinstance(value, dt.datetime):
        value = in_lab_zone(value).date()
    return _kind(value, "DATE_FORMAT")


def fmt_time(value: dt.datetime | dt.time | None) -> str:
    """The clock time, in the lab's zone: "14:05"."""
    return _kind(value, "TIME_FORMAT")


def fmt_datetime(value: dt.datetime | None) -> str:
    """Day and time, in the lab's zone: "2026-11-27 14:05" / "27/11/2026 14:05"."""
    return _kind(value, "DATETIME_FORMAT")


def fmt_duration(value: dt.timedelta | float | int | None) -> str:
    """A length of time (a timedelta or seconds): "45 s", "12 min", "2 h 05 min", "3 d 4 h"."""
    if value is None or value == "":
        return ""
    seconds = int(round(value.total_seconds() if isinstance(value, dt.timedelta) else float(value)))
    sign, seconds = ("−", -seconds) if seconds < 0 else ("", seconds)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        text = _("%(d)d d %(h)d h") % {"d": days, "h": hours}
    elif hours:
        text = _("%(h)d h %(m)02d min") % {"h": hours, "m": minutes}
    elif minutes:
        text = _("%(m)d min") % {"m": minutes}
    else:
        text = _("%(s)d s") % {"s": secs}
    return sign + text
