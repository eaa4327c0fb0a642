"""Reads about reservations: who may use, see or open which, the week timeline, what holds a node now and next.

`reservation_people` is the one rule for who may work inside a reservation (placement, the scheduling pass, job
submission, the tick's eviction and no-show rules, the live GPU grid all ask it or its person-keyed form)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable

from django.db.models import Count, QuerySet, prefetch_related_objects
from django.utils import timezone

from accounts.errors import NotFound
from accounts.models import Course, Enrollment, User
from accounts.permissions import (
    RESERVATION_OWNER_ACTION,
    RESERVATIONS_STAFF_ONLY,
    is_staff,
    require_owner_or_admin,
    require_staff,
)
from accounts.prepared import Prepared
from accounts.selectors import courses_in_term
from labs.models import HOLDING_STATUSES, Node, Reservation, ReservationNode, ReservationStatus


def _members_in_term(
    *, at: dt.datetime, course_ids: Iterable[int] | None = None, user_ids: Iterable[int] | None = None
) -> list[tuple[int, int]]:
    """(course id, user id) for the students and teachers of courses in term on the lab's date of `at`.

    Asked about no course or no person, it answers at once: compiling the two queries cost more than they do."""
    if course_ids is not None:
        course_ids = list(course_ids)
    if user_ids is not None:
        user_ids = list(user_ids)
    if course_ids == [] or user_ids == []:
        return []
    in_term = courses_in_term(today=timezone.localdate(at))
    if course_ids is not None:
        in_term = in_term.filter(pk__in=course_ids)
    pairs = []
    for through in (Enrollment.objects, Course.teachers.through.objects):
        rows = through.filter(course_id__in=in_term.values("pk"))
        if user_ids is not None:
            rows = rows.filter(user_id__in=user_ids)
        pairs.extend(rows.values_list("course_id", "user_id"))
    return pairs


def reservation_people(reservations: Iterable[Reservation], *, at: dt.datetime) -> dict[int, frozenset[int]]:
    """Per reservation id, the user ids who may work inside it at `at`: its owner, and the students and teachers
    of its course while that course is in term (a course whose term ended gives its reservations to nobody)."""
    reservations = list(reservations)
    members: dict[int, set[int]] = defaultdict(set)
    for course_id, user_id in _members_in_term(at=at, course_ids={r.course_id for r in reservations if r.course_id}):
        members[course_id].add(user_id)
    return {r.pk: frozenset({r.owner_id} | members.get(r.course_id, set())) for r in reservations}


def may_use_reservation(reservation: Reservation, user: User, *, at: dt.datetime) -> bool:
    """Whether `user` may work inside the reservation at `at` (see `reservation_people`)."""
    return user.pk in reservation_people([reservation], at=at)[reservation.pk]


def reservation_courses_of(user_ids: Iterable[int], *, at: dt.datetime) -> dict[int, frozenset[int]]:
    """The same rule seen from the people: per user id, the courses whose reservations they may use at `at`.

    For the live GPU grid, which knows a reservation only by its owner and course (its holder in the ledger)."""
    user_ids = set(user_ids)
    courses: dict[int, set[int]] = {user_id: set() for user_id in user_ids}
    for course_id, user_id in _members_in_term(at=at, user_ids=user_ids):
        courses[user_id].add(course_id)
    return {user_id: frozenset(ids) for user_id, ids in courses.items()}


def not_yours(reservation: Reservation) -> str:
    """The one sentence for a reservation someone may not work in, wherever they ask (jobs, notebooks, placement)."""
    return f"Reservation {reservation.pk} is not yours, nor for a course of yours that is in term."


# What the API's list shows of each reservation (labs.reservations.api.ReservationOut), its nodes by name.
_LISTED_FIELDS = (
    "title",
    "starts_at",
    "ends_at",
    "status",
    "status_reason",
    "owner__username",
    "created_by__username",
    "course__code",
    "requested",
    "series",
)


def _as_staff_see_them() -> QuerySet[Reservation]:
    return Reservation.objects.select_related("owner", "course", "created_by")


def _sees_bookings(user: User) -> bool:
    """Who sees the lab's bookings as the API lists them: teachers and admins, all of them; students none."""
    return is_staff(user)


def reservations_visible_to(user: User) -> QuerySet[Reservation]:
    """Reservations as the API shows them (`_sees_bookings`)."""
    if not _sees_bookings(user):
        return Reservation.objects.none()
    return _as_staff_see_them().prefetch_related("nodes")


