"""{% netpolicy_verdict as verdict %}: the NetworkPolicy self-check (portal/netcheck.py) for the admins' pages."""

from __future__ import annotations

from django import template

from portal import netcheck

register = template.Library()


@register.simple_tag
def netpolicy_verdict() -> netcheck.Verdict:
    return netcheck.verdict()
