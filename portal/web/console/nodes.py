"""The console's nodes: the list with each node's state and reason, and cordon / drain / uncordon behind a page that
says what the action stops (whose notebooks and jobs) and asks why."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods, require_safe

from accounts.errors import PortalError
from accounts.permissions import require_admin
from labs.models import Node, NodeStatus
from labs.selectors import lab_summary, node_work_by_holder, nodes_visible_to
from labs.services import node_cordon, node_drain, node_uncordon

ACTIONS = ("cordon", "drain", "uncordon")
CONSOLE = "use the operations console"


class ReasonForm(forms.Form):
    reason = forms.CharField(
        label=gettext_lazy("Why"),
        max_length=200,
        help_text=gettext_lazy("Shown on the nodes page and the live grid, and told to the people whose work stops."),
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["reason"].widget.attrs.update({"autocomplete": "off", "size": 60})


@login_required
@require_safe
def node_list(request: HttpRequest) -> HttpResponse:
    require_admin(request.user, CONSOLE)
    nodes = nodes_visible_to(request.user)
    return render(request, "console/nodes.html", {"nodes": nodes, "lab": lab_summary()})


def _allowed(node: Node, action: str) -> bool:
    if action == "uncordon":
        return node.status == NodeStatus.CORDONED
    return node.status != NodeStatus.DOWN and not (action == "cordon" and node.status == NodeStatus.CORDONED)


@login_required
@require_http_methods(["GET", "POST"])
def node_action(request: HttpRequest, name: str, action: str) -> HttpResponse:
    require_admin(request.user, CONSOLE)
    if action not in ACTIONS:
        raise Http404
    node = get_object_or_404(Node, name=name)
    form = ReasonForm(request.POST or None)
    status = 200
    if request.method == "POST":
        status = 400
        if not _allowed(node, action):
            form.add_error(
                None,
                _("%(node)s is %(status)s: it cannot be %(action)sed now.")
                % {"node": node.name, "status": node.get_status_display().lower(), "action": action},
            )
            status = 409
        elif form.is_valid():
            reason = form.cleaned_data["reason"]
            try:
                _act(node, action, request, reason)
            except PortalError as exc:
                form.add_error(None, exc.message)
                status = exc.status
            else:
                return redirect("console-nodes")
    context = {
        "node": node,
        "action": action,
        "form": form,
        "work": node_work_by_holder(node),
        "allowed": _allowed(node, action),
    }
    return render(request, "console/node_action.html", context, status=status)


def _act(node: Node, action: str, request: HttpRequest, reason: str) -> None:
    if action == "cordon":
        node_cordon(node=node, by=request.user, reason=reason)
        messages.success(request, _("%(node)s is cordoned: %(reason)s") % {"node": node.name, "reason": reason})
    elif action == "drain":
        stopped = node_drain(node=node, by=request.user, reason=reason)
        messages.success(
            request,
            _("%(node)s is cordoned and drained (%(count)s running things stopped): %(reason)s")
            % {"node": node.name, "count": len(stopped), "reason": reason},
        )
    else:
        node_uncordon(node=node, by=request.user, reason=reason)
        messages.success(request, _("%(node)s takes new work again.") % {"node": node.name})
