"""Help: one page per role (what each limit means with the lab's numbers, how to book, how to run a first job, whom
to ask). Open to everyone, signed in or not: someone who cannot sign in needs to know whom to ask."""

from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from accounts.limits import role_limits
from accounts.models import Role
from accounts.quotas import effective_quota
from accounts.selectors import lab_admins


@require_safe
def help_page(request: HttpRequest, role: str | None = None) -> HttpResponse:
    user = request.user
    mine = user.is_authenticated and (role is None or role == _role_of(user))
    role = role or (_role_of(user) if user.is_authenticated else Role.STUDENT)
    if role not in Role.values:
        raise Http404
    limits = role_limits(role)
    if mine:
        # The person's own numbers: their courses' and their own limits count too.
        quota = effective_quota(user)
        for row in limits:
            row["value"] = getattr(quota, row["name"])
    context = {
        "role": role,
        "roles": Role.choices,
        "mine": mine,
        "limits": limits,
        "contact": settings.LAB_CONTACT,
        "admins": [] if settings.LAB_CONTACT else list(lab_admins().order_by("username")[:5]),
        "notebook": {
            "idle_min": settings.NOTEBOOKS_IDLE_MIN,
            "idle_pct": settings.NOTEBOOKS_IDLE_GPU_PCT,
            "session_h": settings.NOTEBOOKS_DEFAULT_SESSION_H,
            "max_session_h": settings.NOTEBOOKS_MAX_SESSION_H,
            "extend_min": settings.NOTEBOOKS_EXTEND_MIN,
            "warn_pct": settings.NOTEBOOKS_QUOTA_WARN_PCT,
            "grace_min": settings.NOTEBOOKS_QUOTA_GRACE_MIN,
        },
        "jobs": {"max_runtime_h": settings.JOBS_MAX_RUNTIME_S // 3600, "images": settings.JOBS_IMAGE_ALLOW},
        "reservations": {
            "warn_min": settings.RESERVATION_WARN_LEAD_MIN,
            "no_show_min": settings.RESERVATION_NO_SHOW_MIN,
        },
    }
    return render(request, "help/page.html", context)


def _role_of(user) -> str:
    return Role.ADMIN if user.is_lab_admin else user.role
