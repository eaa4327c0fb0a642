"""Writes about people. Keyword-only, typed, one transaction each."""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Iterable

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.errors import Conflict, InvalidInput, NotFound
from accounts.models import (
    ApiToken,
    Course,
    CourseRole,
    Enrollment,
    MembershipSource,
    Notice,
    NoticeLevel,
    Quota,
    Role,
    RoleSource,
    TokenSource,
    User,
)
from accounts.selectors import token_find, token_hash, token_refusal, tokens_of
from accounts.usernames import username_taken_sentence

TOKEN_PREFIX = "glp_"
# Writing last_used_at on every call would be a write per API request.
TOKEN_TOUCH_EVERY = dt.timedelta(minutes=1)


@transaction.atomic
def user_upsert(
    *,
    username: str,
    role: str | None,
    password: str | None = None,
    email: str | None = None,
    course_codes: Iterable[str] = (),
    rename: str | None = None,
) -> tuple[User, bool]:
    """Create or update a user with a role; students are enrolled in and teachers teach the courses named.

    The account is found by its name whatever the case typed (`Student2` updates `student2`): names that differ
    only in case are one name. `role` None keeps an existing account's role (a new one needs it); `rename` gives
    the account a new name (its hub identity, from its id, stays)."""
    if role is not None and role not in Role.values:
        raise ValidationError(
            {
                "role": _("Unknown role %(role)r; use one of %(roles)s.")
                % {"role": role, "roles": ", ".join(Role.values)}
            }
        )
    codes = list(dict.fromkeys(course_codes))
    courses = {course.code: course for course in Course.objects.filter(code__in=codes)}
    missing = [code for code in codes if code not in courses]
    if missing:
        raise ValidationError({"course": _("No course with code %(code)s.") % {"code": ", ".join(missing)}})

    user = _account_named(username)
    created = user is None
    if created:
        if rename is not None:
            raise ValidationError({"username": _("There is no account “%(name)s” to rename.") % {"name": username}})
        if role is None:
            raise ValidationError({"role": _("A new account needs a role.")})
        user = User(username=username)
    if rename is not None:
        user.username = rename
    if role is not None:
        user.role = role
    if email is not None:
        user.email = email
    if password is not None:
        user.set_password(password)
    elif created:
        user.set_unusable_password()
    user.full_clean(exclude=["password"])
    user.save()

    for code in codes:
        course = courses[code]
        if user.role == Role.STUDENT:
            if not Enrollment.objects.filter(user=user, course=course).exists():
                enrollment_set(user=user, course=course)
        else:
            course.teachers.add(user)
    return user, created


@transaction.atomic
def user_rename(*, username: str, new_name: str) -> tuple[int, str]:
    """Give an account a new name; (its id, its role). It reads and writes only the id, name and role, which every
    version of the schema has: migration 0009 asks an admin to rename accounts that differ only in case BEFORE it
    can apply, on a database that may lack later columns still."""
    rows = User.objects.select_for_update()
    found = list(rows.filter(username=username).values_list("pk", "role")) or list(
        rows.named(username).values_list("pk", "role")[:2]
    )
    if not found:
        raise ValidationError({"username": _("There is no account “%(name)s” to rename.") % {"name": username}})
    if len(found) > 1:
        raise ValidationError(
            {"username": _("Several accounts differ from this name only in case: give the exact name.")}
        )
    pk, role = found[0]
    try:
        User.username_validator(new_name)
    except ValidationError as exc:
        raise ValidationError({"username": exc.messages}) from None
    taken = User.objects.named(new_name).exclude(pk=pk).values_list("username", flat=True).first()
    if taken is not None:
        raise ValidationError({"username": username_taken_sentence(taken)})
    User.objects.filter(pk=pk).update(username=new_name)
    return pk, role


def _account_named(username: str) -> User | None:
    """The account of this name, locked: the exact name first (before migration 0008 could apply, two accounts may
    differ only in case, and the exact name picks one), else the one whose name differs only in case."""
    exact = User.objects.select_for_update().filter(username=username).first()
    if exact is not None:
        return exact
    found = list(User.objects.select_for_update().named(username)[:2])
    if len(found) > 1:
        names = ", ".join(f"“{user.username}”" for user in found)
        raise ValidationError(
            {
                "username": _("Several accounts differ from this name only in case (%(names)s): give the exact name.")
                % {"names": names}
            }
        )
    return found[0] if found else None