# A booking's page (its owner's look at it, a cancel) reads it by id: compiled once (accounts.prepared).
_STAFF_SEE_BY_ID = Prepared(lambda pk: _as_staff_see_them().filter(pk=pk), pk=Reservation._meta.pk)


# The list teachers' tools poll, and its nodes' names for the same span: compiled once (accounts.prepared).
_LISTED = Prepared(
    lambda start, end: _as_staff_see_them().only(*_LISTED_FIELDS).filter(starts_at__lt=end, ends_at__gt=start),
    start=Reservation._meta.get_field("ends_at"),
    end=Reservation._meta.get_field("starts_at"),
)
_LISTED_NODE_NAMES = Prepared(
    lambda start, end: (
        ReservationNode.objects.filter(reservation__starts_at__lt=end, reservation__ends_at__gt=start)
        .order_by()
        .values_list("reservation_id", "node__name")
    ),
    start=Reservation._meta.get_field("ends_at"),
    end=Reservation._meta.get_field("starts_at"),
)


def reservations_listed(user: User, *, start: dt.datetime, end: dt.datetime) -> list[Reservation]:
    """The API's list (every teacher's browsing asks for it): what `reservations_visible_to` gives `user` that
    overlaps [start, end), reading only what the list shows, each with `node_names` (sorted) from one plain query
    rather than a related manager per reservation."""
    if not _sees_bookings(user):
        return []
    reservations = _LISTED.objects(start, end)
    names: dict[int, list[str]] = {reservation.pk: [] for reservation in reservations}
    if names:
        for reservation_id, name in _LISTED_NODE_NAMES.rows(start, end):
            if reservation_id in names:  # one booked after the first read (its own snapshot) waits for the next list
                names[reservation_id].append(name)
    for reservation in reservations:
        reservation.node_names = sorted(names[reservation.pk])
    return reservations


def reservation_for(user: User, reservation_id: int) -> Reservation:
    """The reservation, if `user` may act on it (its owner or an admin).

    Raises NotFound if there is no such reservation and NotPermitted if the caller may see it
    listed but not open it; students are refused before they learn whether it exists.
    """
    require_staff(user, RESERVATIONS_STAFF_ONLY)  # staff see them all (reservations_visible_to)
    found = _STAFF_SEE_BY_ID.objects(reservation_id)
    if not found:
        raise NotFound("No such reservation.")
    reservation = found[0]
    prefetch_related_objects(found, "nodes")
    require_owner_or_admin(user, reservation.owner_id, RESERVATION_OWNER_ACTION)
    return reservation


def reservation_label(reservation: Reservation, viewer: User, usable: bool) -> dict[str, object]:
    """What `viewer` may know of a booking: staff see who and what; students only those they may use."""
    mine = reservation.owner_id == viewer.pk
    if is_staff(viewer) or mine or usable:
        course = f" · {reservation.course.code}" if reservation.course_id else ""
        return {"title": reservation.title, "who": f"{reservation.owner.username}{course}", "mine": mine}
    return {"title": "Reserved", "who": "", "mine": False}


# What the week reads of each booked window: its place and time, and what reservation_label shows of its reservation.
_WEEK_FIELDS = (
    "node_id",
    "starts_at",
    "ends_at",
    "reservation__title",
    "reservation__status",
    "reservation__owner__username",
    "reservation__course__code",
)


# The week page's queries, which every look at the reservations makes: compiled once (accounts.prepared).
_WEEK_ROWS = Prepared(
    lambda start, end: (
        ReservationNode.objects.filter(holds=True, starts_at__lt=end, ends_at__gt=start)
        .exclude(reservation__status=ReservationStatus.CANCELLED)
        .select_related("reservation__owner", "reservation__course")
        .only(*_WEEK_FIELDS)
        .order_by("starts_at")
    ),
    start=ReservationNode._meta.get_field("ends_at"),
    end=ReservationNode._meta.get_field("starts_at"),
)
_NODES_BY_NAME = Prepared(lambda: Node.objects.only("name", "status").order_by("name"))
_MINE = Prepared(
    lambda owner, now: (
        Reservation.objects.filter(owner=owner, ends_at__gt=now, status__in=HOLDING_STATUSES)
        .select_related("course")
        .annotate(node_count=Count("nodes"))
        .order_by("starts_at")
    ),
    owner=Reservation._meta.get_field("owner"),
    now=Reservation._meta.get_field("ends_at"),
)


