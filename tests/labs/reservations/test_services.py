"""Booking whole nodes: the rules, the answers, and no double booking even under a stampede."""

import datetime as dt
import threading
from decimal import Decimal

import pytest
from django.db import connection
from django.utils import timezone

from accounts.errors import InvalidInput, NotPermitted, QuotaExceeded
from accounts.models import Quota
from labs.models import Reservation, ReservationNode, ReservationStatus
from labs.reservations.availability import ReservationConflict
from labs.reservations.services import NodeRequest, reservation_cancel, reservation_create, reservation_decide
from tests.factories import CourseFactory, NodeFactory, UserFactory

pytestmark = pytest.mark.django_db


def tomorrow_at(hour: int, minute: int = 0) -> dt.datetime:
    day = timezone.localdate() + dt.timedelta(days=1)
    return timezone.make_aware(dt.datetime.combine(day, dt.time(hour, minute)))


@pytest.fixture
def lab():
    return [NodeFactory(name=f"gpu{n:02d}") for n in range(1, 7)]


@pytest.fixture
def teacher():
    return UserFactory(username="ada", role="teacher")


def book(by, names=(), count=None, all_nodes=False, start=None, end=None, **kwargs):
    return reservation_create(
        by=by,
        title=kwargs.pop("title", "Lab session"),
        starts_at=start or tomorrow_at(14),
        ends_at=end or tomorrow_at(16),
        nodes=NodeRequest(names=tuple(names), count=count, all_nodes=all_nodes),
        **kwargs,
    )


def test_teacher_books_named_nodes_and_they_are_held(lab, teacher):
    [reservation] = book(teacher, ["gpu01", "gpu02"])
    assert reservation.status == ReservationStatus.APPROVED
    assert sorted(reservation.nodes.values_list("name", flat=True)) == ["gpu01", "gpu02"]
    rows = ReservationNode.objects.filter(reservation=reservation)
    assert all(row.holds and row.starts_at == tomorrow_at(14) and row.ends_at == tomorrow_at(16) for row in rows)


def test_overlap_on_a_node_is_a_conflict_naming_the_window_and_what_fits(lab, teacher):
    book(teacher, ["gpu01", "gpu02"])
    other = UserFactory(username="grace", role="teacher")
    with pytest.raises(ReservationConflict) as caught:
        book(other, ["gpu02", "gpu03"], start=tomorrow_at(15), end=tomorrow_at(17))
    error = caught.value
    assert error.status == 409
    assert [c["node"] for c in error.conflicts] == ["gpu02"]
    assert error.conflicts[0]["starts_at"] == timezone.localtime(tomorrow_at(14)).isoformat()
    # Same length, both nodes free: right after the booking on gpu02 ends.
    assert error.earliest_fit == {
        "starts_at": timezone.localtime(tomorrow_at(16)).isoformat(),
        "ends_at": timezone.localtime(tomorrow_at(18)).isoformat(),
        "nodes": ["gpu02", "gpu03"],
    }
    assert Reservation.objects.count() == 1


def test_back_to_back_windows_do_not_collide(lab, teacher):
    book(teacher, ["gpu01"], start=tomorrow_at(10), end=tomorrow_at(12))
    book(teacher, ["gpu01"], start=tomorrow_at(12), end=tomorrow_at(14))
    assert Reservation.objects.count() == 2


@pytest.mark.postgresql_only
def test_the_database_refuses_an_overlap_even_when_the_application_is_bypassed(lab, teacher):
    from django.db import IntegrityError, transaction

    [first] = book(teacher, ["gpu01"])
    second = Reservation.objects.create(
        owner=teacher,
        created_by=teacher,
        title="sneaky",
        starts_at=tomorrow_at(15),
        ends_at=tomorrow_at(17),
        status=ReservationStatus.APPROVED,
    )
    with pytest.raises(IntegrityError, match="reservation_node_no_overlap"), transaction.atomic():
        ReservationNode.objects.create(
            reservation=second, node=lab[0], starts_at=second.starts_at, ends_at=second.ends_at
        )
    # A row that no longer holds (a cancelled booking) does not block.
    ReservationNode.objects.filter(reservation=first).update(holds=False)
    ReservationNode.objects.create(reservation=second, node=lab[0], starts_at=second.starts_at, ends_at=second.ends_at)


