"""Reads about people: their courses, the quota in force for them, and their API tokens."""

from __future__ import annotations

import datetime as dt
import hashlib

from django.core.exceptions import ValidationError
from django.db.models import Count, Q, QuerySet
from django.db.models.functions import TruncDate
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.errors import NotFound
from accounts.models import ApiToken, Course, CourseRole, Enrollment, Role, RosterInvitation, User
from accounts.permissions import ROSTERS_TEACHERS_ONLY, require_staff
from accounts.prepared import Prepared
from accounts.timefmt import fmt_datetime


def people_by_role() -> dict[str, int]:
    """Active accounts per role, every role present (zero when nobody has it)."""
    counts = dict(User.objects.filter(is_active=True).values_list("role").annotate(n=Count("id")))
    return {role: counts.get(role, 0) for role in Role.values}


def work_visible_to(user: User | None, *, owner: str, course: str, at: str, assistants: bool = True) -> Q:
    """Whose work (jobs, notebook sessions, ledger entries, efficiency rows) a person may look at: the one rule, as
    a filter on the work's `owner` field, the `course` it is booked to and `at`, the moment it was booked (a job's
    submission, a session's request, a ledger entry's start).

    - signed out: nothing; an admin: everything;
    - everyone: their own work, all of it;
    - a course's teachers: the work booked to that course at a moment inside the course's term (its first day through
      its last, the lab's local date: `term_includes`, the rule `courses_in_term` uses). The term's end hides nothing
      booked in it: a teacher keeps reading the work of their course's term afterwards (its marks, its questions);
      work booked to the course before its term or after it (an admin's booking, a term moved) is not the course's;
    - a course's teaching assistants (with `assistants`; jobs leave them out): the same, of the course's students
      only — not the other assistants' work, nor the teachers'.

    Never a person's work booked to no course or to another course: being enrolled in someone's course shows them
    nothing of what you do outside it. The first two clauses need no query: `accounts.permissions.is_owner_or_admin`
    (a lookup of one row by id that already has its owner asks it first: `jobs.selectors.job_for`)."""
    if user is None or not user.is_authenticated:
        return Q(pk__in=[])
    if user.is_lab_admin:
        return Q()
    visible = Q(**{owner: user.pk})
    in_term = term_includes(TruncDate(at, tzinfo=timezone.get_current_timezone()), course=course)
    taught = list(Course.objects.filter(teachers=user).values_list("pk", flat=True))
    if taught:
        visible |= Q(**{f"{course}__in": taught}) & in_term
    if assistants:
        for course_id in courses_assisted_by(user).values_list("pk", flat=True):
            students = students_of(Course.objects.filter(pk=course_id)).values("pk")
            visible |= Q(**{course: course_id, f"{owner}__in": students}) & in_term
    return visible


def people_of_courses_staffed_by(user: User | None) -> QuerySet[User]:
    """The people a person may name (ask for the usage of): themselves; the people enrolled in the courses they teach
    (students and assistants); the students of the courses they assist; admins everyone. What is shown of them is
    still only `work_visible_to`."""
    if user is None or not user.is_authenticated:
        return User.objects.none()
    if user.is_lab_admin:
        return User.objects.all()
    taught = User.objects.filter(enrollments__course__teachers=user).values("pk")
    assisted = students_assisted_by(user).values("pk")
    return User.objects.filter(Q(pk=user.pk) | Q(pk__in=taught) | Q(pk__in=assisted))


def courses_assisted_by(user: User) -> QuerySet[Course]:
    """Courses this person is a teaching assistant of (any term)."""
    return Course.objects.filter(enrollments__user_id=user.pk, enrollments__role=CourseRole.ASSISTANT)


def students_of(courses: QuerySet[Course]) -> QuerySet[User]:
    """The people enrolled as students (not teaching assistants) in these courses."""
    return User.objects.filter(enrollments__course__in=courses, enrollments__role=CourseRole.STUDENT).distinct()


def students_assisted_by(user: User) -> QuerySet[User]:
    """The students (not other assistants) of the courses this person assists."""
    return students_of(courses_assisted_by(user))


def courses_staffed_by(user: User | None) -> QuerySet[Course]:
    """Courses this person looks after (their students, and the work booked to them: `work_visible_to`): those they
    teach and those they assist as a teaching assistant; admins every course; nobody's when signed out. (Any term:
    past courses' usage stays readable. Filter with `courses_in_term` for what gives access today.)"""
    if user is None or not user.is_authenticated:
        return Course.objects.none()
    if user.is_lab_admin:
        return Course.objects.all()
    return Course.objects.filter(Q(teachers=user) | Q(pk__in=courses_assisted_by(user).values("pk"))).distinct()


