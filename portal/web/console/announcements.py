"""The console's announcements and maintenance page: what the banner says now and what is coming; admins post an
announcement (text, severity, end) or schedule maintenance (nodes or all, window, reason). Thin: parse, call one
service, render."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from accounts.errors import InvalidInput
from accounts.permissions import require_admin
from labs.maintenance.selectors import maintenances_listed
from labs.maintenance.services import announcement_create, maintenance_create
from labs.models import Announcement, Severity
from portal.web.console.nodes import CONSOLE

MOMENT_FORMATS = ["%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"]


class AnnouncementForm(forms.Form):
    text = forms.CharField(max_length=300, label=gettext_lazy("Text"))
    severity = forms.ChoiceField(choices=Severity.choices, label=gettext_lazy("Severity"))
    ends_at = forms.DateTimeField(input_formats=MOMENT_FORMATS, label=gettext_lazy("Shown until"))


class MaintenanceForm(forms.Form):
    nodes = forms.CharField(max_length=2000, required=False, label=gettext_lazy("Nodes (names, comma-separated)"))
    all_nodes = forms.BooleanField(required=False, label=gettext_lazy("Every node"))
    starts_at = forms.DateTimeField(input_formats=MOMENT_FORMATS, label=gettext_lazy("From"))
    ends_at = forms.DateTimeField(input_formats=MOMENT_FORMATS, label=gettext_lazy("Until"))
    reason = forms.CharField(max_length=300, label=gettext_lazy("Reason"))


def _page(request: HttpRequest, *, status: int = 200, **forms_given) -> HttpResponse:
    context = {
        "announcements": Announcement.objects.filter(ends_at__gt=timezone.now()).order_by("starts_at", "id"),
        "maintenances": maintenances_listed(),
        "announcement_form": forms_given.get("announcement_form") or AnnouncementForm(),
        "maintenance_form": forms_given.get("maintenance_form") or MaintenanceForm(),
    }
    return render(request, "console/announcements.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def announcements_page(request: HttpRequest) -> HttpResponse:
    require_admin(request.user, CONSOLE)
    if request.method == "GET":
        return _page(request)
    if request.POST.get("action") == "maintenance":
        form = MaintenanceForm(request.POST)
        if not form.is_valid():
            return _page(request, status=400, maintenance_form=form)
        data = form.cleaned_data
        names = [name.strip() for name in data["nodes"].split(",") if name.strip()]
        try:
            maintenance_create(
                by=request.user,
                starts_at=data["starts_at"],
                ends_at=data["ends_at"],
                reason=data["reason"],
                nodes=names,
                all_nodes=data["all_nodes"],
            )
        except InvalidInput as exc:
            messages.error(request, exc.message)
            return _page(request, status=400, maintenance_form=form)
        messages.success(request, _("The maintenance was scheduled."))
        return redirect("console-announcements")
    form = AnnouncementForm(request.POST)
    if not form.is_valid():
        return _page(request, status=400, announcement_form=form)
    try:
        announcement_create(
            by=request.user,
            text=form.cleaned_data["text"],
            severity=form.cleaned_data["severity"],
            ends_at=form.cleaned_data["ends_at"],
        )
    except InvalidInput as exc:
        messages.error(request, exc.message)
        return _page(request, status=400, announcement_form=form)
    messages.success(request, _("The announcement is shown on every page."))
    return redirect("console-announcements")
