"""The console's front page (what waits for the admin) and its budgets page (each budget's use this period)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from accounts.permissions import require_admin
from accounts.selectors import people_by_role
from labs.budgets.selectors import budgets_use
from labs.models.budgets import Budget
from labs.reservations.selectors import reservations_pending
from labs.selectors import lab_summary
from portal.web.console.nodes import CONSOLE


@login_required
@require_safe
def console_index(request: HttpRequest) -> HttpResponse:
    require_admin(request.user, CONSOLE)
    context = {"lab": lab_summary(), "pending_count": reservations_pending().count(), "people": people_by_role()}
    return render(request, "console/index.html", context)


@login_required
@require_safe
def budget_list(request: HttpRequest) -> HttpResponse:
    require_admin(request.user, CONSOLE)
    budgets = Budget.objects.select_related("course", "user").order_by("name")
    return render(request, "console/budgets.html", {"uses": budgets_use(budgets, with_energy=False)})