def courses_roster_managed_by(user: User | None) -> QuerySet[Course]:
    """Courses whose roster this person may import and export: those they teach; admins every course. Teaching
    assistants see a course's students but do not change who is in it."""
    if user is None or not user.is_authenticated:
        return Course.objects.none()
    if user.is_lab_admin:
        return Course.objects.all()
    if user.is_teacher:
        return Course.objects.filter(teachers=user)
    return Course.objects.none()


def roster_course_for(user: User, code: str) -> Course:
    """The course whose roster `user` asks for: 403 for students and teaching assistants (rosters are not theirs),
    404 for a course they do not teach or that does not exist."""
    require_staff(user, ROSTERS_TEACHERS_ONLY)
    course = courses_roster_managed_by(user).filter(code=code).first()
    if course is None:
        raise NotFound(_("No such course."))
    return course


def roster_of(course: Course) -> list[dict]:
    """The course's people, assistants first: each enrollment with whether the person still has an invitation
    waiting (no password chosen yet)."""
    invited = set(course.roster_invitations.filter(consent=False).values_list("user_id", flat=True))
    rows = []
    for enrollment in (
        Enrollment.objects.filter(course=course).select_related("user").order_by("role", "user__username")
    ):
        user = enrollment.user
        waiting = user.pk in invited and not user.has_usable_password()
        rows.append({"enrollment": enrollment, "user": user, "role": enrollment.role, "invited": waiting})
    return rows


def roster_waiting(course: Course, *, now: dt.datetime | None = None) -> QuerySet[RosterInvitation]:
    """The course's requests to join still waiting for the person's answer (not enrolled yet), by username."""
    now = now or timezone.now()
    return (
        course.roster_invitations.filter(consent=True, used_at__isnull=True, expires_at__gt=now)
        .select_related("user")
        .order_by("user__username")
    )


def invitations_waiting_for(user: User, *, now: dt.datetime | None = None) -> QuerySet[RosterInvitation]:
    """Requests to join a course this person has not answered yet and may still accept, oldest first."""
    if not user.is_authenticated:
        return RosterInvitation.objects.none()
    now = now or timezone.now()
    return (
        RosterInvitation.objects.filter(user=user, consent=True, used_at__isnull=True, expires_at__gt=now)
        .select_related("course", "sent_by")
        .order_by("created_at", "pk")
    )


def invitation_of(user: User, invitation_id: int) -> RosterInvitation:
    """One of this person's requests to join, whatever its state; anyone else's (or none): NotFound."""
    invitation = (
        RosterInvitation.objects.filter(pk=invitation_id, user_id=user.pk, consent=True)
        .select_related("course", "sent_by")
        .first()
    )
    if invitation is None:
        raise NotFound(_("No such invitation."))
    return invitation


def lab_admins() -> QuerySet[User]:
    """The lab's admins (role admin, or a superuser) whose accounts are active: who is told what admins decide."""
    return User.objects.filter(Q(role=Role.ADMIN) | Q(is_superuser=True), is_active=True)


def role_of(user: User) -> str:
    """The role whose policy applies: a superuser counts as an admin."""
    return Role.ADMIN if user.is_lab_admin else user.role


def hub_username(user: User) -> str:
    """The one name the notebook hub knows a person by: `u<id>`, from the account's id, never from its user name.

    The hub's sign-in (portal.oauth: `preferred_username`) and the portal's hub calls (labs.notebooks) both use it,
    so an admin renaming someone keeps their hub account, home volume and servers, and whoever gets a name that was
    renamed away or only differs in case gets a hub account of their own. The hub's spawners read the portal's id
    back from it (`int(name[1:])`)."""
    return f"u{user.pk}"


def courses_in_term(*, today: dt.date | None = None) -> QuerySet[Course]:
    """Courses whose term includes `today` (the lab's local date): the one rule for when a course gives access.

    A course gives its students and teachers access from the first day of its term to the last, inclusive, in the
    lab's time zone; the day after `term_end` it gives nothing (no grace: a course that needs more time extends
    its term in the admin console)."""
    return Course.objects.filter(term_includes(today or timezone.localdate()))


def term_includes(day, *, course: str = "") -> Q:
    """The term rule as a filter: the course's (`course`, a relation's name, or the Course itself when blank) term
    runs from `term_start` through `term_end`, both included; `day` is a date or an expression of one (the lab's
    local date)."""
    prefix = f"{course}__" if course else ""
    return Q(**{f"{prefix}term_start__lte": day, f"{prefix}term_end__gte": day})


def courses_active_for(user: User, *, today: dt.date | None = None) -> QuerySet[Course]:
    """Courses that currently give this user access: enrolled or teaching, term not over."""
    return courses_in_term(today=today).filter(Q(enrollments__user=user) | Q(teachers=user)).distinct()


def course_ids_active_for(user: User, *, today: dt.date | None = None) -> frozenset[int]:
    """The ids of `courses_active_for`: whose reservations, profiles and GPUs this person may use."""
    return frozenset(course_ids_active_for_many([user.pk], today=today).get(user.pk, ()))