def test_node_count_picks_free_nodes_and_all_takes_the_lab(lab, teacher):
    book(teacher, ["gpu01", "gpu02"])
    [picked] = book(teacher, count=3)
    assert sorted(picked.nodes.values_list("name", flat=True)) == ["gpu03", "gpu04", "gpu05"]
    with pytest.raises(ReservationConflict) as caught:
        book(teacher, count=2)
    assert caught.value.earliest_fit["starts_at"] == timezone.localtime(tomorrow_at(16)).isoformat()
    [whole] = book(teacher, all_nodes=True, start=tomorrow_at(18), end=tomorrow_at(20))
    assert whole.nodes.count() == 6 and whole.requested == "all"


@pytest.mark.parametrize(
    "start,end,field",
    [
        (tomorrow_at(16), tomorrow_at(14), "ends_at"),
        (timezone.now() - dt.timedelta(hours=2), timezone.now() - dt.timedelta(hours=1), "starts_at"),
        (timezone.now() + dt.timedelta(minutes=5), timezone.now() + dt.timedelta(hours=1), "starts_at"),
        (timezone.now() + dt.timedelta(days=400), timezone.now() + dt.timedelta(days=400, hours=1), "ends_at"),
    ],
    ids=["end-before-start", "in-the-past", "too-little-notice", "beyond-horizon"],
)
def test_bad_windows_are_refused_and_nothing_is_written(lab, teacher, start, end, field):
    with pytest.raises(InvalidInput) as caught:
        book(teacher, ["gpu01"], start=start, end=end)
    assert field in caught.value.fields
    assert not Reservation.objects.exists() and not ReservationNode.objects.exists()


def test_unknown_and_cordoned_nodes_are_refused(lab, teacher):
    with pytest.raises(InvalidInput, match="Unknown nodes: gpu99"):
        book(teacher, ["gpu01", "gpu99"])
    lab[2].status = "cordoned"
    lab[2].save()
    with pytest.raises(InvalidInput, match="gpu03 is cordoned"):
        book(teacher, ["gpu03"])
    with pytest.raises(InvalidInput, match="Only 5 nodes are ready"):
        book(teacher, count=6)
    assert not Reservation.objects.exists()


def test_quota_limits_hours_nodes_and_node_hours_per_week(lab, teacher):
    Quota.objects.create(
        user=teacher,
        reservation_max_nodes=3,
        reservation_max_hours=Decimal("3"),
        reservation_node_hours_week=Decimal("10"),
    )
    with pytest.raises(QuotaExceeded) as caught:
        book(teacher, count=4)
    assert caught.value.extra == {
        "limit": "reservation_max_nodes",
        "used": 4,
        "allowed": 3,
        "help": "/help/#limit-reservation_max_nodes",
    }
    with pytest.raises(QuotaExceeded) as caught:
        book(teacher, ["gpu01"], end=tomorrow_at(18))
    assert caught.value.extra["limit"] == "reservation_max_hours"
    book(teacher, count=3)  # 6 node-hours
    with pytest.raises(QuotaExceeded) as caught:
        book(teacher, count=3, start=tomorrow_at(17), end=tomorrow_at(19))
    assert caught.value.extra == {
        "limit": "reservation_node_hours_week",
        "used": 6.0,
        "allowed": 10.0,
        "help": "/help/#limit-reservation_node_hours_week",
    }
    assert Reservation.objects.count() == 1


def test_students_cannot_reserve_and_teachers_not_for_others(lab, teacher):
    student = UserFactory(username="sam", role="student")
    with pytest.raises(NotPermitted):
        book(student, ["gpu01"])
    with pytest.raises(NotPermitted):
        book(teacher, ["gpu01"], owner=UserFactory(username="grace", role="teacher"))
    assert not Reservation.objects.exists()


