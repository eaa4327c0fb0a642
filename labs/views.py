"""The lab's pages: the node list. Thin."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from labs.models import NodeStatus
from labs.selectors import lab_summary, nodes_visible_to


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
