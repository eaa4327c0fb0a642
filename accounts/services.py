"""Writes about people. Keyword-only, typed, one transaction each."""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts import audit
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
from accounts.services_tokens import TOKEN_LIFETIME_MAX_DAYS as TOKEN_LIFETIME_MAX_DAYS
from accounts.services_tokens import TOKEN_PREFIX as TOKEN_PREFIX
from accounts.services_tokens import TOKEN_TOUCH_EVERY as TOKEN_TOUCH_EVERY
from accounts.services_tokens import token_authenticate as token_authenticate
from accounts.services_tokens import token_create as token_create
from accounts.services_tokens import token_expiry as token_expiry
from accounts.services_tokens import token_issue as token_issue
from accounts.services_tokens import token_revoke as token_revoke
from accounts.services_tokens import token_revoke_all as token_revoke_all
from accounts.usernames import username_taken_sentence


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
    before = {} if created else audit.snapshot(user, USER_AUDIT_FIELDS)
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
    _audit_user(user, before, created=created)

    for code in codes:
        course = courses[code]
        if user.role == Role.STUDENT:
            if not Enrollment.objects.filter(user=user, course=course).exists():
                enrollment_set(user=user, course=course)
        elif not course.teachers.filter(pk=user.pk).exists():
            course.teachers.add(user)
            audit.record(
                action="course.teacher_add",
                target=course,
                target_label=course.code,
                after={"teacher": user.username},
                course=course,
            )
    return user, created


USER_AUDIT_FIELDS = ("username", "role", "role_source", "email", "first_name", "last_name", "is_active")
PROFILE_FIELDS = ("username", "email", "first_name", "last_name", "language", "usage_report_email", "is_active")


def _audit_user(user: User, before: dict, *, created: bool, reason: str = "") -> None:
    """An account's role and profile changes as audit entries (role.change, profile.change; user.create)."""
    after = audit.snapshot(user, USER_AUDIT_FIELDS)
    if created:
        audit.record(action="user.create", target=user, after=after, reason=reason)
        return
    roles = ("role", "role_source")
    audit.record(
        action="role.change",
        target=user,
        before={k: v for k, v in before.items() if k in roles},
        after={k: v for k, v in after.items() if k in roles},
        reason=reason,
    )
    audit.record(
        action="profile.change",
        target=user,
        before={k: v for k, v in before.items() if k not in roles},
        after={k: v for k, v in after.items() if k not in roles},
        reason=reason,
    )


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
    old = User.objects.filter(pk=pk).values_list("username", flat=True).get()
    User.objects.filter(pk=pk).update(username=new_name)
    audit.record(
        action="profile.change",
        target_type="user",
        target_id=pk,
        target_label=new_name,
        before={"username": old},
        after={"username": new_name},
    )
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
        before = {"role": enrollment.role, "source": enrollment.source}
        enrollment.role, enrollment.source = role, source
        enrollment.save(update_fields=["role", "source"])
        _audit_membership("course.member_change", user, course, before, {"role": role, "source": source})
        return enrollment, True
    if created:
        _audit_membership("course.member_add", user, course, {}, {"role": role, "source": source})
    return enrollment, created


def _audit_membership(action: str, user: User, course: Course, before: dict, after: dict) -> None:
    audit.record(
        action=action,
        target=user,
        before=before,
        after=after,
        course=course,
        reason=course.code,
        only_changes=False,
    )


@transaction.atomic
def enrollment_remove(*, user: User, course: Course) -> bool:
    """Take a person out of a course (student or teaching assistant). True if they were in it."""
    place = Enrollment.objects.filter(user=user, course=course).values("role", "source").first()
    deleted, _ = Enrollment.objects.filter(user=user, course=course).delete()
    if deleted:
        _audit_membership("course.member_remove", user, course, place or {}, {})
    return bool(deleted)


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
    count = made_in_sessions.update(revoked_at=timezone.now())
    if count:
        audit.record(
            action="token.revoke_all",
            target=user,
            before={"live_tokens": count},
            after={"live_tokens": 0},
            reason="Signed out everywhere.",
        )
    return count


def user_language_set(*, user: User, language: str) -> str:
    """The language the portal speaks to this person: one of settings.LANGUAGES, or "" to follow their browser."""
    if language and language not in dict(settings.LANGUAGES):
        raise InvalidInput(
            _("Choose a language from the list."), fields={"language": _("Not a language of the portal.")}
        )
    with transaction.atomic():
        before = User.objects.filter(pk=user.pk).values_list("language", flat=True).get()
        User.objects.filter(pk=user.pk).update(language=language)
        audit.record(action="profile.change", target=user, before={"language": before}, after={"language": language})
    user.language = language
    return language


def user_report_email_set(*, user: User, wanted: bool) -> bool:
    """Turn the weekly usage summary by e-mail on or off for this person; True if it changed."""
    with transaction.atomic():
        changed = bool(
            User.objects.filter(pk=user.pk).exclude(usage_report_email=wanted).update(usage_report_email=wanted)
        )
        if changed:
            audit.record(
                action="profile.change",
                target=user,
                before={"usage_report_email": not wanted},
                after={"usage_report_email": wanted},
            )
        return changed


@transaction.atomic
def user_role_set(*, by: User, user: User, role: str) -> User:
    """An admin gives a person a role by hand (the sign-in's groups leave it alone from then on); never their own."""
    if role not in Role.values:
        raise InvalidInput(_("Choose a role."), fields={"role": _("Unknown role %(role)s.") % {"role": role}})
    if user.pk == by.pk:
        raise Conflict(_("You cannot change your own role; ask another admin."))
    user = User.objects.select_for_update().get(pk=user.pk)
    if user.role != role or user.role_source != RoleSource.MANUAL:
        before = audit.snapshot(user, ("role", "role_source"))
        user.role = role
        user.role_source = RoleSource.MANUAL
        user.save()  # save(): is_staff follows the role
        audit.record(actor=by, action="role.change", target=user, before=before, after=audit.snapshot(user, before))
    return user


@transaction.atomic
def quota_set(*, by: User, user: User, limits: dict, note: str = "") -> Quota | None:
    """A person's own limits (overrides of their role's and courses'): a limit left None inherits. All None and no
    note: the override goes. Checked as the model checks it, so a bad value is a 400 and nothing is written."""
    unknown = set(limits) - set(Quota.LIMIT_FIELDS)
    if unknown:
        raise InvalidInput(_("Unknown limits."), fields={name: _("No such limit.") for name in sorted(unknown)})
    quota = Quota.objects.select_for_update().filter(user=user).order_by("pk").first()
    before = audit.snapshot(quota, QUOTA_AUDIT_FIELDS)
    if all(value is None for value in limits.values()) and not note:
        if quota is not None:
            quota.delete()
            audit.record(actor=by, action="quota.remove", target=user, before=before, after={})
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
    audit.record(
        actor=by,
        action="quota.change",
        target=user,
        before=before,
        after=audit.snapshot(quota, before or QUOTA_AUDIT_FIELDS),
    )
    return quota


QUOTA_AUDIT_FIELDS = (*Quota.LIMIT_FIELDS, "note")
