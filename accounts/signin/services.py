"""Writes of the university's sign-in: link an external identity to an account, and apply what its groups say.

The mapping adds and removes only what it added itself (Enrollment.source / TeachingSource "idp"): a place an
admin gave by hand, or a roster, stays whatever the groups say, and a role set by hand (role_source "manual") too.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable, Iterable

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts import audit
from accounts.models import (
    Course,
    CourseRole,
    Enrollment,
    ExternalIdentity,
    MembershipSource,
    Role,
    RoleSource,
    TeachingSource,
    User,
)
from accounts.services import enrollment_set
from accounts.signin.mapping import CourseGroup, map_groups, normalized_code
from accounts.usernames import username_normalized

logger = logging.getLogger("portal.signin")
IDP = MembershipSource.IDP


@dataclasses.dataclass
class SigninChanges:
    """What one application of the groups changed, for the log and the tests."""

    role: str | None = None  # the new role, when it changed
    added: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (course code, place)
    removed: list[tuple[str, str]] = dataclasses.field(default_factory=list)


# --- Places in a course, one writer per place (mapping.COURSE_PARTS names the places) -------------------------------


@dataclasses.dataclass(frozen=True)
class PlaceWriter:
    held_by_idp: Callable[[User], set[int]]  # course ids where the mapping gave this place
    holds: Callable[[User, Course], bool]  # has the place, from any source
    add: Callable[[User, Course], None]  # give it, recording that the sign-in did
    remove: Callable[[User, Course], None]  # take away what the sign-in gave


def _student_add(user: User, course: Course) -> None:
    enrollment_set(user=user, course=course, role=CourseRole.STUDENT, source=IDP)


def _student_remove(user: User, course: Course) -> None:
    Enrollment.objects.filter(user=user, course=course, source=IDP, role=CourseRole.STUDENT).delete()


def _assistant_add(user: User, course: Course) -> None:
    if user.role != Role.STUDENT:
        logger.info("sign-in group makes %s a teaching assistant of %s, but assistants are students", user, course)
        return
    if Enrollment.objects.filter(user=user, course=course).exclude(source=IDP).exists():
        logger.info("%s has a place in %s given by hand or a roster: the groups leave it be", user, course.code)
        return
    enrollment_set(user=user, course=course, role=CourseRole.ASSISTANT, source=IDP)


def _assistant_remove(user: User, course: Course) -> None:
    Enrollment.objects.filter(user=user, course=course, source=IDP, role=CourseRole.ASSISTANT).delete()


def _teacher_add(user: User, course: Course) -> None:
    course.teachers.add(user)
    TeachingSource.objects.update_or_create(user=user, course=course, defaults={"source": IDP})


def _teacher_remove(user: User, course: Course) -> None:
    if TeachingSource.objects.filter(user=user, course=course, source=IDP).delete()[0]:
        course.teachers.remove(user)


PLACE_WRITERS: dict[str, PlaceWriter] = {
    "student": PlaceWriter(
        held_by_idp=lambda user: set(
            Enrollment.objects.filter(user=user, source=IDP, role=CourseRole.STUDENT).values_list(
                "course_id", flat=True
            )
        ),
        holds=lambda user, course: Enrollment.objects.filter(user=user, course=course).exists(),
        add=_student_add,
        remove=_student_remove,
    ),
    "assistant": PlaceWriter(
        held_by_idp=lambda user: set(
            Enrollment.objects.filter(user=user, source=IDP, role=CourseRole.ASSISTANT).values_list(
                "course_id", flat=True
            )
        ),
        holds=lambda user, course: Enrollment.objects.filter(
            user=user, course=course, role=CourseRole.ASSISTANT
        ).exists(),
        add=_assistant_add,
        remove=_assistant_remove,
    ),
    "teacher": PlaceWriter(
        held_by_idp=lambda user: set(
            TeachingSource.objects.filter(user=user, source=IDP).values_list("course_id", flat=True)
        ),
        holds=lambda user, course: course.teachers.filter(pk=user.pk).exists(),
        add=_teacher_add,
        remove=_teacher_remove,
    ),
}


def _courses_named(course_groups: Iterable[CourseGroup]) -> dict[tuple[int, str], Course]:
    """The portal's courses the groups name, as {(course id, place): course}; groups naming none are logged."""
    wanted: dict[tuple[int, str], Course] = {}
    for group in course_groups:
        candidates = Course.objects.filter(term__iexact=group.term) if group.term else Course.objects.all()
        code = normalized_code(group.code)
        found = [course for course in candidates if normalized_code(course.code) == code]
        if not found:
            logger.info(
                "sign-in group %r names no course of the portal (code %s, term %s)",
                group.group,
                group.code,
                group.term or "any",
            )
            continue
        for course in found:
            wanted[(course.pk, group.place)] = course
    return wanted


