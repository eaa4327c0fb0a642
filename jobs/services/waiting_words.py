"""Why a job waits, in its owner's words: the policy's sentences (jobs.policy.reasons, which imports no Django)
through Django's gettext, in the owner's language, with times in the lab's zone as that language writes them."""

from __future__ import annotations

import contextlib
import datetime as dt

from django.utils import formats, timezone, translation
from django.utils.translation import gettext, ngettext

from accounts.locale import spoken
from jobs.policy import Waiting


def formatter(now: dt.datetime):
    """Times in the lab's zone, in the active language: "14:20" today, "Tue 14:20" ("ter 14:20") within a week,
    else the language's date and time ("2026-03-04 14:20", "04/03/2026 14:20")."""
    zone = timezone.get_current_timezone()
    today = now.astimezone(zone).date()

    def format_time(when: float) -> str:
        try:
            moment = dt.datetime.fromtimestamp(when, zone)
        except (OverflowError, OSError, ValueError):
            return gettext("unknown")
        days = (moment.date() - today).days
        if days == 0:
            return moment.strftime("%H:%M")
        if 0 < days < 7:
            return formats.date_format(moment, "D H:i")
        return formats.date_format(moment, "DATETIME_FORMAT")

    return format_time


def waiting_said(waiting: Waiting, now: dt.datetime, language: str | None = None) -> str:
    """The sentence in `language` (a person's stored choice; empty: the lab's), or the active language."""
    with translation.override(spoken(language)) if language is not None else contextlib.nullcontext():
        return waiting.sentence(formatter(now), gettext=gettext, ngettext=ngettext)
