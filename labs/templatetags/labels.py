"""The lab's words for a state the pages hold as its value (a dict row, a status worked out at a moment): the choice's
label, in the person's language (`{% load labels %}{{ status|reservation_status }}`)."""

from __future__ import annotations

from django import template
from django.utils.translation import gettext_lazy

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


# The usage tables' columns (labs/usage/reports.py): their CSV files keep these names as keys for scripts; the pages
# show people these words.
COLUMNS = {
    "holder": gettext_lazy("Holder"),
    "kind": gettext_lazy("Kind"),
    "user": gettext_lazy("Person"),
    "course": gettext_lazy("Course"),
    "node": gettext_lazy("Node"),
    "week": gettext_lazy("Week"),
    "day": gettext_lazy("Day"),
    "hour": gettext_lazy("Hour"),
    "minutes": gettext_lazy("Minutes"),
    "started": gettext_lazy("Started"),
    "ended": gettext_lazy("Ended"),
    "starts": gettext_lazy("Starts"),
    "ends": gettext_lazy("Ends"),
    "reservation": gettext_lazy("Reservation"),
    "gpu_hours": gettext_lazy("GPU-hours"),
    "idle_gpu_hours": gettext_lazy("Idle GPU-hours"),
    "reserved_gpu_hours": gettext_lazy("Reserved GPU-hours"),
    "used_gpu_hours": gettext_lazy("Used GPU-hours"),
    "mean_util_pct": gettext_lazy("Mean use (%)"),
    "p95_util_pct": gettext_lazy("95th percentile use (%)"),
    "utilisation_pct": gettext_lazy("Utilisation (%)"),
    "peak_mem_mb": gettext_lazy("Peak memory (MB)"),
    "energy_wh": gettext_lazy("Energy (Wh)"),
    "no_show": gettext_lazy("No-show"),
}
WAITS = {
    "mean": gettext_lazy("%(kind)s wait, mean (s)"),
    "p95": gettext_lazy("%(kind)s wait, 95th percentile (s)"),
}
KINDS = {"job": gettext_lazy("Job"), "notebook": gettext_lazy("Notebook")}


@register.filter
def column_label(name: str) -> str:
    """A usage table's column as the page names it: "gpu_hours" → "GPU-hours" / "Horas de GPU"."""
    if name in COLUMNS:
        return COLUMNS[name]
    kind, _, figure = name.rpartition("_wait_")
    if kind and figure in ("mean_s", "p95_s"):
        return WAITS[figure[:-2]] % {"kind": KINDS.get(kind, kind)}
    return name
