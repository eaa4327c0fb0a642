"""Small formatting for the live GPU pages (static/js/gpus.js formats the same way), numbers as the page's language
writes them (20.7 / 20,7)."""

from django import template

from accounts.locale import fmt_number

register = template.Library()


@register.filter
def gib(mib) -> str:
    """MiB as GiB with one decimal: 21207 -> "20.7"."""
    if mib is None:
        return "—"
    return fmt_number(mib / 1024, 1)


FRACTIONS = ((0.125, "⅛"), (0.25, "¼"), (1 / 3, "⅓"), (0.5, "½"), (2 / 3, "⅔"), (0.75, "¾"))


@register.filter
def share_glyph(share) -> str:
    """A GPU's share as people write it: 0.25 -> "¼", 0.3 -> "30 %"."""
    for value, glyph in FRACTIONS:
        if abs(float(share) - value) < 0.01:
            return glyph
    return f"{round(float(share) * 100)} %"


@register.filter
def partly_used(holder) -> bool:
    """Whether a GPU's holders take only part of it (a ¼ notebook), so it is shared, not busy."""
    return bool(holder) and 0 < holder.get("share", 1) < 0.999


@register.filter
def hours(value) -> str:
    """GPU-hours with the decimals a small figure needs: 12.3, 0.25, 0.0092 (never "0.0" for work that was done)."""
    if value is None:
        return "—"
    value = float(value)
    if value == 0 or abs(value) >= 1:
        return fmt_number(value, 1)
    if abs(value) >= 0.1:
        return fmt_number(value, 2)
    if abs(value) < 0.0001:
        return "< " + fmt_number(0.0001, 4)
    return fmt_number(float(f"{value:.2g}"), None)