def _memberships_in_term(user_ids: list[int], today: dt.date) -> QuerySet:
    in_term = courses_in_term(today=today).values("pk")
    enrolled = Enrollment.objects.filter(user_id__in=user_ids, course__in=in_term).values_list("user_id", "course_id")
    taught = Course.teachers.through.objects.filter(user_id__in=user_ids, course__in=in_term)
    return enrolled.order_by().union(taught.values_list("user_id", "course_id").order_by())


# One person's: every job submission and dry run reads it (for the quotas). Compiled once.
_MEMBERSHIPS_OF_ONE = Prepared(
    lambda user, today: _memberships_in_term([user], today),
    user=Enrollment._meta.get_field("user"),
    today=Course._meta.get_field("term_start"),
)


def course_ids_active_for_many(user_ids: list[int], *, today: dt.date | None = None) -> dict[int, set[int]]:
    """`course_ids_active_for` for many people in one query, by user id (nobody without a course is in it)."""
    today = today or timezone.localdate()
    one = len(user_ids) == 1
    rows = _MEMBERSHIPS_OF_ONE.rows(user_ids[0], today) if one else _memberships_in_term(user_ids, today)
    courses: dict[int, set[int]] = {}
    for user_id, course_id in rows:
        courses.setdefault(user_id, set()).add(course_id)
    return courses


def courses_of(user: User) -> list[dict]:
    """Every course the user belongs to, with their part in it and whether it is in term."""
    today = timezone.localdate()
    taught = Course.objects.filter(teachers=user)
    assisted = courses_assisted_by(user)
    enrolled = Course.objects.filter(enrollments__user=user, enrollments__role=CourseRole.STUDENT)
    rows: dict[int, dict] = {}
    for part, qs in (("teacher", taught), ("assistant", assisted), ("student", enrolled)):
        for course in qs:
            rows.setdefault(
                course.pk,
                {
                    "code": course.code,
                    "name": course.name,
                    "role": part,
                    "term_start": course.term_start,
                    "term_end": course.term_end,
                    "active": course.is_active_on(today),
                },
            )
    return sorted(rows.values(), key=lambda row: row["code"])


def notices_for(user: User, *, limit: int = 10):
    """What the portal has to tell this person and they have not dismissed, newest first."""
    return user.notices.filter(read_at__isnull=True)[:limit]


def tokens_of(user: User):
    """The person's API tokens that still work (not revoked, not expired), newest first."""
    now = timezone.now()
    return ApiToken.objects.filter(user=user, revoked_at__isnull=True).exclude(expires_at__lte=now)


def token_live_of(user: User, token_id: int) -> ApiToken:
    """One of the person's working tokens; NotFound for anyone else's, a revoked or expired one, or none."""
    token = tokens_of(user).filter(pk=token_id).first()
    if token is None:
        raise NotFound(_("No such API token."))
    return token


# Each signed-in request makes one of these two lookups: compiled once, not per request (accounts.prepared).
_TOKEN_BY_HASH = Prepared(
    lambda key_hash: ApiToken.objects.select_related("user").filter(key_hash=key_hash),
    key_hash=ApiToken._meta.get_field("key_hash"),
)
_USER_BY_ID = Prepared(lambda pk: User.objects.filter(pk=pk), pk=User._meta.pk)


def token_find(key: str) -> ApiToken | None:
    """The token with this key, whatever its state (revoked, expired), with its user; None for no such key."""
    if not key or len(key) > 100 or "\x00" in key:
        return None
    found = _TOKEN_BY_HASH.objects(token_hash(key))  # key_hash is unique: one row or none
    return found[0] if found else None


def user_signed_in(user_id) -> User | None:
    """The account a session names, as every sign-in backend's get_user finds it: None when there is no such account
    (a deleted one, an id that is no number) or it is switched off."""
    try:
        pk = User._meta.pk.to_python(user_id)
    except ValidationError:
        return None
    found = _USER_BY_ID.objects(pk)
    return found[0] if found and found[0].is_active else None


def token_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def token_refusal(token: ApiToken, *, now: dt.datetime | None = None) -> str | None:
    """Why the token does not work (a sentence for the 401), or None when it does."""

    def local(moment: dt.datetime) -> str:
        return f"{fmt_datetime(moment)} {timezone.localtime(moment):%Z}"

    again = _("Make a new one on your account page or with your password from POST /api/v1/token/.")
    if token.revoked_at is not None:
        return _("This API token was revoked on %(at)s.") % {"at": local(token.revoked_at)} + f" {again}"
    if token.session_generation is not None and token.session_generation != token.user.session_generation:
        return _("This API token was made in a browser session that was signed out everywhere.") + f" {again}"
    if token.expires_at is not None and token.expires_at <= (now or timezone.now()):
        return _("This API token expired on %(at)s.") % {"at": local(token.expires_at)} + f" {again}"
    if not token.user.is_active:
        return _("This account is switched off; ask the lab staff.")
    return None
