"""A person's language: the one they chose on the account page, else the lab's (LANGUAGE_CODE). Pages follow the
request (portal.web.language); e-mails and notices, written where no request of theirs is, speak through
`speaking(person)`."""

from __future__ import annotations

import math

from django.conf import settings
from django.utils import translation
from django.utils.functional import Promise


def language_of(user) -> str:
    """The language the portal writes to this person in: their choice, if the portal still speaks it; else the lab's."""
    return spoken(getattr(user, "language", "") or "")


def spoken(code: str | None) -> str:
    """A stored language choice, if the portal still speaks it; else the lab's (LANGUAGE_CODE)."""
    return code if code and code in dict(settings.LANGUAGES) else settings.LANGUAGE_CODE


def speaking(user):
    """`with speaking(person):` what is written inside is in their language (an e-mail, a notice)."""
    return translation.override(language_of(user))


def fmt_number(value, places: int = 1) -> str:
    """A number as the active language writes it, grouped: 1,234.5 (en) / 1.234,5 (pt-BR)."""
    from django.utils import formats

    if places is not None and not isinstance(value, int):
        value = round(value, places)  # Django's number_format cuts the decimals off; a 0.55 minute is 0.6, not 0.5
    return formats.number_format(value, decimal_pos=places, use_l10n=True, force_grouping=True)


def fmt_quantity(value, places: int | None = None):
    """A table cell's value: a number as the active language writes it (grouped, its decimals; a float to at most
    two), anything else as it is."""
    from decimal import Decimal

    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return value
    if places is None and isinstance(value, float):
        # Two decimals; a small figure keeps two significant digits (0.0092 GPU-hours, not a flat 0.01 or 0).
        small = value != 0 and abs(value) < 0.1
        value = round(value, 1 - math.floor(math.log10(abs(value)))) if small else round(value, 2)
        value = int(value) if value.is_integer() else value
    return fmt_number(value, places)


def bcp47(code: str) -> str:
    """Django's language code as a BCP 47 tag, as OpenID Connect's `locale` claim and browsers write it: "pt-BR"."""
    language, _, region = code.partition("-")
    return f"{language}-{region.upper()}" if region else language


def said_to(user, text, **values) -> str:
    """`text` (a lazy translation, with %(name)s values) in the person's language: what is stored for them to read
    (a notebook's reason, a notice) is written in their language, wherever the code that writes it runs."""
    with speaking(user):
        values = {key: str(value) if isinstance(value, Promise) else value for key, value in values.items()}
        return str(text % values) if values else str(text)
