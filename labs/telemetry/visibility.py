"""Who may know who holds a GPU: the one place that decides it, for the API, the pages and the WebSocket.

- students see whether a GPU is free or busy, their own sessions on it, and the reservations they may use;
- teachers also see the holders booked to a course they teach that is in term (never a student's work booked to no
  course or to another course: `accounts.selectors.work_visible_to` is the rule, this its live form);
- admins see everyone.
Utilisation, memory, temperature and power are no secret; health alerts are for admins.

`available` tells the viewer whether they could start something there now: the node is ready, its
samples are fresh, and nothing holds the GPU but a reservation they may use (their own, or one for
a course they take or teach).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from django.utils import timezone

from accounts.models import Course, Role, User
from accounts.selectors import courses_in_term, role_of
from labs.models import AllocationKind, NodeStatus
from labs.reservations.selectors import reservation_courses_of

PUBLIC_FIELDS = (
    "node",
    "index",
    "uuid",
    "model",
    "util_pct",
    "mem_used_mb",
    "mem_total_mb",
    "temp_c",
    "power_w",
    "sampled_at",
    "stale",
    "node_status",
    "node_reason",
)


@dataclasses.dataclass(frozen=True)
class Viewer:
    user_id: int
    username: str
    role: str
    course_ids: frozenset[int] = frozenset()  # courses whose reservations they may use: taken or taught, in term
    taught_course_ids: frozenset[int] = frozenset()

    @property
    def is_admin(self) -> bool:
        return self.role == Role.ADMIN


def viewers_for(user_ids: Iterable[int]) -> dict[int, Viewer]:
    """What the database says about these viewers' places in the lab, in four queries however many.

    Inactive or unknown accounts are left out.
    """
    ids = set(user_ids)
    users = {user.pk: user for user in User.objects.filter(pk__in=ids, is_active=True)}
    now = timezone.now()
    # The courses whose reservations each viewer may use (the reservations' rule, term included), and of those the
    # ones they teach: an ended course shows its people nothing more than any student sees.
    usable = reservation_courses_of(users, at=now)
    taught: dict[int, set[int]] = {pk: set() for pk in users}
    for user_id, course_id in Course.teachers.through.objects.filter(
        user_id__in=users, course_id__in=courses_in_term(today=timezone.localdate(now)).values("id")
    ).values_list("user_id", "course_id"):
        taught[user_id].add(course_id)
    viewers = {}
    for pk, user in users.items():
        viewers[pk] = Viewer(
            user_id=pk,
            username=user.username,
            role=role_of(user),
            course_ids=usable[pk],
            taught_course_ids=frozenset(taught[pk]),
        )
    return viewers


def viewer_for(user: User) -> Viewer:
    viewer = viewers_for([user.pk]).get(user.pk)
    if viewer is None:  # an inactive account: it sees as a student does, with nothing of its own
        return Viewer(user_id=user.pk, username=user.username, role=Role.STUDENT)
    return viewer


def may_see(viewer: Viewer, holder: dict) -> bool:
    if viewer.is_admin or holder["user_id"] == viewer.user_id or leaves_usable(viewer, holder):
        return True
    if viewer.role == Role.TEACHER:
        return holder["course_id"] in viewer.taught_course_ids
    return False


def leaves_usable(viewer: Viewer, holder: dict) -> bool:
    """Whether this holder leaves the GPU usable by the viewer: a reservation that is theirs, or their course's
    (`viewer.course_ids`: from `reservation_courses_of`, the reservations' rule)."""
    return holder["kind"] == AllocationKind.RESERVATION and (
        holder["user_id"] == viewer.user_id or holder["course_id"] in viewer.course_ids
    )


@dataclasses.dataclass(frozen=True)
class HolderIndex:
    """Who appears among some GPUs' holders: enough to tell which viewers see them differently."""

    users: frozenset[int]
    courses: frozenset[int]
    reserved_courses: frozenset[int]  # courses of the reservations among them


def holder_index(states: Iterable[dict]) -> HolderIndex:
    users: set[int] = set()
    courses: set[int] = set()
    reserved: set[int] = set()
    for state in states:
        for holder in state.get("holders", ()):
            users.add(holder["user_id"])
            if holder["course_id"] is not None:
                courses.add(holder["course_id"])
                if holder["kind"] == AllocationKind.RESERVATION:
                    reserved.add(holder["course_id"])
    return HolderIndex(frozenset(users), frozenset(courses), frozenset(reserved))


def concerns(viewer: Viewer, index: HolderIndex) -> bool:
    """Whether any of these holders looks different to this viewer than to any other of the same role.

    Exactly what may_see, leaves_usable and `mine` depend on beyond the role: the viewer's own entries,
    reservations of their courses, and for teachers the entries booked to their courses.
    """
    if viewer.user_id in index.users or not viewer.course_ids.isdisjoint(index.reserved_courses):
        return True
    return viewer.role == Role.TEACHER and not viewer.taught_course_ids.isdisjoint(index.courses)


def audience_key(viewer: Viewer, index: HolderIndex) -> object:
    """Viewers with equal keys get the same view of these holders, so one encoding serves them all."""
    return viewer if concerns(viewer, index) else viewer.role


def public_gpu(state: dict[str, Any], viewer: Viewer) -> dict[str, Any]:
    holders = state.get("holders") or []
    out = {name: state.get(name) for name in PUBLIC_FIELDS}
    if holders:
        visible = [holder for holder in holders if may_see(viewer, holder)]
        out["holder"] = {
            "busy": True,
            "share": round(sum(holder["share"] for holder in holders), 3),
            "holders": [
                {
                    "user": holder["user"],
                    "kind": holder["kind"],
                    "ref": holder["ref"],
                    "course": holder["course"],
                    "share": holder["share"],
                    "since": holder["since"],
                    "mine": holder["user_id"] == viewer.user_id,
                }
                for holder in visible
            ],
            "others": len(holders) - len(visible),
        }
    else:
        out["holder"] = None
    out["available"] = (
        state.get("node_status") == NodeStatus.READY
        and not state.get("stale", True)
        and all(leaves_usable(viewer, holder) for holder in holders)
    )
    if viewer.is_admin:
        out["alerts"] = state.get("alerts") or []
    return out


def public_gpus(states: Iterable[dict[str, Any]], viewer: Viewer) -> list[dict[str, Any]]:
    return [public_gpu(state, viewer) for state in states]


# Which public fields show a change of a record's field (the rest are the same name in both).
_SHOWN_AS = {
    "holders": ("holder", "available"),
    "stale": ("stale", "available"),
    "node_status": ("node_status", "available"),
}
IDENTITY = ("node", "index", "sampled_at")


def public_changes(
    states: Iterable[dict[str, Any]], changed: dict[str, list[str]], viewer: Viewer
) -> list[dict[str, Any]]:
    """What changed, as this viewer may see it: each GPU's node, index and sample time, and its changed fields.

    A GPU whose changes this viewer cannot see (an admin-only alert, say) is left out.
    """
    out = []
    for state in states:
        names = changed.get(state["key"])
        public = public_gpu(state, viewer)
        if names is None:  # a sender that does not say: the whole record
            out.append(public)
            continue
        shown = {shown for name in names for shown in _SHOWN_AS.get(name, (name,)) if shown in public}
        if shown:
            out.append({name: public[name] for name in (*IDENTITY, *sorted(shown))})
    return out
