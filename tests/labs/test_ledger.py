import datetime as dt
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from django.db import IntegrityError, transaction

from labs.ledger import gpu_hours, week_start
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
