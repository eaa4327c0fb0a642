"""Who may do what: one rule and one sentence each.

Services and selectors ask here and raise; pages and the API answer the same way (`portal.errors`): NotFound → 404 for
what the caller may not see (never saying whether it exists), NotPermitted → 403 for what they may see but not do. The
API's exception handler and the pages' middleware (`portal.web.middleware`) turn both into answers, so a refusal reads
the same on a page, in the API and from a service.
"""

from __future__ import annotations

from portal.accounts.models import User
from portal.errors import NotPermitted

# One sentence per rule.
RESERVATIONS_STAFF_ONLY = "Reservations are for teachers and admins; ask your teacher to book a lab session."
PROFILES_STAFF_ONLY = "Notebook profiles are for teachers and admins."
COURSE_NOTEBOOKS_STAFF_ONLY = "Your courses' notebooks are for teachers and admins."
USAGE_COURSE_STAFF_ONLY = "A course's usage is for its teachers and admins; ask for your own usage instead."
USAGE_LAB_ADMINS_ONLY = "The whole lab's usage is for admins."
ADMINS_ONLY = "Only admins {what}."
OWNER_OR_ADMIN = "Only its owner or an admin may {what}."
OWNER_TEACHER_OR_ADMIN = "Only its owner, a teacher of their course or an admin may {what}."
# What an owner (or an admin) does, named once for every place that asks.
RESERVATION_OWNER_ACTION = "open or cancel this reservation"
JOB_OWNER_ACTION = "cancel this job"


def is_staff(user: User) -> bool:
    """Teachers and admins: they book nodes, write notebook profiles and look after their courses."""
    return bool(user.is_authenticated and (user.is_teacher or user.is_lab_admin))


def require_staff(user: User, sentence: str) -> None:
    """`sentence` is one of the *_STAFF_ONLY rules above."""
    if not is_staff(user):
        raise NotPermitted(sentence)


def require_admin(user: User, what: str) -> None:
    """`what` is a verb phrase: "approve reservations"."""
    if not user.is_lab_admin:
        raise NotPermitted(ADMINS_ONLY.format(what=what))


def is_owner_or_admin(user: User, owner_id: int | None) -> bool:
    return owner_id == user.pk or user.is_lab_admin


def require_owner_or_admin(user: User, owner_id: int | None, what: str) -> None:
    """`what` is a verb phrase: "cancel this job"."""
    if not is_owner_or_admin(user, owner_id):
        raise NotPermitted(OWNER_OR_ADMIN.format(what=what))
