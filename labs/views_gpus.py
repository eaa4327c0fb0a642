"""Pages of the live GPU status: the lab's grid, and one node with its last hour."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone
from django.views.decorators.http import require_safe

from labs.models import Node
from labs.telemetry.charts import gpu_charts
from labs.telemetry.selectors import gpus_visible_to, node_last_hour, open_alerts
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
    return render(request, "labs/gpus.html", context)


@login_required
@require_safe
def node_detail(request: HttpRequest, name: str) -> HttpResponse:
    node = get_object_or_404(Node.objects.prefetch_related("gpus"), name=name)
    viewer = viewer_for(request.user)
    live = {gpu["index"]: gpu for gpu in gpus_visible_to(request.user, node=node.name, viewer=viewer)}
    history = node_last_hour(node)
    now = timezone.now()
    gpus = [
        {
            "gpu": gpu,
            "live": live.get(gpu.index),
            "charts": gpu_charts(history.get(gpu.pk, []), memory_mb=gpu.memory_mb, end=now),
        }
        for gpu in node.gpus.all()
    ]
    alerts = list(open_alerts().filter(gpu__node=node)) if viewer.is_admin else []
    context = {
        "node": node,
        "gpus": gpus,
        "alerts": alerts,
        "available": sum(1 for gpu in live.values() if gpu["available"]),
        "stale_after_s": settings.TELEMETRY_STALE_AFTER_S,
    }
    return render(request, "labs/node_detail.html", context)
