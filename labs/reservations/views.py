"""The reservation pages: the week timeline, booking, one reservation, cancelling, approvals. Thin."""

from __future__ import annotations

import datetime as dt

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from accounts.dates import date_param
from accounts.errors import PortalError
from accounts.permissions import RESERVATIONS_STAFF_ONLY, require_admin, require_staff
from accounts.quotas import effective_quota
from labs.models import ReservationStatus
from labs.reservations.availability import ReservationConflict
from labs.reservations.forms import ReservationForm
from labs.reservations.selectors import reservation_for, reservation_week, reservations_of, reservations_pending
from labs.reservations.services import (
    SERIES_SCOPES,
    reservation_cancel,
    reservation_create,
    reservation_decide,
    reservation_series_cancel,
    series_sessions,
)


def _monday(raw: str | None) -> dt.date:
    """The Monday of `?week=` (any day of it; default this week); a 400 page for a date the lab cannot mean."""
    day = date_param(raw, field="week") or timezone.localdate()
    return day - dt.timedelta(days=day.weekday())


@login_required
@require_safe
def reservation_timeline(request: HttpRequest) -> HttpResponse:
    week = reservation_week(request.user, _monday(request.GET.get("week")))
    context = {"week": week, "highlight": request.GET.get("highlight", "")}
    if request.user.is_teacher or request.user.is_lab_admin:
        context["mine"] = reservations_of(request.user)
    if request.user.is_lab_admin:
        context["pending_count"] = reservations_pending().count()
    return render(request, "reservations/timeline.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def reservation_new(request: HttpRequest) -> HttpResponse:
    require_staff(request.user, RESERVATIONS_STAFF_ONLY)
    form = ReservationForm(request.POST or None, user=request.user, initial=_initial(request))
    conflict = suggest_url = None
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            data = form.cleaned_data
            try:
                made = reservation_create(
                    by=request.user,
                    owner=data.get("owner"),
                    title=data["title"],
                    starts_at=data["starts_at"],
                    ends_at=data["ends_at"],
                    nodes=data["node_request"],
                    course=data.get("course"),
                    repeat_weekly_until=data.get("repeat_weekly_until"),
                )
            except ReservationConflict as exc:
                conflict, status = exc, 409
                form.add_error(None, exc.message)
                suggest_url = _suggestion(exc, data)
            except PortalError as exc:
                status = exc.status
                form.add_error(None, exc.message)
                form.refusal_help = exc.extra.get("help", "")  # a limit's row on the help page (/help/#limit-…)
                for field, why in exc.extra.get("fields", {}).items():
                    field = FORM_FIELDS.get(field, field)
                    if field in form.fields:
                        form.add_error(field, why)
            else:
                first = made[0]
                values = {"sessions": len(made), "nodes": first.nodes.count(), "title": first.title}
                if first.status == ReservationStatus.PENDING:
                    sentence = (
                        _("%(sessions)s weekly sessions of %(nodes)s nodes wait for an admin's approval.")
                        if len(made) > 1
                        else _("Your reservation of %(nodes)s nodes waits for an admin's approval.")
                    )
                    messages.warning(request, sentence % values)
                else:
                    sentence = (
                        _("%(sessions)s weekly sessions “%(title)s” are booked on %(nodes)s nodes.")
                        if len(made) > 1
                        else _("Your reservation “%(title)s” is booked on %(nodes)s nodes.")
                    )
                    messages.success(request, sentence % values)
                monday = _monday(timezone.localdate(first.starts_at).isoformat())
                return redirect(f"{reverse('reservations')}?week={monday.isoformat()}&highlight={first.pk}")
    context = {"form": form, "conflict": conflict, "suggest_url": suggest_url, "limits": effective_quota(request.user)}
    return render(request, "reservations/form.html", context, status=status)


def _suggestion(conflict: ReservationConflict, data: dict) -> str | None:
    """A link that fills the form again with the earliest window that fits."""
    fit = conflict.earliest_fit
    if not fit:
        return None
    start = timezone.localtime(dt.datetime.fromisoformat(fit["starts_at"]))
    end = timezone.localtime(dt.datetime.fromisoformat(fit["ends_at"]))
    query = {"date": start.date().isoformat(), "start": f"{start:%H:%M}", "end": f"{end:%H:%M}", "title": data["title"]}
    if data["mode"] == "count":
        query.update(mode="count", node_count=data["node_count"])
    return f"{reverse('reservation-new')}?{urlencode(query)}"


# The service speaks of the API's fields; the form asks for a date and two times.
FORM_FIELDS = {"starts_at": "start", "ends_at": "end"}


def _initial(request: HttpRequest) -> dict:
    """Prefill from the query (the timeline's "book this" links and the conflict's "use this window")."""
    initial = {"date": timezone.localdate() + dt.timedelta(days=1), "start": "14:00", "end": "16:00"}
    for key in ("date", "start", "end", "title", "node_count", "mode"):
        if request.GET.get(key):
            initial[key] = request.GET[key]
    return initial


@login_required
@require_safe
def reservation_detail(request: HttpRequest, reservation_id: int) -> HttpResponse:
    reservation = reservation_for(request.user, reservation_id)
    return render(
        request,
        "reservations/detail.html",
        {"reservation": reservation, "status": reservation.status_at(timezone.now())},
    )


@login_required
@require_http_methods(["GET", "POST"])
def reservation_cancel_view(request: HttpRequest, reservation_id: int) -> HttpResponse:
    reservation = reservation_for(request.user, reservation_id)
    context = {"reservation": reservation, "now": timezone.now(), "scope": request.POST.get("scope", "one")}
    if reservation.series:
        context["series"] = {scope: series_sessions(reservation, scope=scope) for scope in SERIES_SCOPES}
    if request.method == "POST":
        scope = request.POST.get("scope", "one")
        if request.POST.get("confirm") != "yes" or scope not in ("one", *(SERIES_SCOPES if reservation.series else ())):
            messages.error(request, _("Tick the box to confirm the cancellation."))
            return render(request, "reservations/cancel.html", context, status=400)
        try:
            if scope == "one":
                reservation = reservation_cancel(by=request.user, reservation=reservation)
            else:
                sessions = reservation_series_cancel(by=request.user, reservation=reservation, scope=scope)
        except PortalError as exc:
            messages.error(request, exc.message)
            return redirect("reservation", reservation_id=reservation.pk)
        if scope == "one":
            messages.success(
                request,
                _("“%(title)s” is %(status)s.")
                % {"title": reservation.title, "status": reservation.get_status_display().lower()},
            )
        else:
            messages.success(
                request,
                _("%(count)s sessions of “%(title)s” are cancelled.")
                % {"count": len(sessions), "title": reservation.title},
            )
        return redirect("reservations")
    return render(request, "reservations/cancel.html", context)


@login_required
@require_safe
def reservation_approvals(request: HttpRequest) -> HttpResponse:
    require_admin(request.user, gettext_noop("approve reservations"))
    return render(request, "reservations/approvals.html", {"pending": reservations_pending()})


@login_required
@require_POST
def reservation_decide_view(request: HttpRequest, reservation_id: int) -> HttpResponse:
    require_admin(request.user, gettext_noop("approve reservations"))
    reservation = reservation_for(request.user, reservation_id)
    decision = request.POST.get("decision")
    if decision not in ("approve", "reject"):
        messages.error(request, _("Choose approve or reject."))
        return redirect("reservation-approvals")
    try:
        reservation = reservation_decide(
            by=request.user,
            reservation=reservation,
            approve=decision == "approve",
            reason=request.POST.get("reason", "")[:200],
        )
    except PortalError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"“{reservation.title}” by {reservation.owner}: {reservation.status_reason}")
    return redirect("reservation-approvals")