def test_admin_books_on_a_teachers_behalf_and_big_requests_wait_for_approval(lab, teacher):
    admin = UserFactory(username="root", role="admin")
    [for_ada] = book(admin, ["gpu01"], owner=teacher)
    assert for_ada.owner == teacher and for_ada.created_by == admin and for_ada.status == "approved"
    Quota.objects.create(user=teacher, reservation_approval_nodes=2)
    [big] = book(teacher, count=4, start=tomorrow_at(18), end=tomorrow_at(20))
    assert big.status == ReservationStatus.PENDING
    assert admin.notices.filter(ref=f"reservation:{big.pk}:pending").exists()
    # A pending request holds its nodes, so approving it later can never collide.
    with pytest.raises(ReservationConflict):
        book(UserFactory(username="grace", role="teacher"), all_nodes=True, start=tomorrow_at(19), end=tomorrow_at(20))


@pytest.mark.parametrize("how", ["approved", "rejected", "cancelled by its owner"])
def test_the_approve_or_reject_notice_goes_once_the_request_is_decided(lab, teacher, client, how):
    first, second = UserFactory(username="root", role="admin"), UserFactory(username="ops", role="admin")
    Quota.objects.create(user=teacher, reservation_approval_nodes=2)
    [big] = book(teacher, count=4, start=tomorrow_at(18), end=tomorrow_at(20))
    client.force_login(second)
    assert "approve or reject it" in client.get("/").content.decode()
    if how == "cancelled by its owner":
        reservation_cancel(by=teacher, reservation=big)
    else:
        reservation_decide(by=first, reservation=big, approve=how == "approved", reason="")
    # Every admin was asked; one answer is enough, so nobody is asked any more.
    assert "approve or reject it" not in client.get("/").content.decode()
    assert not first.notices.filter(read_at__isnull=True, ref__endswith=":pending").exists()


def test_a_series_notice_stays_until_its_last_pending_session_is_decided(lab, teacher):
    admin = UserFactory(username="root", role="admin")
    Quota.objects.create(user=teacher, reservation_approval_nodes=2, reservation_horizon_days=60)
    made = book(
        teacher,
        count=4,
        start=tomorrow_at(18),
        end=tomorrow_at(20),
        repeat_weekly_until=tomorrow_at(18).date() + dt.timedelta(weeks=1),
    )
    assert len(made) == 2 and all(r.status == ReservationStatus.PENDING for r in made)
    pending = admin.notices.filter(read_at__isnull=True, ref=f"reservation:{made[0].pk}:pending")
    reservation_decide(by=admin, reservation=made[0], approve=True)
    assert pending.exists()
    reservation_decide(by=admin, reservation=made[1], approve=True)
    assert not pending.exists()


def test_course_must_be_one_the_owner_teaches(lab, teacher):
    mine, theirs = CourseFactory(code="DL-101"), CourseFactory(code="CV-210")
    mine.teachers.add(teacher)
    [ok] = book(teacher, ["gpu01"], course=mine)
    assert ok.course == mine
    with pytest.raises(InvalidInput, match="You do not teach CV-210"):
        book(teacher, ["gpu02"], course=theirs)


def test_cancel_before_start_frees_the_nodes_and_only_owner_or_admin_may(lab, teacher):
    [reservation] = book(teacher, ["gpu01"])
    with pytest.raises(NotPermitted):
        reservation_cancel(by=UserFactory(username="grace", role="teacher"), reservation=reservation)
    cancelled = reservation_cancel(by=teacher, reservation=reservation)
    assert cancelled.status == ReservationStatus.CANCELLED
    assert not ReservationNode.objects.filter(holds=True).exists()
    book(UserFactory(username="grace", role="teacher"), ["gpu01"])  # the slot is free again


