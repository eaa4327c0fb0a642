"""Each quota limit in people's words: a label for forms and tables, and what it means (the help pages, the console).

The names are Quota.LIMIT_FIELDS; a limit missing here falls back to its field name, so a new limit shows up anyway.
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

LIMITS: dict[str, tuple[str, str]] = {
    "max_notebooks": (_("Notebooks at once"), _("How many notebooks you may have running at the same time.")),
    "notebook_gpu_share": (
        _("Largest GPU share per notebook"),
        _("The biggest slice of one GPU a notebook may take: 0.25 is a quarter of a 4090, 1 the whole card."),
    ),
    "gpu_hours_week": (
        _("GPU-hours per week"),
        _(
            "GPU time you may use each week, notebooks and jobs together, counted from Monday 00:00 in the lab's"
            " time zone. A quarter GPU held for 4 hours is 1 GPU-hour."
        ),
    ),
    "max_jobs": (_("Training jobs at once"), _("How many of your training jobs may run at the same time.")),
    "max_gpus_per_job": (_("GPUs per job"), _("The most GPUs one training job may ask for.")),
    "reservation_max_nodes": (_("Nodes per reservation"), _("The most nodes one reservation may hold.")),
    "reservation_max_hours": (_("Hours per reservation"), _("The longest window one reservation may last.")),
    "reservation_node_hours_week": (
        _("Reserved node-hours per week"),
        _("Node-hours you may have booked per week (by the week a window starts in)."),
    ),
    "reservation_horizon_days": (_("Days ahead you may book"), _("How far ahead a reservation may start.")),
    "reservation_notice_min": (
        _("Minutes of notice"),
        _("How long before it starts a reservation must be made."),
    ),
    "reservation_approval_nodes": (
        _("Nodes booked without approval"),
        _("Reservations of more nodes than this wait for an admin's approval."),
    ),
}


def limit_label(name: str) -> str:
    return str(LIMITS[name][0]) if name in LIMITS else name


def limit_meaning(name: str) -> str:
    return str(LIMITS[name][1]) if name in LIMITS else ""


STUDENT_LIMITS = ("max_notebooks", "notebook_gpu_share", "gpu_hours_week", "max_jobs", "max_gpus_per_job")


def role_limits(role: str) -> list[dict]:
    """The limits a role has by the lab's policy (the role's quota, else the built-in default), in words, for the
    help pages: name, label, meaning, value. A person's own or their course's limits may be more generous."""
    from accounts.models import Quota
    from accounts.quotas import ROLE_DEFAULTS

    policy = Quota.objects.filter(role=role).first()
    names = STUDENT_LIMITS if role == "student" else Quota.LIMIT_FIELDS
    rows = []
    for name in names:
        value = getattr(policy, name, None) if policy else None
        rows.append(
            {
                "name": name,
                "label": limit_label(name),
                "meaning": limit_meaning(name),
                "value": ROLE_DEFAULTS[role][name] if value is None else value,
            }
        )
    return rows
