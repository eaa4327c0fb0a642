"""Usage's reads and who may see what: everyone their own work, teachers the work booked to their courses, admins
the whole lab.

Every report starts from `allocations_visible_to` or `efficiency_visible_to` and narrows from there; the API and the
pages never filter by role themselves. Asking for what one may not see is a NotFound (a course one does not teach,
another student), never an empty answer that would say it exists; a student asking for a course at all is refused.

A course's usage is its ledger entries: the work booked to it. Who sees which entries is
`accounts.selectors.work_visible_to`, the rule jobs and notebooks follow: a teacher (a teaching assistant, of
the students) sees the entries booked to their course in its term, never a person's work booked to no course or to
another course.
"""

from __future__ import annotations

import dataclasses

from django.db import connection
from django.db.models import Q, QuerySet

from accounts.errors import NotFound, NotPermitted
from accounts.models import Course, User
from accounts.permissions import USAGE_COURSE_STAFF_ONLY, looks_after_courses
from accounts.selectors import courses_staffed_by, people_of_courses_staffed_by, students_of, work_visible_to
from labs.ledger import held_seconds
from labs.models import Allocation, AllocationKind, HolderEfficiency, Reservation
from labs.usage import accounting, dayreport
from labs.usage.accounting import Period, UsageRow

USE_KINDS = (AllocationKind.NOTEBOOK, AllocationKind.JOB)  # reservations hold nodes; the work on them is the use


def _students_of(courses: QuerySet[Course]) -> QuerySet[User]:
    return students_of(courses).values("pk")


def _counted_for(course: Course) -> Q:
    """The one rule of a course's usage: the work booked to it (a person's work booked to no course is theirs)."""
    return Q(course=course)


@dataclasses.dataclass(frozen=True)
class Scope:
    """What a report covers: the viewer, and optionally one course or one person they may see."""

    viewer: User
    course: Course | None = None
    person: User | None = None


def scope_for(viewer: User, *, course_code: str | None = None, username: str | None = None) -> Scope:
    """Check what the viewer asks for; NotPermitted for a student asking for a course, NotFound for what they may
    not see."""
    course = person = None
    if course_code:
        if not looks_after_courses(viewer):
            raise NotPermitted(USAGE_COURSE_STAFF_ONLY)
        course = courses_staffed_by(viewer).filter(code=course_code).first()
        if course is None:
            raise NotFound("No such course among the ones you look after.")
    if username:
        person = people_of_courses_staffed_by(viewer).named(username).first()  # whatever the case typed
        if person is None:
            raise NotFound("No such person among the ones whose usage you may see.")
    return Scope(viewer=viewer, course=course, person=person)


def allocations_visible_to(viewer: User) -> QuerySet[Allocation]:
    if viewer is None or not viewer.is_authenticated:
        return Allocation.objects.none()
    return Allocation.objects.filter(work_visible_to(viewer, owner="user", course="course", at="starts_at"))


def allocations_in_scope(scope: Scope, *, kinds: tuple[str, ...] = USE_KINDS) -> QuerySet[Allocation]:
    rows = allocations_visible_to(scope.viewer).filter(kind__in=kinds)
    if scope.course is not None:
        rows = rows.filter(_counted_for(scope.course))
    if scope.person is not None:
        rows = rows.filter(user=scope.person)
    return rows


def _summed_holders(scope: Scope, kinds: tuple[str, ...]) -> dayreport.Holders | None:
    """The scope in the partial sums' terms, when it sees every entry of its person or course: an admin, or a person
    asking for their own work. A teacher sees their course's entries by the day each began (inside the term), which
    the sums do not keep apart: their reports read the ledger."""
    viewer = scope.viewer
    if viewer is None or not viewer.is_authenticated:
        return None
    if not (viewer.is_lab_admin or (scope.person is not None and scope.person.pk == viewer.pk)):
        return None
    return dayreport.Holders(
        kinds=tuple(kinds),
        user_id=scope.person.pk if scope.person is not None else None,
        course_id=scope.course.pk if scope.course is not None else None,
    )


def usage_report(scope: Scope, window: Period, group_by: str, *, kinds: tuple[str, ...] = USE_KINDS) -> list[UsageRow]:
    allocations = allocations_in_scope(scope, kinds=kinds)
    summed = group_by in accounting.TIME_GROUPS or group_by in dayreport.SUMMED_KEYS
    holders = _summed_holders(scope, kinds) if summed else None
    if holders is None:
        return accounting.usage(allocations, window, group_by)
    if group_by in accounting.TIME_GROUPS:
        return dayreport.by_time(allocations, holders, window, group_by)
    return dayreport.by_key(allocations, holders, window, group_by)


