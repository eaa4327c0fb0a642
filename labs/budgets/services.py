"""Writes about budgets: admins create, change and delete them; notebooks and jobs ask the guard before they queue.

Every write is checked by validation.budget_problems (the same rules as the admin console's form) and refused with
400 naming the fields; nothing is saved unless every field is right. Budgets are the admins' (the API's write
endpoints and the console); the rule and sentence of the refusal live in accounts.permissions.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from decimal import Decimal, InvalidOperation
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from accounts import audit
from accounts.errors import InvalidInput
from accounts.models import Course, NoticeLevel, User
from accounts.permissions import budget_exhausted_sentence, refuse_over_budget, require_admin
from accounts.services import notice_send
from labs.budgets.selectors import budgets_over, who_raises
from labs.budgets.validation import budget_fill_days, budget_problems, parse_thresholds
from labs.models.budgets import Budget, BudgetAction, BudgetPeriod

BUDGET_FIELDS = (
    "name",
    "course",
    "user",
    "period",
    "starts_on",
    "ends_on",
    "gpu_hours",
    "price_per_gpu_hour",
    "price_per_kwh",
    "thresholds",
    "on_exceed",
    "note",
)
MANAGE = gettext_noop("manage budgets")


def _decimal_or_none(value: Any) -> Any:
    if value is None or value == "" or isinstance(value, Decimal):
        return value
    try:
        return Decimal(str(value))
    except (InvalidOperation, ValueError):
        return value  # budget_problems names it


def _apply(budget: Budget, changes: dict[str, Any]) -> None:
    unknown = set(changes) - set(BUDGET_FIELDS)
    if unknown:
        raise InvalidInput("Unknown budget fields.", fields=dict.fromkeys(sorted(unknown), "Not a budget field."))
    for field, value in changes.items():
        if field in ("gpu_hours", "price_per_gpu_hour", "price_per_kwh"):
            value = _decimal_or_none(value)
        if field in ("price_per_gpu_hour", "price_per_kwh", "ends_on") and value == "":
            value = None
        setattr(budget, field, value)
    budget_fill_days(budget, today=timezone.localdate())
    if not (budget.name or "").strip():
        budget.name = _default_name(budget)
    if budget.thresholds:
        with contextlib.suppress(ValueError):  # budget_problems names it
            budget.thresholds = ",".join(str(value) for value in parse_thresholds(budget.thresholds))
    problems = budget_problems(budget)
    if problems:
        why = next(iter(problems.values()))
        raise InvalidInput(f"The budget cannot be saved: {why}", fields=problems)


def _default_name(budget: Budget) -> str:
    who = budget.course.code if budget.course_id else budget.user.username if budget.user_id else "?"
    return f"{who} {'monthly' if budget.period == BudgetPeriod.MONTH else 'term'} budget"


def budget_create(
    *,
    by: User,
    gpu_hours: Any,
    course: Course | None = None,
    user: User | None = None,
    period: str = BudgetPeriod.TERM,
    starts_on: dt.date | None = None,
    ends_on: dt.date | None = None,
    name: str = "",
    price_per_gpu_hour: Any = None,
    price_per_kwh: Any = None,
    thresholds: str = "",
    on_exceed: str = BudgetAction.WARN,
    note: str = "",
) -> Budget:
    """A new budget (admins). 400 naming the fields for anything out of bounds; nothing saved then."""
    require_admin(by, MANAGE)
    budget = Budget()
    _apply(
        budget,
        {
            "name": name,
            "course": course,
            "user": user,
            "period": period,
            "starts_on": starts_on,
            "ends_on": ends_on,
            "gpu_hours": gpu_hours,
            "price_per_gpu_hour": price_per_gpu_hour,
            "price_per_kwh": price_per_kwh,
            "thresholds": thresholds,
            "on_exceed": on_exceed,
            "note": note,
        },
    )
    with transaction.atomic():
        budget.save()
        _audit(by, "budget.create", budget, {}, audit.snapshot(budget, BUDGET_FIELDS))
    return budget


def _audit(by: User, action: str, budget: Budget, before: dict, after: dict) -> None:
    audit.record(actor=by, action=action, target=budget, before=before, after=after, course=budget.course_id)


def budget_update(*, by: User, budget: Budget, **changes: Any) -> Budget:
    """Change some fields of a budget (admins); the same checks as a new one."""
    require_admin(by, MANAGE)
    with transaction.atomic():
        budget = Budget.objects.select_for_update().get(pk=budget.pk)
        before = audit.snapshot(budget, BUDGET_FIELDS)
        _apply(budget, changes)
        budget.save()
        _audit(by, "budget.change", budget, before, audit.snapshot(budget, BUDGET_FIELDS))
    return budget


def budget_delete(*, by: User, budget: Budget) -> None:
    require_admin(by, MANAGE)
    with transaction.atomic():
        row = Budget.objects.select_for_update().filter(pk=budget.pk).first()
        if row is None:
            return
        _audit(by, "budget.delete", row, audit.snapshot(row, BUDGET_FIELDS), {})
        row.delete()


def budgets_guard(*, user: User, course: Course | None, now: dt.datetime | None = None, tell: bool = True) -> None:
    """Before a notebook or job of `user` (counting for `course`) is queued: refuse it when a budget it counts
    against is used up and set to block (403 quota_exceeded naming the budget); with warn-only budgets used up,
    let it through and tell the person once per budget and period (unless not `tell`: a preview writes nothing)."""
    now = now or timezone.now()
    for use in budgets_over(user=user, course=course, now=now):
        budget, period = use.budget, use.period
        values = {
            "name": budget.name,
            "used": use.used_gpu_hours,
            "allowed": budget.gpu_hours,
            "period": period.label,
            "whom": who_raises(budget),
        }
        if budget.on_exceed == BudgetAction.BLOCK:
            refuse_over_budget(resets=period.resets, **values)
        if not tell:
            continue
        notice_send(
            user=user,
            text=budget_exhausted_sentence(resets=period.resets, blocks=False, **values),
            ref=f"budget:{budget.pk}:{period.first_day:%Y%m%d}:over",
            level=NoticeLevel.WARNING,
        )
