"""Course rosters: a CSV of who is in a course, read into a plan (who is added, removed, invited, changed), shown
before anything is written, then committed in one transaction; and the roster exported in the same format.

The file: a header line naming the columns, then one person per line. `username` is required; `email`, `first_name`,
`last_name` and `role` (student or assistant; blank means student) are optional. People are matched by username only
(never by e-mail). Someone the portal does not know yet gets a student account without a password and an invitation
e-mail with a one-time sign-in link (accounts/invitations.py), enrolled at once: the account is the roster's own. People
enrolled now and missing from the file are taken out of the course. Teachers are not part of a roster.

Someone who already has an account is never put into a course by a teacher's roster: being enrolled shows the
course's teachers the work one books to the course, so the person decides. The import asks them (an e-mail, a
notice, their dashboard: `invitation_ask`) and they are enrolled when they accept; declining or letting the request
expire enrols nobody. A later import that leaves them out (or enrols them itself) withdraws the request. An admin's
import enrols them at once: admins enrol people directly everywhere (the admin console) and already see everyone's
work, so asking would protect nobody.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import json

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models.functions import Lower
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from accounts.csvsafe import SafeWriter, unescape
from accounts.errors import Conflict, InvalidInput
from accounts.invitations import invitation_ask, invitation_create, invitations_send, invitations_withdraw
from accounts.models import Course, CourseRole, Enrollment, MembershipSource, Role, User
from accounts.selectors import roster_waiting
from accounts.services import enrollment_remove, enrollment_set
from accounts.usernames import username_key, username_normalized

COLUMNS = ("username", "email", "first_name", "last_name", "role")


@dataclasses.dataclass(frozen=True)
class RosterRow:
    line: int
    username: str
    email: str = ""
    first_name: str = ""
    last_name: str = ""
    role: str = CourseRole.STUDENT


@dataclasses.dataclass(frozen=True)
class RosterProblem:
    line: int
    reason: str

    def __str__(self) -> str:
        return _("Line %(line)s: %(reason)s") % {"line": self.line, "reason": self.reason}


@dataclasses.dataclass
class RosterPlan:
    """What importing the file would do to the course; `problems` non-empty means it would do nothing."""

    course: Course
    problems: list[RosterProblem] = dataclasses.field(default_factory=list)
    add: list[RosterRow] = dataclasses.field(default_factory=list)  # known, not in the course: enrolled (admins only)
    invite: list[RosterRow] = dataclasses.field(default_factory=list)  # unknown: an account and an e-mail
    consent: list[RosterRow] = dataclasses.field(default_factory=list)  # known, not in the course: asked, not enrolled
    change: list[RosterRow] = dataclasses.field(default_factory=list)  # in the course, student <-> assistant
    keep: list[RosterRow] = dataclasses.field(default_factory=list)  # in the course already, as the file says
    remove: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (username, role) not in the file
    withdraw: list[str] = dataclasses.field(default_factory=list)  # asked before, not asked now: request withdrawn
    waiting: set[str] = dataclasses.field(default_factory=set)  # of `consent`: asked before (same role), no answer yet

    @property
    def fingerprint(self) -> str:
        """Names what the preview showed, so a commit can refuse when the course changed in between."""
        parts = {
            "course": self.course.code,
            "add": [(r.username, r.role) for r in self.add],
            "invite": [(r.username, r.role, r.email) for r in self.invite],
            "consent": [(r.username, r.role) for r in self.consent],
            "change": [(r.username, r.role) for r in self.change],
            "remove": self.remove,
            "withdraw": self.withdraw,
        }
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]

    @property
    def joining(self) -> int:
        """People enrolled at once by the import (those asked join only when they accept)."""
        return len(self.add) + len(self.invite)

    @property
    def changes_anything(self) -> bool:
        asked = any(row.username not in self.waiting for row in self.consent)
        return bool(self.add or self.invite or asked or self.change or self.remove or self.withdraw)

    def as_dict(self) -> dict:
        def rows(items):
            return [{"line": r.line, "username": r.username, "email": r.email, "role": r.role} for r in items]

        return {
            "course": self.course.code,
            "fingerprint": self.fingerprint,
            "add": rows(self.add),
            "invite": rows(self.invite),
            "consent": [{**row, "waiting": row["username"] in self.waiting} for row in rows(self.consent)],
            "change": rows(self.change),
            "keep": rows(self.keep),
            "remove": [{"username": username, "role": role} for username, role in self.remove],
            "withdraw": [{"username": username} for username in self.withdraw],
            "problems": [{"line": p.line, "reason": p.reason} for p in self.problems],
        }


def roster_size_check(size: int) -> None:
    """A roster of `size` bytes is refused (InvalidInput) over ROSTER_MAX_BYTES: an upload is asked before it is
    read, a text before it is parsed."""
    if size > settings.ROSTER_MAX_BYTES:
        raise InvalidInput(
            _("The roster file is larger than %(kib)s KiB; split the course's roster.")
            % {"kib": settings.ROSTER_MAX_BYTES // 1024},
            fields={"file": "too large"},
        )


def _decode(data: bytes | str) -> str:
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidInput(
            _("The roster file is not UTF-8 text; save it as “CSV UTF-8” and upload it again."),
            fields={"file": "not UTF-8"},
        ) from None


def roster_rows(data: bytes | str) -> tuple[list[RosterRow], list[RosterProblem]]:
    """Read a roster file into rows and the problems of its lines (each named by its line number)."""
    roster_size_check(len(data) if isinstance(data, bytes) else len(data.encode()))
    text = _decode(data)
    if "\x00" in text:
        return [], [RosterProblem(1, _("the file holds NUL characters: it is not a CSV text file."))]
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    problems: list[RosterProblem] = []
    try:
        header = next(reader, None)
    except csv.Error as exc:
        return [], [RosterProblem(1, _("the line cannot be read as CSV (%(error)s).") % {"error": exc})]
    if not header or not any(cell.strip() for cell in header):
        return [], [
            RosterProblem(1, _("the file is empty; the first line names the columns, e.g. username,email,role."))
        ]
    names = [cell.strip().lower() for cell in header]
    unknown = [name for name in names if name not in COLUMNS]
    if "username" not in names or unknown:
        values = {"unknown": ", ".join(repr(n) for n in unknown), "columns": ", ".join(COLUMNS)}
        what = _("unknown column %(unknown)s; the first line names the columns, of: %(columns)s.") if unknown else ""
        what = what or _("no username column; the first line names the columns, of: %(columns)s.")
        return [], [RosterProblem(1, what % values)]
    if len(set(names)) != len(names):
        return [], [RosterProblem(1, _("a column is named twice."))]
    rows: list[RosterRow] = []
    seen: dict[str, int] = {}
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            problems.append(
                RosterProblem(reader.line_num, _("the line cannot be read as CSV (%(error)s).") % {"error": exc})
            )
            break
        line = reader.line_num
        if not any(cell.strip() for cell in cells):
            continue  # blank lines are allowed
        if len(rows) + len(problems) >= settings.ROSTER_MAX_ROWS:
            problems.append(
                RosterProblem(line, _("more than %(n)s people; split the roster.") % {"n": settings.ROSTER_MAX_ROWS})
            )
            break
        if len(cells) != len(names):
            why = _("%(cells)s cells where the header names %(columns)s columns.")
            problems.append(RosterProblem(line, why % {"cells": len(cells), "columns": len(names)}))
            continue
        # An exported roster's cells that start like a formula carry a `'` (accounts.csvsafe): read them as they were.
        values = {name: unescape(cell.strip()) for name, cell in zip(names, cells, strict=True)}
        row, why = _row(line, values)
        if why:
            problems.append(RosterProblem(line, why))
            continue
        key = username_key(row.username)  # "Ann" and "ann" are one person
        if key in seen:
            why = _("%(name)s is listed twice (first on line %(first)s).")
            problems.append(RosterProblem(line, why % {"name": row.username, "first": seen[key]}))
            continue
        seen[key] = line
        rows.append(row)
    return rows, problems


def _row(line: int, values: dict[str, str]) -> tuple[RosterRow | None, str]:
    username = username_normalized(values.get("username", ""))
    if not username:
        return None, _("the username is empty.")
    try:
        User.username_validator(username)
    except ValidationError:
        return None, _("%(name)r is not a username (letters, digits and @ . + - _ only).") % {"name": username}
    if len(username) > 150:
        return None, _("the username is longer than 150 characters.")
    email = values.get("email", "")
    if email:
        try:
            validate_email(email)
        except ValidationError:
            return None, _("%(email)r is not an e-mail address.") % {"email": email}
    role = (values.get("role") or CourseRole.STUDENT).lower()
    if role in ("ta", "teaching assistant"):
        role = CourseRole.ASSISTANT
    if role not in CourseRole.values:
        return None, _("the role %(role)r is neither student nor assistant.") % {"role": values.get("role")}
    first, last = values.get("first_name", ""), values.get("last_name", "")
    if len(first) > 150 or len(last) > 150:
        return None, _("a name is longer than 150 characters.")
    return RosterRow(line, username, email, first, last, role), ""


def roster_plan(*, course: Course, data: bytes | str, by: User) -> RosterPlan:
    """What importing `data` into the course would do when `by` imports it; nothing is written. People who have an
    account and are not in the course are asked (`consent`), or enrolled at once (`add`) when `by` is an admin."""
    rows, problems = roster_rows(data)
    plan = RosterPlan(course=course, problems=problems)
    # People are matched by name whatever its case, and named from here on as their account is.
    accounts = {username_key(user.username): user for user in User.objects.named_any(r.username for r in rows)}
    rows = [_as_named(row, accounts.get(username_key(row.username))) for row in rows]
    known = {user.username: user for user in accounts.values()}
    current = {e.user_id: e for e in Enrollment.objects.filter(course=course).select_related("user")}
    teachers = set(course.teachers.values_list("pk", flat=True))
    taken_emails = _emails_in_use([r.email for r in rows if r.username not in known and r.email])
    listed: set[int] = set()
    invited_emails: dict[str, int] = {}
    for row in rows:
        user = known.get(row.username)
        if user is None:
            if not row.email:
                plan.problems.append(
                    RosterProblem(
                        row.line,
                        _("%(name)s is not known to the portal and has no e-mail to invite.") % {"name": row.username},
                    )
                )
            elif row.email.lower() in taken_emails:
                owner = taken_emails[row.email.lower()]
                plan.problems.append(
                    RosterProblem(
                        row.line,
                        _("%(email)s belongs to the account %(owner)s; list that username instead.")
                        % {"email": row.email, "owner": owner},
                    )
                )
            elif row.email.lower() in invited_emails:
                first = invited_emails[row.email.lower()]
                plan.problems.append(
                    RosterProblem(
                        row.line,
                        _("%(email)s is also the e-mail of line %(first)s.") % {"email": row.email, "first": first},
                    )
                )
            else:
                invited_emails[row.email.lower()] = row.line
                plan.invite.append(row)
            continue
        if user.pk in teachers or user.role != Role.STUDENT:
            sentence = (  # teaches the course; else an admin or a teacher
                _("%(name)s teaches %(code)s; a roster lists students and teaching assistants.")
                if user.pk in teachers
                else _("%(name)s is an admin; a roster lists students and teaching assistants.")
                if user.role == Role.ADMIN
                else _("%(name)s is a teacher; a roster lists students and teaching assistants.")
            )
            plan.problems.append(RosterProblem(row.line, sentence % {"name": user.username, "code": course.code}))
            continue
        listed.add(user.pk)
        enrollment = current.get(user.pk)
        if enrollment is None:
            (plan.add if by.is_lab_admin else plan.consent).append(row)
        elif enrollment.role != row.role:
            plan.change.append(row)
        else:
            plan.keep.append(row)
    # Places the university's groups gave follow the groups (accounts.signin): a roster leaves them be.
    plan.remove = sorted(
        (e.user.username, e.role)
        for user_id, e in current.items()
        if user_id not in listed and e.source != MembershipSource.IDP
    )
    asked = {(row.username, row.role) for row in plan.consent}
    waiting = set(roster_waiting(course).values_list("user__username", "role"))
    plan.waiting = {username for username, _role in waiting & asked}  # asked before as this: nothing new to ask
    plan.withdraw = sorted({username for username, _role in waiting} - {username for username, _role in asked})
    plan.problems.sort(key=lambda p: p.line)
    return plan


def _as_named(row: RosterRow, account: User | None) -> RosterRow:
    return row if account is None else dataclasses.replace(row, username=account.username)


def _emails_in_use(emails: list[str]) -> dict[str, str]:
    """E-mail (lower case) -> the username of the account that has it, for the addresses given."""
    if not emails:
        return {}
    lowered = {email.lower() for email in emails}
    accounts = User.objects.annotate(email_lower=Lower("email")).filter(email_lower__in=lowered)
    return dict(accounts.order_by("pk").values_list("email_lower", "username").distinct())


def roster_commit(
    *, course: Course, by: User, data: bytes | str, fingerprint: str = "", link_base: str = ""
) -> RosterPlan:
    """Import the roster: every change of the plan in one transaction, or nothing when a line is bad (InvalidInput
    naming each line) or the course changed since the preview that showed `fingerprint` (Conflict). New people get
    an account and, once committed, their invitation e-mail; people who have an account get a request to join (an
    admin's import enrols them)."""
    try:
        with transaction.atomic():
            Course.objects.select_for_update().get(pk=course.pk)  # one import of a course at a time
            plan = roster_plan(course=course, data=data, by=by)
            _refuse_bad(plan, fingerprint)
            _apply(plan, course=course, by=by, link_base=link_base)
    except IntegrityError:
        # An account of the same name was made meanwhile by another path (the admin console, a sign-in).
        raise Conflict(
            _("Someone was added to the portal meanwhile; upload the roster again for a new preview.")
        ) from None
    return plan


def _refuse_bad(plan: RosterPlan, fingerprint: str) -> None:
    if plan.problems:
        count = len(plan.problems)
        raise InvalidInput(
            ngettext(
                "The roster has %(count)d bad line; nothing was imported. Fix it and upload it again.",
                "The roster has %(count)d bad lines; nothing was imported. Fix them and upload it again.",
                count,
            )
            % {"count": count},
            fields={"file": "; ".join(str(p) for p in plan.problems[:20])},
            problems=[{"line": p.line, "reason": p.reason} for p in plan.problems],
        )
    if fingerprint and fingerprint != plan.fingerprint:
        raise Conflict(_("The course changed since your preview; look at the new preview before you confirm."))


def _apply(plan: RosterPlan, *, course: Course, by: User, link_base: str) -> None:
    # Every enrollment goes through enrollment_set (the one write; the place that records where it came from).
    invited = []
    for row in plan.invite:
        user = User(username=row.username, email=row.email, first_name=row.first_name, last_name=row.last_name)
        user.set_unusable_password()
        user.save()
        enrollment_set(user=user, course=course, role=row.role, source=MembershipSource.ROSTER)
        invited.append(invitation_create(user=user, course=course, by=by, link_base=link_base, send=False))
    known = {user.username: user for user in User.objects.filter(username__in=[r.username for r in plan.consent])}
    for row in plan.consent:
        asked = invitation_ask(user=known[row.username], course=course, role=row.role, by=by, link_base=link_base)
        if asked is not None and known[row.username].email:  # without an address, their dashboard tells them
            invited.append(asked)
    invitations_withdraw(course=course, usernames=plan.withdraw)
    if invited:
        # Once committed, all of them over one SMTP connection.
        transaction.on_commit(lambda: invitations_send(invited))
    names = [row.username for row in (*plan.add, *plan.change)] + [username for username, _ in plan.remove]
    users = {user.username: user for user in User.objects.filter(username__in=names)}
    for row in (*plan.add, *plan.change):
        enrollment_set(user=users[row.username], course=course, role=row.role, source=MembershipSource.ROSTER)
    for username, _role in plan.remove:
        enrollment_remove(user=users[username], course=course)


def roster_export(*, course: Course) -> str:
    """The course's roster as CSV, in the format `roster_plan` reads: importing it back changes nothing. Every cell
    is spreadsheet-safe (names, usernames and e-mail addresses are people's input)."""
    out = io.StringIO()
    writer = SafeWriter(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    enrollments = Enrollment.objects.filter(course=course).select_related("user").order_by("role", "user__username")
    for e in enrollments:
        user = e.user
        writer.writerow([user.username, user.email, user.first_name, user.last_name, e.role])
    return out.getvalue()