def reservation_week(viewer: User, monday: dt.date) -> dict[str, object]:
    """The week timeline: one row per node, each booking placed by its share of the week.

    Positions come from real durations, so a week with a DST change (167 or 169 hours) still lines up.
    """
    tz = timezone.get_current_timezone()
    days = [monday + dt.timedelta(days=n) for n in range(8)]
    # In UTC: Python subtracts two times of one zone by the wall clock, which is wrong across DST.
    edges = [timezone.make_aware(dt.datetime.combine(day, dt.time.min), tz).astimezone(dt.UTC) for day in days]
    start = edges[0]
    end = edges[-1]
    total = (end - start).total_seconds()

    def pct(moment: dt.datetime) -> float:
        return round(100 * (min(max(moment, start), end) - start).total_seconds() / total, 3)

    rows = _WEEK_ROWS.objects(start, end)
    # Who may use a booking changes only what a student is shown of it (reservation_label): staff (is_staff, the
    # label's own test) see every one.
    reservations = {} if is_staff(viewer) else {row.reservation_id: row.reservation for row in rows}
    people = reservation_people(reservations.values(), at=timezone.now())
    blocks: dict[int, list[dict]] = {}
    for row in rows:
        reservation = row.reservation
        label = reservation_label(reservation, viewer, viewer.pk in people.get(reservation.pk, ()))
        blocks.setdefault(row.node_id, []).append(
            {
                **label,
                "id": reservation.pk,
                "status": reservation.status,
                "left": pct(row.starts_at),
                "width": max(0.4, round(pct(row.ends_at) - pct(row.starts_at), 3)),
                "starts_at": row.starts_at,
                "ends_at": row.ends_at,
                "can_open": label["mine"] or viewer.is_lab_admin,
            }
        )
    nodes = [
        {"name": node.name, "status": node.status, "blocks": blocks.get(node.pk, [])}
        for node in _NODES_BY_NAME.objects()
    ]
    # The same week as a table (the timeline's alternative, readable without colour or a wide screen): one row per
    # booked window, with its nodes.
    bookings: dict[tuple, dict] = {}
    for node in nodes:
        for block in node["blocks"]:
            key = (block["id"], block["starts_at"], block["ends_at"])
            bookings.setdefault(key, {**block, "nodes": []})["nodes"].append(node["name"])
    return {
        "monday": monday,
        "days": [{"date": day, "left": pct(edge)} for day, edge in zip(days[:7], edges[:7], strict=True)],
        "nodes": nodes,
        "bookings": sorted(bookings.values(), key=lambda booking: (booking["starts_at"], booking["id"])),
        "now": pct(timezone.now()) if start <= timezone.now() < end else None,
        "previous": monday - dt.timedelta(days=7),
        "next": monday + dt.timedelta(days=7),
    }


def reservations_of(user: User, *, now: dt.datetime | None = None) -> list[Reservation]:
    """My reservations that have not ended yet, soonest first, each with `node_count` (the pages list how many)."""
    return _MINE.objects(user.pk, now or timezone.now())


def reservations_pending() -> QuerySet[Reservation]:
    return (
        Reservation.objects.filter(status=ReservationStatus.PENDING)
        .select_related("owner", "course")
        .prefetch_related("nodes")
        .order_by("starts_at")
    )


def node_reservations(viewer: User, node_ids: list[int], *, now: dt.datetime | None = None) -> dict[int, dict]:
    """Per node, the current and the next holding reservation, as far as `viewer` may know."""
    now = now or timezone.now()
    found: dict[int, dict] = {node_id: {"current": None, "next": None} for node_id in node_ids}
    rows = list(
        ReservationNode.objects.filter(node_id__in=node_ids, holds=True, ends_at__gt=now)
        .exclude(reservation__status__in=[ReservationStatus.CANCELLED, ReservationStatus.ENDED])
        .select_related("reservation__owner", "reservation__course")
        .order_by("starts_at")
    )
    people = reservation_people({row.reservation_id: row.reservation for row in rows}.values(), at=now)
    for row in rows:
        slot = "current" if row.starts_at <= now else "next"
        if found[row.node_id][slot] is None:
            label = reservation_label(row.reservation, viewer, viewer.pk in people[row.reservation_id])
            found[row.node_id][slot] = {
                "title": label["title"],
                "owner": label["who"].split(" · ")[0] or None,
                "starts_at": row.starts_at,
                "ends_at": row.ends_at,
                "status": row.reservation.status,
            }
    return found
