"""Reads about budgets: who sees which, and how much of each is used, from the one ledger (labs.ledger).

Use is the GPU-hours of notebooks and jobs (reservations are not use, as for weekly quotas) that count for the
budget's course (the ledger's `course`) or person (its `user`) within the current period, open entries up to now.
Cost is GPU-hours times the budget's GPU-hour price plus, with a kWh price, the energy its GPUs drew while held:
each one-minute telemetry row (power_avg_w) of a GPU during an entry of the budget, times the entry's share.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable
from decimal import ROUND_HALF_UP, Decimal

from django.conf import settings
from django.db.models import F, FloatField, Q, QuerySet, Sum
from django.db.models.functions import Cast
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.errors import NotFound
from accounts.models import Course, User
from accounts.more_requests_selectors import extra_budget_hours
from accounts.prepared import Prepared
from accounts.selectors import courses_in_term, lab_admins
from labs.budgets.periods import Period, budget_period
from labs.budgets.validation import parse_thresholds
from labs.ledger import gpu_hours, gpu_hours_by_course, week_start
from labs.models import Allocation, AllocationKind, GpuMinute
from labs.models.budgets import Budget, BudgetAction

HUNDRED = Decimal(100)
CENT = Decimal("0.01")


def money(value: Decimal) -> Decimal:
    """Amounts of money round half up to the cent, as a bill does."""
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


WORK_KINDS = (AllocationKind.NOTEBOOK, AllocationKind.JOB)


@dataclasses.dataclass(frozen=True)
class BudgetUse:
    """A budget in its current period: GPU-hours used, the share of the budget, and the cost when priced."""

    budget: Budget
    period: Period | None  # None: the budget does not count now (not begun, or over)
    used_gpu_hours: Decimal
    energy_kwh: Decimal | None
    gpu_cost: Decimal | None
    energy_cost: Decimal | None

    @property
    def pct(self) -> Decimal:
        return (self.used_gpu_hours * HUNDRED / self.budget.gpu_hours).quantize(Decimal("0.1"))

    def reached(self, threshold: int) -> bool:
        """Whether the use is at `threshold` % or past it, unrounded: 999.96 of 1000 is not 100 % (nor blocked)."""
        return self.used_gpu_hours * HUNDRED >= threshold * self.budget.gpu_hours

    @property
    def exhausted(self) -> bool:
        return self.period is not None and self.used_gpu_hours >= self.budget.gpu_hours

    @property
    def cost(self) -> Decimal | None:
        parts = [part for part in (self.gpu_cost, self.energy_cost) if part is not None]
        return money(sum(parts, Decimal(0))) if parts else None

    @property
    def currency(self) -> str:
        return settings.USAGE_CURRENCY


def thresholds_of(budget: Budget) -> list[int]:
    """The budget's alert percentages, or the lab's (BUDGET_ALERT_THRESHOLDS)."""
    try:
        return parse_thresholds(budget.thresholds or settings.BUDGET_ALERT_THRESHOLDS)
    except ValueError:
        return parse_thresholds(settings.BUDGET_ALERT_THRESHOLDS)


def budgets_visible_to(user: User) -> QuerySet[Budget]:
    """Admins: every budget. Teachers: their courses' and their own. Students: their own and their courses'."""
    budgets = Budget.objects.select_related("course", "user")
    if not user.is_authenticated:
        return budgets.none()
    if user.is_lab_admin:
        return budgets
    if user.is_teacher:
        courses = Course.objects.filter(teachers=user).values("pk")
    else:
        courses = Course.objects.filter(enrollments__user=user).values("pk")
    return budgets.filter(Q(user=user) | Q(course__in=courses))


def budget_for(user: User, budget_id: int) -> Budget:
    """One budget the person may see; any other (or none) reads the same: 404."""
    budget = budgets_visible_to(user).filter(pk=budget_id).first()
    if budget is None:
        raise NotFound("No such budget.")
    return budget


def _scope(budget: Budget) -> dict[str, int]:
    return {"course_id": budget.course_id} if budget.course_id else {"user_id": budget.user_id}


def _ledger_rows(budget: Budget) -> QuerySet[Allocation]:
    return Allocation.objects.filter(kind__in=WORK_KINDS, **_scope(budget))


def energy_kwh(budget: Budget, *, start: dt.datetime, end: dt.datetime) -> Decimal:
    """kWh the budget's GPUs drew while its entries held them: one-minute telemetry rows, times the entry's share.

    One query (a join of the minute rows with the ledger entries holding their GPU at that minute); telemetry kept
    TELEMETRY_HISTORY_DAYS, so older minutes count no energy."""
    held = {f"gpu__allocations__{name}": value for name, value in _scope(budget).items()}
    watt_minutes = GpuMinute.objects.filter(
        Q(gpu__allocations__ends_at__isnull=True) | Q(gpu__allocations__ends_at__gt=F("minute")),
        minute__gte=start,
        minute__lt=end,
        power_avg_w__isnull=False,
        gpu__allocations__starts_at__lte=F("minute"),
        gpu__allocations__kind__in=WORK_KINDS,
        **held,
    ).aggregate(total=Sum(F("power_avg_w") * Cast(F("gpu__allocations__share"), FloatField())))["total"]
    return (Decimal(str(watt_minutes or 0)) / Decimal(60 * 1000)).quantize(Decimal("0.001"))


def budget_use(budget: Budget, *, now: dt.datetime | None = None, with_energy: bool = True) -> BudgetUse:
    now = now or timezone.now()
    period = budget_period(budget, now)
    if period is None:
        return BudgetUse(budget, None, Decimal("0.00"), None, None, None)
    end = min(period.end, now)
    used = gpu_hours(_ledger_rows(budget), start=period.start, end=end)
    gpu_cost = money(used * budget.price_per_gpu_hour) if budget.price_per_gpu_hour is not None else None
    kwh = energy_cost = None
    if with_energy and budget.price_per_kwh is not None:
        kwh = energy_kwh(budget, start=period.start, end=end)
        energy_cost = money(kwh * budget.price_per_kwh)
    return BudgetUse(budget, period, used, kwh, gpu_cost, energy_cost)


def budgets_use(budgets: Iterable[Budget], *, now: dt.datetime | None = None, with_energy: bool = True):
    now = now or timezone.now()
    return [budget_use(budget, now=now, with_energy=with_energy) for budget in budgets]


def _applying(user: int, course: int | None = None) -> QuerySet[Budget]:
    scope = Q(user=user) | Q(course=course) if course is not None else Q(user=user)
    return Budget.objects.filter(scope).select_related("course", "user")


# Every notebook start and job submission asks, with or without a course: each shape compiled once.
_PERSONS = Prepared(_applying, user=Budget._meta.get_field("user"))
_PERSONS_AND_COURSES = Prepared(_applying, user=Budget._meta.get_field("user"), course=Budget._meta.get_field("course"))


def budgets_applying(*, user: User, course: Course | None) -> list[Budget]:
    """The budgets a new notebook or job of `user` counts against: theirs, and its course's (when it has one)."""
    if course is None:
        return _PERSONS.objects(user.pk)
    return _PERSONS_AND_COURSES.objects(user.pk, course.pk)