@transaction.atomic
def enrollment_set(
    *, user: User, course: Course, role: str = CourseRole.STUDENT, source: str = MembershipSource.MANUAL
) -> tuple[Enrollment, bool]:
    """Enroll a person in a course as a student or a teaching assistant (or change which), the one write every path
    uses: the admin console's actions, rosters, the sign-in's groups, `user_upsert`. Returns the enrollment and
    whether it changed. `source` is recorded on a new place and on a place whose role changes: whoever changes a
    place owns it (an admin's or a roster's assistant is not taken back by the next sign-in's groups); a call that
    changes nothing leaves the source as it is.

    A teaching assistant is a student-role person: teachers and admins teach through `Course.teachers`."""
    if role not in CourseRole.values:
        raise ValidationError(
            {
                "role": _("Unknown course role %(role)r; use one of %(roles)s.")
                % {"role": role, "roles": ", ".join(CourseRole.values)}
            }
        )
    if role == CourseRole.ASSISTANT and user.role != Role.STUDENT:
        sentence = (
            _("%(name)s is an admin; teaching assistants are students.")
            if user.role == Role.ADMIN
            else _("%(name)s is a teacher; teaching assistants are students.")
        )
        raise ValidationError({"role": sentence % {"name": user.username}})
    enrollment, created = Enrollment.objects.select_for_update().get_or_create(
        user=user, course=course, defaults={"role": role, "source": source}
    )
    if not created and enrollment.role != role:
        enrollment.role, enrollment.source = role, source
        enrollment.save(update_fields=["role", "source"])
        return enrollment, True
    return enrollment, created


@transaction.atomic
def enrollment_remove(*, user: User, course: Course) -> bool:
    """Take a person out of a course (student or teaching assistant). True if they were in it."""
    deleted, _ = Enrollment.objects.filter(user=user, course=course).delete()
    return bool(deleted)


TOKEN_LIFETIME_MAX_DAYS = 3650  # the longest lifetime one may ask for when the lab sets none (API_TOKEN_TTL_DAYS 0)


def token_expiry(*, days: int | None, now: dt.datetime | None = None) -> dt.datetime | None:
    """When a token made now for `days` days expires: None (until revoked) only when API_TOKEN_TTL_DAYS is 0.

    `days` None means the lab's default (API_TOKEN_TTL_DAYS); more than it is refused (InvalidInput), and without a
    default (0) more than TOKEN_LIFETIME_MAX_DAYS (ten years: far enough, and well short of the calendar's end)."""
    ttl = settings.API_TOKEN_TTL_DAYS
    if days is None:
        days = ttl or None
    elif days < 1 or days > (ttl or TOKEN_LIFETIME_MAX_DAYS):
        limit = _("between 1 and %(max)s days") % {"max": ttl or TOKEN_LIFETIME_MAX_DAYS}
        raise InvalidInput(_("A token's lifetime is %(limit)s.") % {"limit": limit}, fields={"expires_in_days": limit})
    return None if days is None else (now or timezone.now()) + dt.timedelta(days=days)


@transaction.atomic
def token_create(
    *,
    user: User,
    name: str = "",
    expires_in_days: int | None = None,
    now: dt.datetime | None = None,
    capped: bool = True,
    source: str = TokenSource.SESSION,
) -> tuple[ApiToken, str]:
    """A new API token for the person: (the row, the key, which is shown once and stored only hashed).

    At most API_TOKENS_MAX live tokens per person (capped: what people ask for, on the page and the API): one more
    is refused with a sentence saying to revoke one. `source` says what made it: a browser session's token (the
    account page) records the person's session generation and ends with their sessions (sessions_end_everywhere)."""
    User.objects.select_for_update().filter(pk=user.pk).first()  # one count-and-insert at a time per person
    live = tokens_of(user).count() if capped else 0
    if live >= settings.API_TOKENS_MAX:
        raise InvalidInput(
            _("You already have %(n)s API tokens, the most one person may hold: revoke one on your account page.")
            % {"n": live},
            fields={"name": "too many tokens"},
        )
    expires_at = token_expiry(days=expires_in_days, now=now)
    key = TOKEN_PREFIX + secrets.token_urlsafe(32)
    generation = None
    if source == TokenSource.SESSION:
        generation = User.objects.filter(pk=user.pk).values_list("session_generation", flat=True).get()
    token = ApiToken.objects.create(
        user=user,
        name=name.strip()[:100],
        key_hash=token_hash(key),
        prefix=key[:12],
        expires_at=expires_at,
        source=source,
        session_generation=generation,
    )
    return token, key


def token_issue(*, user: User, regenerate: bool = False, name: str = "") -> str:
    """A new API token's key for an operator (`portal_user --token`, the benchmarks, tests): not capped; with
    regenerate the person's others are revoked first."""
    if regenerate:
        token_revoke_all(user=user)
    return token_create(user=user, name=name, capped=False, source=TokenSource.OPERATOR)[1]


@transaction.atomic
def token_revoke(*, user: User, token_id: int) -> ApiToken:
    """Revoke one of the person's tokens: scripts using it get 401 from now on. Someone else's: NotFound."""
    token = ApiToken.objects.select_for_update().filter(user=user, pk=token_id).first()
    if token is None:
        raise NotFound(_("No such API token."))
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


@transaction.atomic
def token_revoke_all(*, user: User) -> int:
    """Revoke every token of the person; how many were live."""
    return ApiToken.objects.filter(user=user, revoked_at__isnull=True).update(revoked_at=timezone.now())


