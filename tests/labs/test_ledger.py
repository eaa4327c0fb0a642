import datetime as dt
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from django.db import IntegrityError, transaction

from labs.ledger import gpu_hours, gpu_seconds, held_seconds, week_start
from labs.models import Allocation, AllocationKind
from labs.selectors import usage_of
from tests.factories import AllocationFactory, NodeFactory, UserFactory

pytestmark = pytest.mark.django_db
BERLIN = ZoneInfo("Europe/Berlin")


def at(*args) -> dt.datetime:
    return dt.datetime(*args, tzinfo=BERLIN)


def test_week_starts_monday_midnight_in_the_lab_time_zone():
    assert week_start(at(2026, 11, 19, 15, 0)) == at(2026, 11, 16, 0, 0)
    assert week_start(at(2026, 11, 16, 0, 0)) == at(2026, 11, 16, 0, 0)
    # Across the DST change (29 Mar 2026 in Berlin) the week still starts at local midnight.
    assert week_start(at(2026, 3, 31, 12, 0)) == at(2026, 3, 30, 0, 0)


def test_gpu_hours_clip_to_the_window_and_weigh_the_share():
    user = UserFactory()
    gpu = NodeFactory().gpus.first()
    start, end = at(2026, 11, 16), at(2026, 11, 18)
    AllocationFactory(user=user, gpu=gpu, starts_at=at(2026, 11, 15, 22), ends_at=at(2026, 11, 16, 2))  # 2 h inside
    AllocationFactory(
        user=user, gpu=gpu, share=Decimal("0.25"), starts_at=at(2026, 11, 17, 10), ends_at=at(2026, 11, 17, 14)
    )  # 4 h x 0.25 = 1
    AllocationFactory(user=user, gpu=gpu, starts_at=at(2026, 11, 17, 23), ends_at=None)  # open: 1 h until end
    AllocationFactory(user=user, gpu=gpu, starts_at=at(2026, 11, 10), ends_at=at(2026, 11, 11))  # before
    total = gpu_hours(Allocation.objects.filter(user=user), start=start, end=end)
    assert total == Decimal("4.00")


def test_one_definition_of_gpu_time_over_a_window():
    """The reports' total, the hours and the one-entry form are the ledger's gpu_seconds, not copies of it."""
    from labs.usage.accounting import Period, total_seconds

    user = UserFactory()
    gpu = NodeFactory().gpus.first()
    start, end = at(2026, 11, 16), at(2026, 11, 18)
    rows = [(at(2026, 11, 15, 22), at(2026, 11, 16, 2), "1"), (at(2026, 11, 17, 10), at(2026, 11, 17, 14), "0.25")]
    rows.append((at(2026, 11, 17, 23), None, "0.5"))
    for starts_at, ends_at, share in rows:
        AllocationFactory(user=user, gpu=gpu, share=Decimal(share), starts_at=starts_at, ends_at=ends_at)
    entries = Allocation.objects.filter(user=user)
    by_hand = sum(float(share) * held_seconds(s, e, start=start, end=end) for s, e, share in rows)
    assert by_hand == 2 * 3600 + 3600 + 1800
    assert gpu_seconds(entries, start=start, end=end) == Decimal(by_hand)
    assert total_seconds(entries, Period(start=start, end=end, now=end)) == by_hand
    assert gpu_hours(entries, start=start, end=end) == Decimal("3.50")
    assert gpu_seconds(entries, start=end, end=start) == 0


def test_usage_counts_running_sessions_once_per_ref_and_skips_reservations():
    user = UserFactory()
    now = dt.datetime.now(tz=BERLIN)
    for gpu in (NodeFactory().gpus.first(), NodeFactory().gpus.first()):
        AllocationFactory(
            user=user, kind=AllocationKind.JOB, ref="job:7#1", gpu=gpu, starts_at=now - dt.timedelta(minutes=6)
        )
    AllocationFactory(
        user=user, kind=AllocationKind.RESERVATION, ref="reservation:1", starts_at=now - dt.timedelta(minutes=6)
    )
    usage = usage_of(user, now=now)
    assert usage["jobs_running"] == 1 and usage["notebooks_running"] == 0
    expected = 2 * min(6 / 60, (now - week_start(now)).total_seconds() / 3600)
    assert usage["gpu_hours_week"] == pytest.approx(expected, abs=0.011)


def test_ledger_rejects_impossible_entries():
    entry = AllocationFactory()
    with pytest.raises(IntegrityError), transaction.atomic():
        Allocation.objects.filter(pk=entry.pk).update(ends_at=entry.starts_at - dt.timedelta(seconds=1))
    with pytest.raises(IntegrityError), transaction.atomic():
        Allocation.objects.filter(pk=entry.pk).update(share=Decimal("1.5"))


def test_a_gpu_taken_by_a_pass_that_began_before_it_was_freed_starts_at_the_freeing(db):
    """A pass decides at its own `now`; the job that held the GPU was closed a few seconds later, mid-pass. The new
    holder's row starts when the GPU was freed, so no instant shows the GPU held twice (check_ledger stays clean)."""
    from labs.ledger import GpuShare, Ref, allocation_open, allocations_close
    from labs.ledger_check import share_violations

    gpu = NodeFactory(name="gpu01").gpus.get()
    owner = UserFactory(username="bo")
    pass_began = dt.datetime(2026, 3, 2, 10, 0, tzinfo=dt.UTC)
    allocation_open(
        ref=Ref.job(1, 1), user_id=owner.pk, shares=[GpuShare(gpu.pk)], at=pass_began - dt.timedelta(hours=1)
    )
    freed = pass_began + dt.timedelta(seconds=4)
    assert allocations_close(ref=Ref.job(1, 1), at=freed) == 1

    [row] = allocation_open(ref=Ref.notebook(7), user_id=owner.pk, shares=[GpuShare(gpu.pk)], at=pass_began)
    assert row.starts_at == freed
    assert share_violations() == []

    # A short job that both began and ended after the pass's `now` (bench_portal saw this): the same.
    allocations_close(ref=Ref.notebook(7), at=pass_began + dt.timedelta(seconds=5))
    job_began, job_ended = pass_began + dt.timedelta(seconds=6), pass_began + dt.timedelta(seconds=8)
    allocation_open(ref=Ref.job(2, 1), user_id=owner.pk, shares=[GpuShare(gpu.pk)], at=job_began)
    allocations_close(ref=Ref.job(2, 1), at=job_ended)
    [row] = allocation_open(ref=Ref.notebook(10), user_id=owner.pk, shares=[GpuShare(gpu.pk)], at=pass_began)
    assert row.starts_at == job_ended
    assert share_violations() == []

    # A GPU that was free all along is taken from the pass's `now`; so is a share beside a holder still running.
    other = NodeFactory(name="gpu02").gpus.get()
    [row] = allocation_open(
        ref=Ref.notebook(8), user_id=owner.pk, shares=[GpuShare(other.pk, Decimal("0.5"))], at=pass_began
    )
    assert row.starts_at == pass_began
    [row] = allocation_open(
        ref=Ref.notebook(9), user_id=owner.pk, shares=[GpuShare(other.pk, Decimal("0.5"))], at=pass_began
    )
    assert row.starts_at == pass_began
