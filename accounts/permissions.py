"""Who may do what: one rule and one sentence each.

Services and selectors ask here and raise; pages and the API answer the same way (`accounts.errors`): NotFound → 404 for
what the caller may not see (never saying whether it exists), NotPermitted → 403 for what they may see but not do. The
API's exception handler and the pages' middleware (`portal.web.middleware`) turn both into answers, so a refusal reads
the same on a page, in the API and from a service.
"""

from __future__ import annotations

from decimal import Decimal

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from accounts.errors import NotPermitted, QuotaExceeded
from accounts.models import CourseRole, Enrollment, User

# One sentence per rule (marked here, translated where it is raised: the person's language).
RESERVATIONS_STAFF_ONLY = gettext_noop(
    "Reservations are for teachers and admins; ask your teacher to book a lab session."
)
PROFILES_STAFF_ONLY = gettext_noop("Notebook profiles are for teachers and admins.")
COURSE_NOTEBOOKS_STAFF_ONLY = gettext_noop("Your courses' notebooks are for teachers, teaching assistants and admins.")
ROSTERS_TEACHERS_ONLY = gettext_noop(
    "Course rosters are for the course's teachers and admins; ask a teacher of the course."
)
USAGE_COURSE_STAFF_ONLY = gettext_noop(
    "A course's usage is for its teachers, teaching assistants and admins; ask for your own usage instead."
)
USAGE_LAB_ADMINS_ONLY = gettext_noop("The whole lab's usage is for admins.")
ADMINS_ONLY = gettext_noop("Only admins {what}.")
OWNER_OR_ADMIN = gettext_noop("Only its owner or an admin may {what}.")
OWNER_TEACHER_OR_ADMIN = gettext_noop(
    "Only its owner, a teacher or teaching assistant of their course or an admin may {what}."
)
# Sign-in paused (portal/web/lockout.py): a locked (username, address) pair, too many tries from one address.
SIGNIN_LOCKED = gettext_noop(
    "Too many failed sign-ins for {username} from your network address: signing in as {username} from here is"
    " paused until {at} (in {wait}). From another network you can sign in now; lab staff can lift the lock sooner,"
    " or reset your password if you forgot it."
)
SIGNIN_THROTTLED = gettext_noop("Too many sign-in attempts from your network address: try again in {wait}.")
# What an owner (or an admin) does, named once for every place that asks.
RESERVATION_OWNER_ACTION = gettext_noop("open or cancel this reservation")
JOB_OWNER_ACTION = gettext_noop("cancel this job")
# A budget set to block at 100 %: new notebooks and jobs that would count against it are refused (labs.budgets).
BUDGET_EXHAUSTED = gettext_noop(
    "The budget “{name}” is used up: {used} of {allowed} GPU-hours {period}. New notebooks and jobs that count"
    " against it are refused until {resets}; ask {whom} to raise it."
)
BUDGET_OVER_WARNING = gettext_noop(
    "The budget “{name}” is used up ({used} of {allowed} GPU-hours {period}); your work still starts, but please"
    " tell {whom}."
)
BUDGET_LIMIT = "budget_gpu_hours"


def is_staff(user: User) -> bool:
    """Teachers and admins: they book nodes, write notebook profiles and look after their courses."""
    return bool(user.is_authenticated and (user.is_teacher or user.is_lab_admin))


def require_staff(user: User, sentence: str) -> None:
    """`sentence` is one of the *_STAFF_ONLY rules above."""
    if not is_staff(user):
        raise NotPermitted(_(sentence))


def require_admin(user: User, what: str) -> None:
    """`what` is a verb phrase: "approve reservations"."""
    if not user.is_lab_admin:
        raise NotPermitted(_(ADMINS_ONLY).format(what=_(str(what))))


def is_owner_or_admin(user: User, owner_id: int | None) -> bool:
    return owner_id == user.pk or user.is_lab_admin


def require_owner_or_admin(user: User, owner_id: int | None, what: str) -> None:
    """`what` is a verb phrase: "cancel this job"."""
    if not is_owner_or_admin(user, owner_id):
        raise NotPermitted(_(OWNER_OR_ADMIN).format(what=_(str(what))))


def is_assistant(user: User) -> bool:
    """A teaching assistant: someone enrolled in at least one course as its assistant (their role stays student).

    An assistant sees the students of the courses they assist and the notebooks and usage those students book to
    the course, and may stop those notebooks (`accounts.selectors.courses_staffed_by`, `work_visible_to`);
    everything `is_staff` guards (booking nodes, notebook profiles, quotas, rosters) stays closed to them."""
    return bool(
        user.is_authenticated and Enrollment.objects.filter(user_id=user.pk, role=CourseRole.ASSISTANT).exists()
    )


def looks_after_courses(user: User) -> bool:
    """Teachers, admins and teaching assistants: the people with a "my courses' notebooks" page."""
    return is_staff(user) or is_assistant(user)


def require_looks_after_courses(user: User, sentence: str) -> None:
    """`sentence` is COURSE_NOTEBOOKS_STAFF_ONLY."""
    if not looks_after_courses(user):
        raise NotPermitted(_(sentence))


def _hours(value: Decimal) -> str:
    return f"{value:,.1f}"


def budget_exhausted_sentence(
    *, name: str, used: Decimal, allowed: Decimal, period: str, resets: str, whom: str, blocks: bool = True
) -> str:
    """The sentence of a used-up budget, for the refusal (blocks) and for the warning (warn only): page and API."""
    template = _(BUDGET_EXHAUSTED if blocks else BUDGET_OVER_WARNING)
    return template.format(
        name=name, used=_hours(used), allowed=_hours(allowed), period=period, resets=resets, whom=whom
    )


def refuse_over_budget(*, name: str, used: Decimal, allowed: Decimal, period: str, resets: str, whom: str) -> None:
    """403 quota_exceeded naming the budget, with `limit`, `used` and `allowed` as API.md says."""
    raise QuotaExceeded(
        budget_exhausted_sentence(name=name, used=used, allowed=allowed, period=period, resets=resets, whom=whom),
        limit=BUDGET_LIMIT,
        used=float(used),
        allowed=float(allowed),
    )
