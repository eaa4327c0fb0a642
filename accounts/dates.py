"""Dates people may give the portal: the years the lab can mean, for the API, the forms and the query strings.

Python's dates stop at year 1 and year 9999, and the portal adds weeks, horizons and time zones to what it is
given: a date near either edge overflows somewhere later (an OverflowError, a 500). So every date and time that
comes in is read here and refused, naming the field, unless it lies between EARLIEST and LATEST.
"""

from __future__ import annotations

import datetime as dt

from django import forms
from django.utils import timezone
from django.utils.functional import lazy
from django.utils.translation import gettext, gettext_lazy
from rest_framework import serializers

from accounts.errors import InvalidInput

EARLIEST = dt.date(2000, 1, 1)
LATEST = dt.date(2999, 12, 31)
OUT_OF_RANGE = lazy(
    lambda: (
        gettext("Give a date between %(first)s and %(last)s.")
        % {"first": EARLIEST.isoformat(), "last": LATEST.isoformat()}
    ),
    str,
)()
NOT_A_DATE = gettext_lazy("Give a date as YYYY-MM-DD.")


def date_in_range(value: dt.date | dt.datetime) -> bool:
    """Whether a date (or a time, on its day in UTC) lies between EARLIEST and LATEST."""
    if isinstance(value, dt.datetime):
        if timezone.is_aware(value):
            try:
                value = value.astimezone(dt.UTC)
            except OverflowError:
                return False
        value = value.date()
    return EARLIEST <= value <= LATEST


def seconds_in_range(seconds: float) -> bool:
    """Whether seconds since the epoch name a moment between EARLIEST and LATEST."""
    low = dt.datetime.combine(EARLIEST, dt.time(), dt.UTC).timestamp()
    high = dt.datetime.combine(LATEST, dt.time.max, dt.UTC).timestamp()
    return low <= seconds <= high


def date_param(raw: str | None, *, field: str) -> dt.date | None:
    """A date from a query string (`?week=2030-01-07`): None when absent, else the date or a 400 naming the field."""
    if not raw:
        return None
    try:
        value = dt.date.fromisoformat(raw)
    except ValueError:
        raise InvalidInput(f"{field}: {NOT_A_DATE}", fields={field: NOT_A_DATE}) from None
    if not date_in_range(value):
        raise InvalidInput(f"{field}: {OUT_OF_RANGE}", fields={field: OUT_OF_RANGE})
    return value


# --- The API's fields -----------------------------------------------------------------------------------------------


class LabDateTimeField(serializers.DateTimeField):
    """DRF's DateTimeField, refusing times outside the years the lab can mean (and never overflowing)."""

    default_error_messages = {"range": OUT_OF_RANGE}

    def to_internal_value(self, value):
        try:
            parsed = super().to_internal_value(value)
        except OverflowError:
            self.fail("range")
        if not date_in_range(parsed):
            self.fail("range")
        return parsed


class LabDateField(serializers.DateField):
    default_error_messages = {"range": OUT_OF_RANGE}

    def to_internal_value(self, value):
        parsed = super().to_internal_value(value)
        if not date_in_range(parsed):
            self.fail("range")
        return parsed


# --- The pages' form fields -----------------------------------------------------------------------------------------


class LabDateFormField(forms.DateField):
    """Django's DateField, refusing dates outside the years the lab can mean, as a form error on the field."""

    def to_python(self, value):
        day = super().to_python(value)
        if day is not None and not date_in_range(day):
            raise forms.ValidationError(OUT_OF_RANGE, code="range")
        return day
