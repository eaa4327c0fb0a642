"""The day reports, and the reports by person, course and kind, from the partial sums beside the ledger give the
ledger's own figures to the second: over midnights and the DST nights of the lab's zone, with open entries, ragged
window edges, entries closed by the reconciler and history corrected after the close; check_ledger names a tampered
sum and the reconciler rewrites it."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from labs.ledger import GpuShare, Ref, allocation_open, allocations_close
from labs.models import Allocation, UsageDay, UsageDayCourse
from labs.reconcile import reconcile
from labs.usage import accounting, daysums
from labs.usage.accounting import Period
from labs.usage.selectors import Scope, allocations_in_scope, usage_report
from tests.factories import CourseFactory, EnrollmentFactory, NodeFactory, UserFactory

pytestmark = pytest.mark.django_db
HOUR = dt.timedelta(hours=1)
# Lab zone Europe/Berlin: 2026-03-29 has 23 hours, 2026-10-25 has 25.
SPRING = timezone.make_aware(dt.datetime(2026, 3, 30, 13, 17, 5))
AUTUMN = timezone.make_aware(dt.datetime(2026, 10, 26, 9, 41, 59))


@pytest.fixture(autouse=True)
def _no_backends(settings, tmp_path):
    """No job runs here and the hub does not answer: the reconciler's backend steps find nothing or are skipped."""
    settings.JOBS_BACKEND = "local"
    settings.JOBS_LOCAL_DIR = tmp_path / "jobs"
    settings.NOTEBOOKS_HUB_API_URL = "http://127.0.0.1:9/hub/api"


def fill(now: dt.datetime, seed: int) -> dict:
    """Six days of random notebook and job entries before `now` through the ledger's own services: most closed,
    some still open, some left open by a holder that is gone (the reconciler closes those)."""
    rng = random.Random(seed)
    gpus = [gpu for _ in range(4) for gpu in NodeFactory(gpus=16).gpus.all()]  # one each: no GPU held twice
    course, other = CourseFactory(code="DL-101"), CourseFactory(code="CV-201")
    people = [UserFactory(username=f"s{i}") for i in range(5)]
    for person in people[:3]:
        EnrollmentFactory(user=person, course=course)
    begin = now - dt.timedelta(days=6)
    for i in range(60):
        start = begin + dt.timedelta(seconds=rng.randrange(6 * 86400), microseconds=rng.randrange(10**6))
        length = dt.timedelta(seconds=rng.choice([600, 5400, 20000, 50000, 100000, 200000]) + rng.random())
        kind_ref = Ref.notebook(1000 + i) if i % 2 else Ref.job(1000 + i, 1 + i % 3)
        rows = allocation_open(
            ref=kind_ref,
            user_id=rng.choice(people).pk,
            course_id=rng.choice([course.pk, other.pk, None]),
            shares=[GpuShare(gpus[i % len(gpus)].pk, Decimal(rng.choice(["1", "0.5", "0.25", "0.125"])))],
            at=start,
        )
        end = max(start + length, rows[0].starts_at)
        if i % 7 == 0 or end >= now:
            continue  # open: still held, or (no such notebook or job) an orphan the reconciler closes
        allocations_close(ref=kind_ref, at=end)
    return {"course": course, "person": people[0], "admin": UserFactory(username="root", role="admin")}


def old_report(scope: Scope, window: Period, unit: str) -> dict[str, float]:
    """The ledger-only computation the reports had before the sums."""
    return {row.key: row.gpu_seconds for row in accounting.usage(allocations_in_scope(scope), window, unit)}


def report(scope: Scope, window: Period, unit: str) -> dict[str, float]:
    return {row.key: row.gpu_seconds for row in usage_report(scope, window, unit)}


