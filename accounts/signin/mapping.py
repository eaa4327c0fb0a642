"""What a person's groups at the university's sign-in say: their role and their places in courses. Pure: no writes.

Settings (read at every call, so the admin's changes apply at the next sign-in):

- ``SIGNIN_ROLE_GROUPS``: comma-separated ``group=role`` pairs, e.g. ``lab-admins=admin,faculty=teacher,
  students=student``. Group names are compared without regard to case. A person in groups of two roles gets the
  highest (student < teacher < admin), and the log says so. In no mapped group: ``SIGNIN_DEFAULT_ROLE``.
- ``SIGNIN_COURSE_PATTERNS``: regular expressions separated by whitespace, matched against each group name without
  regard to case, each with the named groups ``code`` (the course code: compared with the portal's ignoring case,
  dashes, dots and underscores, so ``dl101`` is ``DL-101``), ``part`` (a word of COURSE_PARTS: ``students``,
  ``teachers``; a group naming another part is logged and skipped) and optionally ``term`` (then the course's term
  field must equal it, e.g. ``2026W``: last year's group does not give this year's course). The default reads
  ``course-dl101-2026w-students``.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Iterable

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from accounts.models import Role

logger = logging.getLogger("portal.signin")

ROLE_RANK = {Role.STUDENT: 0, Role.TEACHER: 1, Role.ADMIN: 2}

# The word a course group ends in -> the place it gives in the course. One row per place; a new course role (the
# teaching assistants) is one row here and one writer in signin/services.py (PLACE_WRITERS).
COURSE_PARTS: dict[str, str] = {
    "students": "student",
    "student": "student",
    "teachers": "teacher",
    "teacher": "teacher",
    "assistants": "assistant",  # teaching assistants: a student's place between student and teacher
    "assistant": "assistant",
    "tas": "assistant",
}


@dataclasses.dataclass(frozen=True)
class CourseGroup:
    """A group naming a place in a course: the code and term as the group spells them, and the place."""

    group: str
    code: str
    term: str
    place: str


@dataclasses.dataclass(frozen=True)
class GroupMapping:
    role: str | None  # the highest role the groups name; None when no group names one
    roles_named: tuple[str, ...]  # every role the groups name, highest first
    course_groups: tuple[CourseGroup, ...]


def parse_role_groups(text: str) -> dict[str, str]:
    """``group=role,group=role`` -> {group (lower case): role}; a bad pair is a configuration error."""
    mapping: dict[str, str] = {}
    for pair in (item.strip() for item in (text or "").split(",")):
        if not pair:
            continue
        group, sep, role = pair.rpartition("=")
        group, role = group.strip(), role.strip().lower()
        if not sep or not group or role not in ROLE_RANK:
            raise ImproperlyConfigured(
                f"SIGNIN_ROLE_GROUPS: {pair!r} is not group=role with role one of student, teacher, admin."
            )
        mapping[group.lower()] = role
    return mapping


def parse_course_patterns(text: str) -> list[re.Pattern]:
    patterns = []
    for source in (text or "").split():
        try:
            pattern = re.compile(source, re.IGNORECASE)
        except re.error as exc:
            raise ImproperlyConfigured(
                f"SIGNIN_COURSE_PATTERNS: {source!r} is not a regular expression: {exc}"
            ) from exc
        if not {"code", "part"} <= set(pattern.groupindex):
            raise ImproperlyConfigured(
                f"SIGNIN_COURSE_PATTERNS: {source!r} needs the named groups (?P<code>...) and (?P<part>...)."
            )
        patterns.append(pattern)
    return patterns


def normalized_code(code: str) -> str:
    """A course code as groups and the portal may both spell it: lower case, letters and digits only."""
    return re.sub(r"[^a-z0-9]", "", code.lower())


def map_groups(groups: Iterable[str], *, who: str = "") -> GroupMapping:
    role_groups = parse_role_groups(settings.SIGNIN_ROLE_GROUPS)
    patterns = parse_course_patterns(settings.SIGNIN_COURSE_PATTERNS)
    roles: set[str] = set()
    places: list[CourseGroup] = []
    for group in dict.fromkeys(str(g) for g in groups):
        role = role_groups.get(group.lower())
        if role:
            roles.add(role)
        for pattern in patterns:
            match = pattern.fullmatch(group)
            if match is None:
                continue
            place = COURSE_PARTS.get(match.group("part").lower())
            if place is None:
                logger.info("sign-in group %r names a course part the portal has not (%r)", group, match.group("part"))
                break
            term = match.groupdict().get("term") or ""
            places.append(CourseGroup(group=group, code=match.group("code"), term=term, place=place))
            break
    ranked = tuple(sorted(roles, key=ROLE_RANK.__getitem__, reverse=True))
    if len(ranked) > 1:
        logger.warning(
            "sign-in: %s is in groups of %d roles (%s): the highest, %s, wins",
            who or "a person",
            len(ranked),
            ", ".join(ranked),
            ranked[0],
        )
    return GroupMapping(role=ranked[0] if ranked else None, roles_named=ranked, course_groups=tuple(places))
