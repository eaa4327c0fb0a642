"""Writes about people. Keyword-only, typed, one transaction each."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from rest_framework.authtoken.models import Token

from portal.accounts.models import Course, Enrollment, Notice, NoticeLevel, Role, User
from portal.accounts.selectors import token_expired
from portal.errors import NotFound


@transaction.atomic
def user_upsert(
    *,
    username: str,
    role: str,
    password: str | None = None,
    email: str | None = None,
    course_codes: Iterable[str] = (),
) -> tuple[User, bool]:
    """Create or update a user with a role; students are enrolled in and teachers teach the courses named."""
    if role not in Role.values:
        raise ValidationError({"role": f"Unknown role {role!r}; use one of {', '.join(Role.values)}."})
    codes = list(dict.fromkeys(course_codes))
    courses = {course.code: course for course in Course.objects.filter(code__in=codes)}
    missing = [code for code in codes if code not in courses]
    if missing:
        raise ValidationError({"course": f"No course with code {', '.join(missing)}."})

    user = User.objects.select_for_update().filter(username=username).first()
    created = user is None
    if created:
        user = User(username=username)
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
        if role == Role.STUDENT:
            Enrollment.objects.get_or_create(user=user, course=course)
        else:
            course.teachers.add(user)
    return user, created


@transaction.atomic
def token_obtain(*, user: User, regenerate: bool = False, now: dt.datetime | None = None) -> Token:
    """The user's API token: the current one while it is valid, else a new one.

    With regenerate, the old one stops working at once. An expired token is replaced, never extended.
    """
    token = Token.objects.select_for_update().filter(user=user).first()
    if token is not None and (regenerate or token_expired(token, now=now)):
        token.delete()
        token = None
    if token is None:
        token, _ = Token.objects.get_or_create(user=user)
    return token


def token_issue(*, user: User, regenerate: bool = False) -> str:
    """The key of the user's API token (see token_obtain)."""
    return token_obtain(user=user, regenerate=regenerate).key


@transaction.atomic
def token_revoke(*, user: User) -> bool:
    """Delete the user's API token: scripts using it get 401 from now on. True if there was one."""
    deleted, _ = Token.objects.filter(user=user).delete()
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


def notice_dismiss(*, user: User, notice_id: int) -> bool:
    """Mark one of the person's notices read; True if it was unread. Someone else's or a missing one: NotFound."""
    mine = Notice.objects.filter(user=user, pk=notice_id)
    if not mine.exists():
        raise NotFound("No such notice.")
    return bool(mine.filter(read_at__isnull=True).update(read_at=timezone.now()))


def user_report_email_set(*, user: User, wanted: bool) -> bool:
    """Turn the weekly usage summary by e-mail on or off for this person; True if it changed."""
    with transaction.atomic():
        changed = User.objects.filter(pk=user.pk).exclude(usage_report_email=wanted)
        return bool(changed.update(usage_report_email=wanted))