def windows(now: dt.datetime) -> list[Period]:
    today = timezone.localtime(now).date()
    midnight = daysums.local_midnight
    return [
        Period(start=midnight(today - dt.timedelta(days=7)), end=now, now=now),  # the default shape: up to now
        Period(start=midnight(today - dt.timedelta(days=5)), end=midnight(today - dt.timedelta(days=1)), now=now),
        Period(start=now - dt.timedelta(days=4, hours=5, seconds=7), end=now - dt.timedelta(hours=30), now=now),
        Period(start=now - dt.timedelta(hours=20), end=now + dt.timedelta(days=2), now=now),  # no whole day
        Period(start=midnight(today - dt.timedelta(days=6)), end=now + HOUR, now=now - dt.timedelta(hours=3)),
    ]


def same(expected):
    """To the second: a millisecond, or a hundred-millionth of a large sum (SQLite's ledger-only read sums seconds
    from julianday(), whose float keeps tens of microseconds of each entry; the sums are exact integers)."""
    return pytest.approx(expected, abs=1e-3, rel=1e-8)


def assert_same(scopes: list[Scope], now: dt.datetime) -> None:
    for scope in scopes:
        for window in windows(now):
            for unit in ("day", "week", "month", "user", "course", "kind"):
                expected = old_report(scope, window, unit)
                assert report(scope, window, unit) == same(expected), (scope, window, unit)


@pytest.mark.parametrize(("now", "seed"), [(SPRING, 1), (SPRING, 2), (AUTUMN, 3)])
def test_the_day_reports_from_the_sums_equal_the_ledgers_to_the_second(now, seed):
    found = fill(now, seed)
    admin, person, course = found["admin"], found["person"], found["course"]
    scopes = [
        Scope(viewer=admin),
        Scope(viewer=admin, course=course),
        Scope(viewer=admin, person=person),
        Scope(viewer=person, person=person),
    ]
    assert Allocation.objects.filter(ends_at__isnull=True).exists() and UsageDay.objects.exists()
    assert_same(scopes, now)

    # The reconciler closes the orphans (the holders that are gone) at its `now`; the sums follow the close.
    actions = reconcile(now=now).actions
    assert any(action.kind == "orphan_entry" for action in actions)
    assert not any(action.kind == "day_sums" for action in actions)  # the closes kept them right
    assert_same(scopes, now)

    # History corrected after the close (written straight into the ledger): the reconciler rewrites those days.
    fixed = Allocation.objects.filter(ends_at__gt=now - 30 * HOUR, ends_at__lt=now - HOUR).order_by("id").first()
    Allocation.objects.filter(pk=fixed.pk).update(ends_at=fixed.ends_at - dt.timedelta(hours=1, seconds=3))
    actions = reconcile(now=now).actions
    assert any(action.kind == "day_sums" for action in actions)
    assert_same(scopes, now)
    assert daysums.disagreements(*daysums.ledger_span()) == {}


def test_the_bulk_fill_equals_the_sums_kept_close_by_close():
    fill(SPRING, 4)
    reconcile(now=SPRING)
    first, last = daysums.ledger_span()
    kept = daysums.stored(first, last)
    courses = set(UsageDayCourse.objects.values_list("day", "course_key", "kind", "share_us"))
    daysums.rebuild(first, last)  # what the migration and bench_usage do: one INSERT ... SELECT from the ledger
    assert daysums.stored(first, last) == kept and kept
    assert set(UsageDayCourse.objects.values_list("day", "course_key", "kind", "share_us")) == courses


def test_saving_and_deleting_entries_one_by_one_keeps_the_sums():
    person, gpu = UserFactory(username="ana"), NodeFactory().gpus.get()
    # 22:00 on 28 March until 05:00 on 29 March (+02:00 by then): through the short night, 2 h + 3 h.
    start = timezone.make_aware(dt.datetime(2026, 3, 28, 22, 0)).astimezone(dt.UTC)
    entry = Allocation.objects.create(
        user=person, gpu=gpu, kind="job", ref="job:1#1", share=Decimal("0.5"), starts_at=start,
        ends_at=start + 5 * HOUR,
    )  # fmt: skip
    by_day = {row.day: row.share_us for row in UsageDay.objects.all()}
    assert by_day == {dt.date(2026, 3, 28): 500 * 2 * 3600 * 10**6, dt.date(2026, 3, 29): 500 * 3 * 3600 * 10**6}
    entry.ends_at = start + HOUR
    entry.save()
    assert sum(UsageDay.objects.values_list("share_us", flat=True)) == 500 * 3600 * 10**6
    entry.delete()
    assert set(UsageDay.objects.values_list("share_us", flat=True)) == {0}


