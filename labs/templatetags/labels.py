"""The lab's words for a state the pages hold as its value (a dict row, a status worked out at a moment): the choice's
label, in the person's language (`{% load labels %}{{ status|reservation_status }}`)."""

from __future__ import annotations

from django import template

from labs.models import NodeStatus, ReservationStatus

register = template.Library()


def _label(choices, value):
    try:
        return choices(value).label
    except ValueError:
        return value


@register.filter
def reservation_status(value):
    return _label(ReservationStatus, value)


@register.filter
def node_status(value):
    return _label(NodeStatus, value)