def usage_entries(scope: Scope, window: Period, *, kinds: tuple[str, ...] = USE_KINDS):
    return accounting.entries(allocations_in_scope(scope, kinds=kinds), window)


def usage_entries_csv(scope: Scope, window: Period, *, kinds: tuple[str, ...] = USE_KINDS):
    """The entries as CSV bytes written by PostgreSQL; None elsewhere (use `usage_entries`)."""
    if connection.vendor != "postgresql":
        return None
    return accounting.entries_copy(allocations_in_scope(scope, kinds=kinds), window)


def efficiency_visible_to(viewer: User) -> QuerySet[HolderEfficiency]:
    if viewer is None or not viewer.is_authenticated:
        return HolderEfficiency.objects.none()
    return HolderEfficiency.objects.filter(work_visible_to(viewer, owner="user", course="course", at="started_at"))


def efficiency_in_scope(scope: Scope, window: Period) -> QuerySet[HolderEfficiency]:
    """Efficiency rows of the holders that overlap the window, newest first."""
    rows = efficiency_visible_to(scope.viewer).filter(started_at__lt=window.until).exclude(ended_at__lte=window.start)
    if scope.course is not None:
        rows = rows.filter(_counted_for(scope.course))
    if scope.person is not None:
        rows = rows.filter(user=scope.person)
    return rows.select_related("user", "course", "node").order_by("-started_at", "holder_ref")


# --- Reservations: what their course used of what they held ----------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ReservationUse:
    reservation: Reservation
    reserved_seconds: float
    used_seconds: float

    @property
    def utilisation_pct(self) -> float | None:
        return 100 * self.used_seconds / self.reserved_seconds if self.reserved_seconds else None

    @property
    def no_show(self) -> bool:
        """Held GPU time and nobody of its course used any of it."""
        return self.reserved_seconds > 0 and self.used_seconds == 0


def reservations_in_scope(scope: Scope, window: Period) -> QuerySet[Reservation]:
    viewer = scope.viewer
    if not looks_after_courses(viewer):
        return Reservation.objects.none()
    rows = Reservation.objects.filter(starts_at__lt=window.until, ends_at__gt=window.start)
    if not viewer.is_lab_admin:
        rows = rows.filter(Q(owner=viewer) | Q(course__in=courses_staffed_by(viewer)))
    if scope.course is not None:
        rows = rows.filter(course=scope.course)
    return rows.select_related("owner", "course").order_by("starts_at", "pk")


def reservation_use(reservation: Reservation, window: Period) -> ReservationUse:
    """GPU-seconds the reservation held in the ledger within the window, and the GPU-seconds its course's people
    (its owner, the course's entries, its enrolled students) used on those GPUs while it held them: two queries,
    its entries and the work on their GPUs, cut here (as `labs.ledger.gpu_seconds` cuts them: `held_seconds`)."""
    if window.until <= window.start:
        return ReservationUse(reservation=reservation, reserved_seconds=0.0, used_seconds=0.0)
    entries = Allocation.objects.filter(kind=AllocationKind.RESERVATION, ref=f"reservation:{reservation.pk}")
    held = [
        (gpu_id, max(starts_at, window.start), min(ends_at or window.until, window.until), float(share))
        for gpu_id, starts_at, ends_at, share in accounting.in_window(entries, window)
        .order_by()
        .values_list("gpu_id", "starts_at", "ends_at", "share")
    ]
    reserved = sum(share * max(0.0, (end - start).total_seconds()) for _, start, end, share in held)
    held = [row for row in held if row[2] > row[1]]
    used = 0.0
    if held:
        people = Q(user=reservation.owner_id)
        if reservation.course_id:
            course = Course.objects.filter(pk=reservation.course_id)
            people |= Q(course_id=reservation.course_id) | Q(user__in=_students_of(course))
        span = Period(start=min(row[1] for row in held), end=max(row[2] for row in held), now=window.now)
        work = Allocation.objects.filter(people, kind__in=USE_KINDS, gpu_id__in={row[0] for row in held})
        on_gpu: dict[int, list[tuple]] = {}
        for gpu_id, starts_at, ends_at, share in (
            accounting.in_window(work, span).order_by().values_list("gpu_id", "starts_at", "ends_at", "share")
        ):
            on_gpu.setdefault(gpu_id, []).append((starts_at, ends_at, float(share)))
        for gpu_id, start, end, _ in held:
            used += sum(share * held_seconds(s, e, start=start, end=end) for s, e, share in on_gpu.get(gpu_id, ()))
    return ReservationUse(reservation=reservation, reserved_seconds=reserved, used_seconds=used)


def reservations_use(scope: Scope, window: Period, *, limit: int = 200) -> list[ReservationUse]:
    return [reservation_use(reservation, window) for reservation in reservations_in_scope(scope, window)[:limit]]
