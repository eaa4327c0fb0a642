"""Usage figures against the ledger, to the second: window edges, shares, open entries, time buckets over DST."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.db import connection
from django.utils import timezone

from labs import ledger
from labs.models import Allocation
from labs.usage import accounting
from labs.usage.accounting import Period
from labs.usage.selectors import Scope, reservation_use, usage_report
from tests.labs.usage.conftest import HOUR, entry

pytestmark = pytest.mark.django_db


def seconds(rows):
    return {row.key: row.gpu_seconds for row in rows}


def test_by_user_counts_edges_shares_and_open_entries(lab, known):
    window = Period(start=known["start"], end=lab.now + 10 * HOUR, now=lab.now)
    got = seconds(accounting.by_key(Allocation.objects.exclude(kind="reservation"), window, "user"))
    assert got == pytest.approx({"alice": known["alice"], "bob": known["bob"], "carol": known["carol"]}, abs=1e-3)


def test_totals_agree_with_the_ledgers_own_sum(lab, known):
    use = Allocation.objects.exclude(kind="reservation")
    window = Period(start=known["start"], end=lab.now, now=lab.now)
    total = accounting.total_seconds(use, window)
    assert total == pytest.approx(known["alice"] + known["bob"] + known["carol"], abs=1e-3)
    assert Decimal(total / 3600).quantize(Decimal("0.01")) == ledger.gpu_hours(use, start=window.start, end=lab.now)
    per_user = ledger.gpu_hours_by_user([lab.alice.pk, lab.bob.pk], start=window.start, end=lab.now)
    assert per_user[lab.alice.pk] == Decimal("4.00") and per_user[lab.bob.pk] == Decimal("0.75")


@pytest.mark.parametrize("group_by", ["course", "node", "kind", "day", "week", "month", "term"])
def test_every_grouping_sums_to_the_same_total(lab, known, group_by):
    use = Allocation.objects.exclude(kind="reservation")
    window = Period(start=known["start"], end=lab.now + HOUR, now=lab.now)
    rows = accounting.usage(use, window, group_by)
    assert sum(row.gpu_seconds for row in rows) == pytest.approx(accounting.total_seconds(use, window), abs=1e-3)


def test_by_course_node_and_kind(lab, known):
    use = Allocation.objects.exclude(kind="reservation")
    window = Period(start=known["start"], end=lab.now, now=lab.now)
    assert seconds(accounting.by_key(use, window, "course")) == pytest.approx(
        {"DL-101": 3 * 3600, "CV-201": known["carol"], accounting.NO_COURSE: 3600 + known["bob"]}, abs=1e-3
    )
    assert seconds(accounting.by_key(use, window, "kind")) == pytest.approx(
        {"job": 3 * 3600 + known["carol"], "notebook": 3600 + known["bob"]}, abs=1e-3
    )
    assert seconds(accounting.by_key(use, window, "node")) == pytest.approx(
        {"gpu01": 3 * 3600 + known["carol"], "gpu02": 3600, "gpu03": known["bob"]}, abs=1e-3
    )


def test_days_cut_entries_at_midnight(lab, known):
    use = Allocation.objects.exclude(kind="reservation")
    window = Period(start=known["start"], end=lab.now, now=lab.now)
    rows = accounting.by_time(use, window, "day")
    assert [row.key for row in rows] == ["2026-03-09", "2026-03-10", "2026-03-11"]
    assert seconds(rows) == pytest.approx(
        {"2026-03-09": known["alice"], "2026-03-10": known["carol"], "2026-03-11": known["bob"]}, abs=1e-3
    )
    assert rows[-1].ends_at == lab.now  # the last bucket stops at now


def test_a_day_over_the_dst_night_has_its_real_hours(lab):
    # Europe/Berlin leaves summer time on 25 October 2026: 03:00 becomes 02:00 again.
    start = timezone.make_aware(dt.datetime(2026, 10, 24, 22, 0))
    end = timezone.make_aware(dt.datetime(2026, 10, 25, 4, 0))
    assert end.astimezone(dt.UTC) - start.astimezone(dt.UTC) == 7 * HOUR
    entry(lab.alice, lab.gpus[0], start, end)
    now = timezone.make_aware(dt.datetime(2026, 11, 1))
    window = Period(start=timezone.make_aware(dt.datetime(2026, 10, 24)), end=now, now=now)
    got = seconds(accounting.by_time(Allocation.objects.all(), window, "day"))
    assert got["2026-10-24"] == pytest.approx(2 * 3600) and got["2026-10-25"] == pytest.approx(5 * 3600)
    assert seconds(accounting.by_time(Allocation.objects.all(), window, "week")) == pytest.approx(
        {"2026-10-19": 7 * 3600, "2026-10-26": 0}
    )


def test_the_python_cut_agrees_with_the_sql_one(lab, known):
    entry(lab.bob, lab.gpus[1], known["start"] - 50 * HOUR, known["start"] + 30 * HOUR, share="0.5")
    use = Allocation.objects.exclude(kind="reservation")
    window = Period(start=known["start"] - 3 * 24 * HOUR, end=lab.now, now=lab.now)
    edges = accounting.bucket_edges(window, "day")
    here = accounting._buckets_here(use, window, edges)
    if connection.vendor == "postgresql":
        assert accounting._buckets_in_sql(use, window, edges) == pytest.approx(here, abs=1e-3)
    assert sum(here.values()) == pytest.approx(accounting.total_seconds(use, window), abs=1e-3)


def test_terms_and_months(lab, known, settings):
    settings.USAGE_TERM_STARTS = ((2, 1), (8, 1))
    window = Period(start=timezone.make_aware(dt.datetime(2025, 12, 1)), end=lab.now, now=lab.now)
    rows = accounting.by_time(Allocation.objects.exclude(kind="reservation"), window, "term")
    assert [row.key for row in rows] == ["2025-08-01", "2026-02-01"]
    months = accounting.by_time(Allocation.objects.exclude(kind="reservation"), window, "month")
    assert [row.key for row in months] == ["2025-12-01", "2026-01-01", "2026-02-01", "2026-03-01"]


def test_a_window_after_now_is_empty(lab, known):
    window = Period(start=lab.now + HOUR, end=lab.now + 5 * HOUR, now=lab.now)
    assert accounting.usage(Allocation.objects.all(), window, "user") == []
    assert accounting.usage(Allocation.objects.all(), window, "day") == []


def test_scopes(lab, known):
    window = Period(start=known["start"], end=lab.now, now=lab.now)
    student = seconds(usage_report(Scope(viewer=lab.alice), window, "user"))
    assert student == pytest.approx({"alice": known["alice"]})
    teacher = seconds(usage_report(Scope(viewer=lab.teacher), window, "user"))
    # What alice booked to DL-101; never her or bob's notebooks booked to no course, never carol's CV-201 work.
    assert teacher == pytest.approx({"alice": 3 * 3600})
    course = seconds(usage_report(Scope(viewer=lab.other_teacher, course=lab.other_course), window, "user"))
    assert course == pytest.approx({"carol": known["carol"]})


def _ended_reservation(lab, title, start, length):
    from labs.models import Reservation

    return Reservation.objects.create(
        owner=lab.teacher,
        created_by=lab.teacher,
        course=lab.course,
        title=title,
        starts_at=start,
        ends_at=start + length,
        status="ended",
    )


def test_reservation_utilisation_and_no_show(lab):
    start = lab.now - 4 * HOUR
    booked = _ended_reservation(lab, "Lab", start, 2 * HOUR)
    empty = _ended_reservation(lab, "Nobody", start, 2 * HOUR)
    for gpu in lab.gpus[:2]:
        entry(lab.teacher, gpu, start, start + 2 * HOUR, kind="reservation", ref=f"reservation:{booked.pk}")
    entry(lab.teacher, lab.gpus[2], start, start + 2 * HOUR, kind="reservation", ref=f"reservation:{empty.pk}")
    entry(lab.alice, lab.gpus[0], start + 0.5 * HOUR, start + 3 * HOUR)  # 1.5 h inside the window
    entry(lab.carol, lab.gpus[1], start, start + 2 * HOUR)  # another course's student: not the course's use
    window = Period(start=start - HOUR, end=lab.now, now=lab.now)
    use = reservation_use(booked, window)
    assert use.reserved_seconds == pytest.approx(4 * 3600) and use.used_seconds == pytest.approx(1.5 * 3600)
    assert use.utilisation_pct == pytest.approx(37.5) and not use.no_show
    assert reservation_use(empty, window).no_show


def test_the_export_pages_give_every_entry_of_the_window_once(lab, known):
    same = known["start"] + 30 * HOUR
    for _ in range(5):  # entries that start at the same instant: the keyset goes on by id
        entry(lab.bob, lab.gpus[2], same, same + HOUR)
    use = Allocation.objects.exclude(kind="reservation")
    window = Period(start=known["start"], end=lab.now, now=lab.now)
    pages = list(accounting.entries(use, window, page=2))
    ids = [row[0] for rows in pages for row in rows]
    assert sorted(ids) == sorted(accounting.in_window(use, window).values_list("id", flat=True))
    assert len(ids) == len(set(ids)) == 9 and all(len(rows) <= 2 for rows in pages)


def test_a_reservation_on_several_gpus_is_measured_in_two_queries(lab, django_assert_max_num_queries):
    start = lab.now - 6 * HOUR
    booked = _ended_reservation(lab, "Lab", start, 3 * HOUR)
    for gpu in lab.gpus:  # held in two stretches on each GPU
        for begin in (start, start + 2 * HOUR):
            entry(lab.teacher, gpu, begin, begin + HOUR, kind="reservation", ref=f"reservation:{booked.pk}")
    entry(lab.alice, lab.gpus[0], start - HOUR, start + 2.5 * HOUR)  # 1 h + 0.5 h of the holdings
    minute = dt.timedelta(minutes=1)
    entry(lab.bob, lab.gpus[1], start + 15 * minute, None, share="0.5", kind="notebook")  # open: 0.5 × (45 + 60) min
    entry(lab.teacher, lab.gpus[2], start + 2 * HOUR, start + 2 * HOUR + 30 * minute + dt.timedelta(seconds=5))
    entry(lab.carol, lab.gpus[2], start, start + 3 * HOUR)  # another course's student: not this course's use
    window = Period(start=start - HOUR, end=lab.now, now=lab.now)
    with django_assert_max_num_queries(2):
        use = reservation_use(booked, window)
    assert use.reserved_seconds == pytest.approx(6 * 3600, abs=1e-3)
    assert use.used_seconds == pytest.approx(1.5 * 3600 + 0.5 * 105 * 60 + 30 * 60 + 5, abs=1e-3)  # the owner's too