@transaction.atomic
def signin_groups_apply(*, user: User, groups: Iterable[str]) -> SigninChanges:
    """Give the person what their groups say now and take away what the groups gave before and no longer say."""
    user = User.objects.select_for_update().get(pk=user.pk)
    groups = [str(group) for group in groups]
    mapping = map_groups(groups, who=user.username)
    changes = SigninChanges()
    before_role = user.role

    if user.role_source == RoleSource.IDP and not user.is_superuser:
        role = mapping.role or settings.SIGNIN_DEFAULT_ROLE
        if user.role != role:
            logger.info("sign-in: %s's role %s -> %s (groups)", user.username, user.role, role)
            user.role = role
            user.save(update_fields=["role", "is_staff"])
            changes.role = role

    wanted = _courses_named(mapping.course_groups)
    for place, writer in PLACE_WRITERS.items():
        wanted_ids = {course_id for (course_id, wanted_place) in wanted if wanted_place == place}
        for course_id in sorted(writer.held_by_idp(user) - wanted_ids):
            course = Course.objects.get(pk=course_id)
            writer.remove(user, course)
            changes.removed.append((course.code, place))
        for course_id in sorted(wanted_ids):
            course = wanted[(course_id, place)]
            if not writer.holds(user, course):
                writer.add(user, course)
                changes.added.append((course.code, place))
    if changes.added or changes.removed:
        logger.info("sign-in: %s added %s, removed %s", user.username, changes.added, changes.removed)
    if changes.role or changes.added or changes.removed:
        # The lab's mapping decided (actor: none); the groups it read are the reason.
        audit.record(
            actor=None,
            action="signin.mapping",
            target=user,
            before={"role": before_role} if changes.role else {},
            after={
                **({"role": changes.role} if changes.role else {}),
                "added": [f"{code} ({place})" for code, place in changes.added],
                "removed": [f"{code} ({place})" for code, place in changes.removed],
            },
            reason=", ".join(groups)[:500],
            only_changes=False,
        )
    return changes


_USERNAME_CHARS = re.compile(r"[^\w.@+-]")


def _free_username(proposed: str) -> str:
    """A user name nobody has, from what the IdP proposes: normalised as Django's forms store names (NFKC, so a
    full-width or compatibility letter is the plain one), in lower case, cut to fit and suffixed (-2, -3, ...) while
    an account has it in any case. (The database's constraint holds the rule when two sign-ins race.)"""
    cleaned = _USERNAME_CHARS.sub("", username_normalized((proposed or "").split("@")[0]).lower())
    base = cleaned[:140] or "user"
    name, n = base, 1
    while User.objects.named(name).exists():
        n += 1
        name = f"{base}-{n}"
    return name


def _identity_create(*, kind: str, issuer: str, subject: str, username: str, user: User | None) -> ExternalIdentity:
    """The identity's first sign-in: its account (new unless given) and the link. Two first sign-ins of one person at
    once (two tabs): the second finds the first's identity instead of failing on the unique constraint."""
    for _attempt in range(3):
        try:
            with transaction.atomic():  # a savepoint: a lost race leaves the outer transaction usable
                account = user
                if account is None:
                    account = User(
                        username=_free_username(username),
                        role=settings.SIGNIN_DEFAULT_ROLE,
                        role_source=RoleSource.IDP,
                    )
                    account.set_unusable_password()
                    account.save()
                    logger.info("sign-in: new account %s for %s at %s", account.username, subject, issuer)
                identity = ExternalIdentity.objects.create(user=account, kind=kind, issuer=issuer, subject=subject)
                audit.record(
                    actor=None,
                    action="signin.identity_link",
                    target=account,
                    after={"kind": kind, "issuer": issuer, "subject": subject},
                    only_changes=False,
                )
                return identity
        except IntegrityError:
            existing = ExternalIdentity.objects.select_for_update().filter(issuer=issuer, subject=subject).first()
            if existing is not None:
                return existing
    raise IntegrityError(f"could not link {subject} at {issuer} to an account")


@transaction.atomic
def external_identity_sign_in(
    *,
    kind: str,
    issuer: str,
    subject: str,
    username: str,
    groups: Iterable[str],
    email: str = "",
    first_name: str = "",
    last_name: str = "",
    user: User | None = None,
) -> User:
    """The account of (issuer, subject), made on the first sign-in, with its groups applied.

    Matched by issuer and subject only. A new account gets a user name nobody has (from `username`, suffixed when
    taken: an existing account of the same name or e-mail is never taken over) and its role from the groups. With
    `user` (LDAP, whose backend found or built the account by name), that account is the one linked."""
    groups = [str(group) for group in groups]
    identity = ExternalIdentity.objects.select_for_update().filter(issuer=issuer, subject=subject).first()
    if identity is None:
        identity = _identity_create(kind=kind, issuer=issuer, subject=subject, username=username, user=user)
    user = identity.user
    fields = {"email": email, "first_name": first_name[:150], "last_name": last_name[:150]}
    changed = [name for name, value in fields.items() if value and getattr(user, name) != value]
    for name in changed:
        setattr(user, name, fields[name])
    if changed:
        user.save(update_fields=changed)
    identity.groups = groups
    identity.last_seen_at = timezone.now()
    identity.save(update_fields=["groups", "last_seen_at"])
    signin_groups_apply(user=user, groups=groups)
    user.refresh_from_db()
    return user
