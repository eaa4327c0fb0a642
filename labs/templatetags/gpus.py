"""Small formatting for the live GPU pages (static/js/gpus.js formats the same way)."""

from django import template

register = template.Library()


@register.filter
def gib(mib) -> str:
    """MiB as GiB with one decimal: 21207 -> "20.7"."""
    if mib is None:
        return "—"
    return f"{mib / 1024:.1f}"