def test_cancel_during_the_window_ends_it_now(lab, teacher):
    [reservation] = book(teacher, ["gpu01"])
    later = tomorrow_at(15)
    ended = reservation_cancel(by=teacher, reservation=reservation, now=later)
    assert ended.status == ReservationStatus.ENDED and ended.ends_at == later
    assert ReservationNode.objects.get(reservation=reservation).ends_at == later


def test_weekly_series_keeps_local_wall_clock_across_dst(lab, teacher, settings):
    # Europe/Berlin leaves summer time on the last Sunday of October.
    settings.TIME_ZONE = "Europe/Berlin"
    # Next year's autumn is at most ~680 days ahead (from 1 January): a horizon that covers it on any day of the year.
    Quota.objects.create(user=teacher, reservation_horizon_days=800)
    today = timezone.localdate()
    first_day = dt.date(today.year + 1, 10, 13)
    start = timezone.make_aware(dt.datetime.combine(first_day, dt.time(14)))
    made = book(
        teacher,
        ["gpu01"],
        start=start,
        end=start + dt.timedelta(hours=2),
        repeat_weekly_until=dt.date(today.year + 1, 11, 10),
    )
    assert len(made) == 5 and len({r.series for r in made}) == 1
    local_starts = {timezone.localtime(r.starts_at).strftime("%a %H:%M") for r in made}
    assert local_starts == {f"{first_day:%a} 14:00"}
    utc_hours = sorted({r.starts_at.astimezone(dt.UTC).hour for r in made})
    assert utc_hours == [12, 13]  # 14:00 CEST then 14:00 CET


def test_a_series_is_all_or_nothing(lab, teacher):
    Quota.objects.create(user=teacher, reservation_horizon_days=365)
    book(teacher, ["gpu01"], start=tomorrow_at(14) + dt.timedelta(weeks=2), end=tomorrow_at(16) + dt.timedelta(weeks=2))
    with pytest.raises(ReservationConflict):
        book(teacher, ["gpu01"], repeat_weekly_until=(tomorrow_at(14) + dt.timedelta(weeks=3)).date())
    assert Reservation.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_fifty_teachers_press_reserve_at_once_exactly_one_wins(lab):
    teachers = [UserFactory(username=f"t{n:02d}", role="teacher") for n in range(50)]
    barrier = threading.Barrier(50)
    outcomes: list = [None] * 50

    def press(n: int) -> None:
        try:
            barrier.wait()
            outcomes[n] = book(
                teachers[n], ["gpu01", "gpu02", "gpu03"], start=tomorrow_at(14, n % 30), end=tomorrow_at(16)
            )
        except Exception as exc:  # noqa: BLE001 - collect whatever each one got
            outcomes[n] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=press, args=(n,)) for n in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    winners = [o for o in outcomes if isinstance(o, list)]
    losers = [o for o in outcomes if isinstance(o, ReservationConflict)]
    assert len(winners) == 1 and len(losers) == 49, [type(o).__name__ for o in outcomes]
    assert Reservation.objects.count() == 1 and ReservationNode.objects.count() == 3
    won = winners[0][0]
    for loser in losers:
        assert loser.status == 409
        assert {c["node"] for c in loser.conflicts} == {"gpu01", "gpu02", "gpu03"}
        assert loser.earliest_fit["starts_at"] == timezone.localtime(won.ends_at).isoformat()


def test_a_window_over_the_dst_night_counts_its_real_hours(lab, teacher, settings):
    settings.TIME_ZONE = "Europe/Berlin"
    Quota.objects.create(user=teacher, reservation_horizon_days=3650, reservation_max_hours=Decimal("4"))
    night = dt.date(timezone.localdate().year + 1, 10, 31)
    night -= dt.timedelta(days=(night.weekday() + 1) % 7)  # the last Sunday of October
    start = timezone.make_aware(dt.datetime.combine(night, dt.time(0)))
    end = timezone.make_aware(dt.datetime.combine(night, dt.time(4)))
    # 00:00-04:00 by the wall clock is five hours that night: the clocks go back at 03:00.
    with pytest.raises(QuotaExceeded, match="this one is 5"):
        book(teacher, ["gpu01"], start=start, end=end)
