"""What a notebook profile may ask for, whoever writes it: an image from the lab's allow-list (the one jobs use)
and no more CPU, memory, session length or GPU memory than the lab's ceilings.

NotebookProfile.clean() asks this, so the Profiles page (profile_save), the admin console's form and anything
else that validates a profile refuse the same things; notebook_request asks it again at each start, so a profile
saved before a ceiling was lowered or an image rule was removed does not start.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from labs.images import image_problem
from labs.inventory import RTX_4090_MEMORY_MB


def _decimal(value) -> Decimal | None:
    try:
        return Decimal(str(value))
    except (InvalidOperation, TypeError, ValueError):
        return None  # not a number: the field's own validation says so


def _number(value: Decimal) -> str:
    return f"{value.normalize():f}"


def profile_ceilings() -> dict[str, tuple[Decimal, str]]:
    """Each capped field, its ceiling, and what the ceiling counts."""
    return {
        "cpu": (Decimal(settings.NOTEBOOKS_MAX_CPU), gettext_lazy("CPU cores")),
        "memory_gb": (Decimal(settings.NOTEBOOKS_MAX_MEMORY_GB), gettext_lazy("GB of memory")),
        "max_session_h": (Decimal(settings.NOTEBOOKS_MAX_SESSION_H), gettext_lazy("hours per session")),
    }


def profile_problems(profile) -> dict[str, str]:
    """The fields of `profile` the lab does not allow, each with a sentence that names the limit; {} if none."""
    problems: dict[str, str] = {}
    why = image_problem((profile.image or "").strip())
    if why:
        problems["image"] = why
    for field, (ceiling, unit) in profile_ceilings().items():
        value = _decimal(getattr(profile, field))
        if value is not None and value > ceiling:
            problems[field] = _(
                "At most %(most)s %(unit)s, the lab's ceiling for a notebook; this asks for %(value)s."
            ) % {"most": _number(ceiling), "unit": unit, "value": _number(value)}
    # The GPU share: a memory cap above the share's part of the GPU would take memory from the others on it.
    share, cap = _decimal(profile.gpu_share), _decimal(profile.gpu_mem_mb)
    if share is not None and cap is not None and Decimal(0) < share <= 1:
        most = int(share * RTX_4090_MEMORY_MB)
        if cap > most:
            problems["gpu_mem_mb"] = _(
                "At most %(most)s MB, the profile's share (%(share)s) of the GPU's %(total)s MB;"
                " this asks for %(value)s."
            ) % {"most": most, "share": _number(share), "total": RTX_4090_MEMORY_MB, "value": _number(cap)}
    return problems