def test_the_reports_by_person_and_course_list_what_the_ledger_lists_in_its_order_a_deleted_course_as_none():
    found = fill(AUTUMN, 5)
    admin = found["admin"]
    window = Period(start=AUTUMN - dt.timedelta(days=6, hours=3), end=AUTUMN, now=AUTUMN)
    for group_by in ("user", "course"):
        rows = usage_report(Scope(viewer=admin), window, group_by)
        expected = accounting.usage(allocations_in_scope(Scope(viewer=admin)), window, group_by)
        assert [row.key for row in rows] == [row.key for row in expected] and len(rows) > 2
        assert [row.gpu_seconds for row in rows] == same([row.gpu_seconds for row in expected])
    # A course deleted: its entries say no course (SET_NULL), and so does the report, though its sums keep its id.
    found["course"].delete()
    rows = {row.key: row.gpu_seconds for row in usage_report(Scope(viewer=admin), window, "course")}
    assert "DL-101" not in rows and "(no course)" in rows
    assert rows == same(old_report(Scope(viewer=admin), window, "course"))
    assert daysums.disagreements(*daysums.ledger_span()) == {}  # the sums moved its time to no course as well


def run_check(*args) -> tuple[int, str]:
    out = StringIO()
    try:
        call_command("check_ledger", *args, stdout=out)
    except SystemExit as exit_:
        return int(exit_.code), out.getvalue()
    return 0, out.getvalue()


def test_check_ledger_names_a_tampered_sum_and_the_reconciler_rewrites_it():
    found = fill(SPRING, 5)
    reconcile(now=SPRING)
    admin_scope = Scope(viewer=found["admin"])
    window = Period(start=daysums.local_midnight(dt.date(2026, 3, 25)), end=SPRING, now=SPRING)
    right = report(admin_scope, window, "day")
    assert run_check()[0] == 0

    day = timezone.localtime(SPRING).date() - dt.timedelta(days=1)
    row = UsageDay.objects.filter(day=day).order_by("id").first()
    UsageDay.objects.filter(pk=row.pk).update(share_us=row.share_us + 7200 * daysums.UNIT)
    UsageDayCourse.objects.filter(day=day, course_key=row.course_key, kind=row.kind).update(share_us=0)
    code, out = run_check()
    assert code == 1
    assert "FAIL day_sums_disagree" in out
    assert f"The day sums of {day.isoformat()} disagree with the ledger by +7200.000 GPU-seconds" in out
    assert report(admin_scope, window, "day") != pytest.approx(right, abs=1e-3)  # the reports read the sums

    actions = reconcile(now=SPRING).actions
    assert [a.target for a in actions if a.kind == "day_sums"] == [day.isoformat()]
    assert run_check()[0] == 0
    assert report(admin_scope, window, "day") == pytest.approx(right, abs=1e-3)


def test_the_migration_fills_the_sums_of_an_existing_ledger():
    from importlib import import_module

    from django.apps import apps
    from django.db import connection

    fill(AUTUMN, 6)
    first, last = daysums.ledger_span()
    kept = daysums.stored(first, last)
    courses = set(UsageDayCourse.objects.values_list("day", "course_key", "kind", "share_us"))
    UsageDay.objects.all().delete()
    UsageDayCourse.objects.all().delete()  # a ledger from before the sums

    class Editor:
        pass

    editor = Editor()
    editor.connection = connection
    import_module("labs.migrations.0014_usage_day_sums_backfill").fill(apps, editor)
    assert daysums.stored(first, last) == kept and kept
    assert set(UsageDayCourse.objects.values_list("day", "course_key", "kind", "share_us")) == courses