def budgets_over(*, user: User, course: Course | None, now: dt.datetime) -> list[BudgetUse]:
    """Those of `budgets_applying` used up in their current period, blocking ones first."""
    uses = budgets_use(budgets_applying(user=user, course=course), now=now, with_energy=False)
    # Extra GPU-hours from an approved request for more let this person's work past the budgets they apply to.
    over = [
        use
        for use in uses
        if use.exhausted
        and use.used_gpu_hours
        >= use.budget.gpu_hours
        + extra_budget_hours(user, budget_user_id=use.budget.user_id, budget_course_id=use.budget.course_id, now=now)
    ]
    return sorted(over, key=lambda use: (use.budget.on_exceed != BudgetAction.BLOCK, use.budget.pk))


def who_raises(budget: Budget) -> str:
    return _("your teacher or an admin") if budget.course_id else _("an admin")


def alert_recipients(budget: Budget) -> list[User]:
    """Who hears of a budget's thresholds: a course's teachers, or the person; and the lab's admins."""
    people = User.objects.filter(is_active=True)
    scope = Q(courses_taught=budget.course_id) if budget.course_id else Q(pk=budget.user_id)
    return list(people.filter(scope | Q(pk__in=lab_admins().values("pk"))).distinct().order_by("username"))


# --- For /metrics (labs/metrics.py): a few grouped queries per scrape ---------------------------------------------


def course_gpu_hours_this_week(*, now: dt.datetime | None = None) -> dict[str, Decimal]:
    """GPU-hours each course in term has used since Monday 00:00 (lab time), by course code, in one query."""
    now = now or timezone.now()
    codes = dict(courses_in_term(today=timezone.localtime(now).date()).values_list("pk", "code"))
    hours = gpu_hours_by_course(codes, start=week_start(now), end=now)
    return {codes[pk]: used for pk, used in hours.items()}


def course_gpus_held() -> dict[str, Decimal]:
    """GPUs (shares added up) each course's notebooks and jobs hold now, by course code."""
    rows = (
        Allocation.objects.filter(ends_at__isnull=True, kind__in=WORK_KINDS, course__isnull=False)
        .values_list("course__code")
        .annotate(held=Sum("share"))
    )
    return {code: held for code, held in rows}


def budgets_in_force(*, now: dt.datetime | None = None) -> list[BudgetUse]:
    """Every budget counting now, with its use (no energy: that is the API's and the console's)."""
    now = now or timezone.now()
    budgets = Budget.objects.select_related("course", "user").order_by("pk")
    return [use for use in budgets_use(budgets, now=now, with_energy=False) if use.period is not None]