def token_authenticate(key: str, *, now: dt.datetime | None = None) -> tuple[ApiToken | None, str | None]:
    """(the token, None) for a key that works, marking it used (at most once a minute);
    (None or the token, the 401's sentence) otherwise."""
    token = token_find(key)
    if token is None:
        return None, _("Invalid token.")
    refusal = token_refusal(token, now=now)
    if refusal is not None:
        return token, refusal
    moment = now or timezone.now()
    if token.last_used_at is None or moment - token.last_used_at >= TOKEN_TOUCH_EVERY:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=moment)
        token.last_used_at = moment
    return token, None


@transaction.atomic
def course_upsert(*, code: str, name: str, term_start, term_end) -> Course:
    course = Course.objects.select_for_update().filter(code=code).first() or Course(code=code)
    course.name = name
    course.term_start = term_start
    course.term_end = term_end
    course.full_clean()
    course.save()
    return course


def notice_send(*, user: User, text: str, ref: str = "", level: str = NoticeLevel.INFO) -> int:
    """Tell a person something on their dashboard. With a ref, at most once: returns 1 if told now, else 0."""
    if ref:
        _, created = Notice.objects.get_or_create(user=user, ref=ref, defaults={"text": text[:500], "level": level})
        return int(created)
    Notice.objects.create(user=user, text=text[:500], level=level)
    return 1


def notices_retire(*, ref: str) -> int:
    """Mark everyone's unread notices about `ref` read: what they asked for is done (an approval someone gave)."""
    if not ref:
        return 0
    return Notice.objects.filter(ref=ref, read_at__isnull=True).update(read_at=timezone.now())


def notice_dismiss(*, user: User, notice_id: int) -> bool:
    """Mark one of the person's notices read; True if it was unread. Someone else's or a missing one: NotFound."""
    mine = Notice.objects.filter(user=user, pk=notice_id)
    if not mine.exists():
        raise NotFound(_("No such notice."))
    return bool(mine.filter(read_at__isnull=True).update(read_at=timezone.now()))


@transaction.atomic
def sessions_end_everywhere(*, user: User) -> int:
    """End every session the person has signed in (browsers, the admin console, WebSockets, followed logs): Django
    checks each session's stored hash against User._get_session_auth_hash, which counts this generation in; open
    sockets and streams look again within CREDENTIAL_RECHECK_S. The API tokens a browser session made end too (one
    made with a stolen session would outlive it otherwise); those made with the password stay. How many ended."""
    User.objects.filter(pk=user.pk).update(session_generation=models.F("session_generation") + 1)
    user.refresh_from_db(fields=["session_generation"])
    made_in_sessions = ApiToken.objects.filter(user=user, source=TokenSource.SESSION, revoked_at__isnull=True)
    return made_in_sessions.update(revoked_at=timezone.now())


def user_language_set(*, user: User, language: str) -> str:
    """The language the portal speaks to this person: one of settings.LANGUAGES, or "" to follow their browser."""
    if language and language not in dict(settings.LANGUAGES):
        raise InvalidInput(
            _("Choose a language from the list."), fields={"language": _("Not a language of the portal.")}
        )
    User.objects.filter(pk=user.pk).update(language=language)
    user.language = language
    return language


def user_report_email_set(*, user: User, wanted: bool) -> bool:
    """Turn the weekly usage summary by e-mail on or off for this person; True if it changed."""
    with transaction.atomic():
        changed = User.objects.filter(pk=user.pk).exclude(usage_report_email=wanted)
        return bool(changed.update(usage_report_email=wanted))


@transaction.atomic
def user_role_set(*, by: User, user: User, role: str) -> User:
    """An admin gives a person a role by hand (the sign-in's groups leave it alone from then on); never their own."""
    if role not in Role.values:
        raise InvalidInput(_("Choose a role."), fields={"role": _("Unknown role %(role)s.") % {"role": role}})
    if user.pk == by.pk:
        raise Conflict(_("You cannot change your own role; ask another admin."))
    user = User.objects.select_for_update().get(pk=user.pk)
    if user.role != role or user.role_source != RoleSource.MANUAL:
        user.role = role
        user.role_source = RoleSource.MANUAL
        user.save()  # save(): is_staff follows the role
    return user


@transaction.atomic
def quota_set(*, by: User, user: User, limits: dict, note: str = "") -> Quota | None:
    """A person's own limits (overrides of their role's and courses'): a limit left None inherits. All None and no
    note: the override goes. Checked as the model checks it, so a bad value is a 400 and nothing is written."""
    unknown = set(limits) - set(Quota.LIMIT_FIELDS)
    if unknown:
        raise InvalidInput(_("Unknown limits."), fields={name: _("No such limit.") for name in sorted(unknown)})
    quota = Quota.objects.select_for_update().filter(user=user).order_by("pk").first()
    if all(value is None for value in limits.values()) and not note:
        if quota is not None:
            quota.delete()
        return None
    quota = quota or Quota(user=user)
    for name in Quota.LIMIT_FIELDS:
        setattr(quota, name, limits.get(name))
    quota.note = note[:200]
    try:
        quota.full_clean()
    except ValidationError as exc:
        fields = {name: " ".join(messages) for name, messages in exc.message_dict.items()}
        raise InvalidInput(_("Some limits are not right."), fields=fields) from None
    quota.save()
    return quota
