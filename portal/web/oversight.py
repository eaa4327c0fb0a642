"""Pages of oversight: the audit trail (admins in the operations console, teachers for their courses) and requests
for more (ask; decide with a confirmation). Thin: parse, one call, render."""

from __future__ import annotations

import datetime as dt
from itertools import islice

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods, require_safe

from accounts.audit_selectors import CSV_HEADER, audit_csv_rows, audit_entries, audit_filter_from
from accounts.dates import LabDateFormField
from accounts.errors import NotFound, PortalError
from accounts.models import Course, RequestKind
from accounts.more_requests import more_request_create, more_request_decide
from accounts.more_requests_selectors import may_decide, more_requests_to_decide, more_requests_visible_to
from accounts.permissions import require_admin
from labs.usage import csvstream
from portal.web.console.nodes import CONSOLE

AUDIT_PAGE = 200


def _csv_pages(rows, size: int = 500):
    while page := list(islice(rows, size)):
        yield page


def _audit_page(request: HttpRequest, *, template: str) -> HttpResponse:
    try:
        flt = audit_filter_from(request.GET)
    except PortalError as exc:
        messages.error(request, exc.message)
        flt = audit_filter_from({})
    rows = audit_entries(request.user, flt)
    if request.GET.get("format") == "csv":
        return csvstream.csv_response(
            request, filename="audit.csv", header=CSV_HEADER, pages=_csv_pages(audit_csv_rows(rows))
        )
    entries = list(rows[: AUDIT_PAGE + 1])
    query = request.GET.copy()
    query["format"] = "csv"
    context = {
        "entries": entries[:AUDIT_PAGE],
        "more": len(entries) > AUDIT_PAGE,
        "filters": {name: request.GET.get(name, "")[:200] for name in ("actor", "target", "action", "from", "to")},
        "csv_query": query.urlencode(),
    }
    return render(request, template, context)


@login_required
@require_safe
def audit_console(request: HttpRequest) -> HttpResponse:
    """The whole trail, for admins, in the operations console."""
    require_admin(request.user, CONSOLE)
    return _audit_page(request, template="oversight/audit_console.html")


@login_required
@require_safe
def audit_courses(request: HttpRequest) -> HttpResponse:
    """The entries of the courses a teacher teaches (admins: every entry); 403 for anyone else."""
    return _audit_page(request, template="oversight/audit_courses.html")


class MoreRequestForm(forms.Form):
    kind = forms.ChoiceField(label=gettext_lazy("What you need"), choices=RequestKind.choices)
    amount = forms.DecimalField(
        label=gettext_lazy("GPU-hours"),
        min_value=0.1,
        decimal_places=1,
        max_digits=8,
        help_text=gettext_lazy("A quota raise: the weekly GPU-hours you need. Extra GPU-hours: how many more."),
    )
    until = LabDateFormField(label=gettext_lazy("Until (the last day)"), widget=forms.DateInput(attrs={"type": "date"}))
    course = forms.ChoiceField(label=gettext_lazy("For a course's work"), required=False)
    reason = forms.CharField(label=gettext_lazy("Why"), max_length=500, widget=forms.Textarea(attrs={"rows": 3}))

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["amount"].max_value = settings.REQUESTS_MAX_GPU_HOURS
        codes = sorted(
            set(Course.objects.filter(enrollments__user=user).values_list("code", flat=True))
            | set(user.courses_taught.values_list("code", flat=True))
        )
        self.fields["course"].choices = [("", _("None (my own work)"))] + [(code, code) for code in codes]


def _apply_errors(form: forms.Form, exc: PortalError) -> None:
    form.add_error(None, exc.message)
    for field, why in exc.extra.get("fields", {}).items():
        if field in form.fields:
            form.add_error(field, why)


@login_required
@require_safe
def requests_list(request: HttpRequest) -> HttpResponse:
    """Your requests, and (teachers and admins) those waiting for your decision."""
    mine = more_requests_visible_to(request.user).filter(user=request.user)[:100]
    waiting = more_requests_to_decide(request.user)[:200]
    return render(request, "oversight/requests.html", {"mine": mine, "waiting": waiting})


@login_required
@require_http_methods(["GET", "POST"])
def request_new(request: HttpRequest) -> HttpResponse:
    """Ask for more; the quota refusals link here with ?kind=&amount= filled in."""
    initial = {"kind": RequestKind.GPU_HOURS, "until": timezone.localdate() + dt.timedelta(days=7)}
    initial.update(
        {key: value[:40] for key, value in request.GET.items() if key in ("kind", "amount", "until", "course")}
    )
    form = MoreRequestForm(request.POST or None, user=request.user, initial=initial)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            data = form.cleaned_data
            course = Course.objects.filter(code=data["course"]).first() if data["course"] else None
            try:
                more_request_create(
                    user=request.user,
                    kind=data["kind"],
                    amount=data["amount"],
                    until=data["until"],
                    reason=data["reason"],
                    course=course,
                )
            except PortalError as exc:
                _apply_errors(form, exc)
            else:
                messages.success(request, _("Your request was sent; you will be told when it is decided."))
                return redirect("requests")
    return render(request, "oversight/request_new.html", {"form": form}, status=status)


class DecideForm(forms.Form):
    amount = forms.DecimalField(label=gettext_lazy("GPU-hours granted"), min_value=0.1, decimal_places=1, max_digits=8)
    until = LabDateFormField(label=gettext_lazy("Until (the last day)"), widget=forms.DateInput(attrs={"type": "date"}))
    reason = forms.CharField(
        label=gettext_lazy("A sentence for the person (required to refuse)"),
        max_length=500,
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
    )


@login_required
@require_http_methods(["GET", "POST"])
def request_decide(request: HttpRequest, request_id: int) -> HttpResponse:
    """The confirmation page of a decision: approve (perhaps changing the amount or the end) or refuse."""
    row = more_requests_visible_to(request.user).filter(pk=request_id).first()
    if row is None:
        raise NotFound(_("No such request."))
    initial = {"amount": row.amount, "until": timezone.localtime(row.until).date()}
    form = DecideForm(request.POST or None, initial=initial)
    status = 200
    if request.method == "POST":
        status = 400
        decision = request.POST.get("decision", "")
        if decision == "refuse":
            form.fields["amount"].required = form.fields["until"].required = False
        if form.is_valid():
            data = form.cleaned_data
            try:
                more_request_decide(
                    by=request.user,
                    request_id=row.pk,
                    decision=decision,
                    amount=data.get("amount"),
                    until=data.get("until"),
                    reason=data.get("reason", ""),
                )
            except PortalError as exc:
                if exc.status in (403, 404, 409):
                    raise
                _apply_errors(form, exc)
            else:
                done = _("Approved.") if decision == "approve" else _("Refused.")
                messages.success(request, done)
                return redirect("requests")
    context = {"row": row, "form": form, "may_decide": may_decide(request.user, row)}
    return render(request, "oversight/request_decide.html", context, status=status)
