"""The lab's pages: the node list and one node with its GPUs (live, and their last hour). Thin."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_safe

from labs.models import Node, NodeStatus
from labs.selectors import lab_summary, nodes_visible_to
from labs.telemetry.selectors import node_gpus


@login_required
@require_safe
def node_list(request: HttpRequest) -> HttpResponse:
    status = request.GET.get("status", "")
    nodes = nodes_visible_to(request.user)
    if status in NodeStatus.values:
        nodes = nodes.filter(status=status)
    else:
        status = ""
    return render(request, "labs/nodes.html", {"nodes": nodes, "lab": lab_summary(), "status": status})


@login_required
@require_safe
def node_detail(request: HttpRequest, name: str) -> HttpResponse:
    node = get_object_or_404(Node.objects.prefetch_related("gpus"), name=name)
    context = {"node": node, **node_gpus(request.user, node), "stale_after_s": settings.TELEMETRY_STALE_AFTER_S}
    return render(request, "labs/node_detail.html", context)
