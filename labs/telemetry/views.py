"""The live GPU grid page, /lab/gpus/ (one node's page is the core's: labs/views.py)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from labs.telemetry.selectors import gpus_visible_to, open_alerts
from labs.telemetry.visibility import viewer_for


@login_required
@require_safe
def gpu_board(request: HttpRequest) -> HttpResponse:
    viewer = viewer_for(request.user)
    gpus = gpus_visible_to(request.user, viewer=viewer)
    context = {
        "gpus": gpus,
        "available": sum(1 for gpu in gpus if gpu["available"]),
        "alerts": list(open_alerts()) if viewer.is_admin else [],
        "stale_after_s": settings.TELEMETRY_STALE_AFTER_S,
    }
    return render(request, "telemetry/gpus.html", context)
