"""A budget's use is the ledger's GPU-hours of its course or person in the current period: clipped at the period's
edges, shares counted, open entries up to now, reservations left out; its cost from the prices and telemetry."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from labs.budgets.periods import period_of
from labs.budgets.selectors import budget_use
from labs.models import Budget, GpuMinute
from tests.factories import NodeFactory, UserFactory
from tests.labs.budgets.conftest import held, local

pytestmark = pytest.mark.django_db


def course_budget(course, **kw) -> Budget:
    fields = {"name": "DL-101 term", "course": course, "period": "term", "gpu_hours": Decimal("10")}
    fields.update(kw)
    fields.setdefault("starts_on", course.term_start)
    fields.setdefault("ends_on", course.term_end)
    return Budget.objects.create(**fields)


def test_a_term_budget_counts_its_course_work_from_the_ledger_to_the_second(people, gpu, now):
    course, ada = people["course"], people["student"]
    other_gpu = NodeFactory(name="gpu02").gpus.get()
    # 4 h across the term's first midnight: 2 h count.
    held(ada, gpu, course=course, start=local("2026-09-30 22:00"), hours=4)
    # A quarter GPU for 4 h: 1 GPU-hour.
    held(ada, gpu, course=course, start=local("2026-11-02 08:00"), hours=4, share="0.25", kind="notebook")
    # Half a GPU, open since 2 h before now: 1 GPU-hour so far.
    held(ada, other_gpu, course=course, start=now - dt.timedelta(hours=2), hours=None, share="0.5")
    # 1 h 30 min and 36 s: 1.51 GPU-hours.
    held(ada, gpu, course=course, start=local("2026-10-05 10:00"), hours=1.51)
    # Not the course's use: a reservation window, another course's job, the course's job after now.
    held(ada, gpu, course=course, start=local("2026-10-06 10:00"), hours=10, kind="reservation")
    held(UserFactory(), gpu, course=None, start=local("2026-10-07 10:00"), hours=3)
    use = budget_use(course_budget(course), now=now)
    assert use.used_gpu_hours == Decimal("5.51")
    assert use.pct == Decimal("55.1") and not use.exhausted
    assert (use.period.first_day, use.period.last_day) == (dt.date(2026, 10, 1), dt.date(2027, 1, 31))
    assert use.cost is None  # no prices


def test_a_monthly_budget_of_a_person_counts_this_month_only(people, gpu, now):
    ada = people["student"]
    held(ada, gpu, start=local("2026-10-31 23:00"), hours=2)  # 1 h in November
    held(ada, gpu, start=local("2026-11-10 10:00"), hours=3, course=people["course"])  # any course: her work
    held(people["teacher"], gpu, start=local("2026-11-11 10:00"), hours=5)  # someone else's
    budget = Budget.objects.create(
        name="Ada monthly", user=ada, period="month", starts_on=dt.date(2026, 1, 1), gpu_hours=Decimal("8")
    )
    use = budget_use(budget, now=now)
    assert use.used_gpu_hours == Decimal("4.00") and use.pct == Decimal("50.0")
    assert use.period.label == "in November 2026" and use.period.resets == "2026-12-01"


def test_a_budget_outside_its_period_counts_nothing(people, gpu, now):
    budget = course_budget(people["course"], starts_on=dt.date(2027, 2, 1), ends_on=dt.date(2027, 6, 30))
    held(people["student"], gpu, course=people["course"], start=now - dt.timedelta(hours=3), hours=2)
    use = budget_use(budget, now=now)
    assert use.period is None and use.used_gpu_hours == 0 and not use.exhausted


def test_the_cost_adds_gpu_hours_and_the_energy_the_gpus_drew_while_held(people, gpu, now):
    course, ada = people["course"], people["student"]
    start = local("2026-11-17 10:00")
    held(ada, gpu, course=course, start=start, hours=1, share="0.5")
    # Telemetry: 300 W every minute of that hour, and 400 W the hour after (not held: not counted).
    for minute in range(120):
        GpuMinute.objects.create(
            gpu=gpu, minute=start + dt.timedelta(minutes=minute), samples=60, power_avg_w=300 if minute < 60 else 400
        )
    budget = course_budget(course, price_per_gpu_hour=Decimal("0.80"), price_per_kwh=Decimal("0.30"))
    use = budget_use(budget, now=now)
    assert use.used_gpu_hours == Decimal("0.50")
    assert use.energy_kwh == Decimal("0.150")  # 300 W x half the GPU x 1 h
    assert use.gpu_cost == Decimal("0.40") and use.energy_cost == Decimal("0.05") and use.cost == Decimal("0.45")


@pytest.mark.parametrize(
    ("today", "first", "last"),
    [
        ("2026-02-14", "2026-02-01", "2026-02-28"),
        ("2026-03-05", "2026-03-02", "2026-03-31"),  # begins on the 2nd: its first month is clipped
        ("2026-12-15", "2026-12-01", "2026-12-20"),  # ends on the 20th
    ],
)
def test_monthly_periods_follow_the_calendar_within_the_budget(settings, today, first, last):
    period = period_of(
        period="month",
        starts_on=dt.date(2026, 3, 2) if today.startswith("2026-03") else dt.date(2026, 1, 1),
        ends_on=dt.date(2026, 12, 20),
        now=local(f"{today} 12:00"),
    )
    assert (period.first_day.isoformat(), period.last_day.isoformat()) == (first, last)
    assert period.start == local(f"{first} 00:00")


def test_after_its_last_day_a_monthly_budget_is_not_in_force():
    assert (
        period_of(
            period="month", starts_on=dt.date(2026, 1, 1), ends_on=dt.date(2026, 12, 20), now=local("2026-12-21 00:00")
        )
        is None
    )
