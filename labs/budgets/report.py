"""The weekly usage summary by e-mail: teachers get their courses, admins the lab, each once per week.

Celery beat runs `labs.tasks.usage_weekly_report` every USAGE_REPORT_CHECK_S; the week that ended last Monday
00:00 (lab time) goes out from USAGE_REPORT_HOUR that Monday on, to everyone who has not had it yet and has not
turned it off on their account page (`User.usage_report_email`). A UsageReportSent row per person and week (unique)
makes a second worker, or a second run, send nothing.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.conf import settings
from django.core.mail import EmailMessage
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.locale import fmt_number, language_of, speaking
from accounts.models import Course, User
from accounts.selectors import lab_admins, work_visible_to
from accounts.timefmt import fmt_date
from labs.budgets.selectors import WORK_KINDS, budgets_use
from labs.ledger import gpu_hours, gpu_hours_by_course, gpu_hours_by_user, week_start
from labs.models import Allocation
from labs.models.budgets import Budget, UsageReportSent

log = logging.getLogger(__name__)
TOP = 10


def H(hours) -> str:  # noqa: N802 - GPU-hours as the active language writes them
    return fmt_number(hours, 1)


def report_week(now: dt.datetime) -> tuple[dt.datetime, dt.datetime] | None:
    """The week the report is about (the one before this), or None before USAGE_REPORT_HOUR on Monday."""
    this_monday = week_start(now)
    if timezone.localtime(now) < this_monday + dt.timedelta(hours=settings.USAGE_REPORT_HOUR):
        return None
    return week_start(this_monday - dt.timedelta(hours=1)), this_monday


def _work() -> QuerySet[Allocation]:
    return Allocation.objects.filter(kind__in=WORK_KINDS)


def _courses_of_week(start: dt.datetime, end: dt.datetime) -> QuerySet[Course]:
    first, last = timezone.localtime(start).date(), timezone.localtime(end).date() - dt.timedelta(days=1)
    return Course.objects.filter(term_start__lte=last, term_end__gte=first)


def _course_lines(course: Course, start: dt.datetime, end: dt.datetime, teacher: User) -> list[str]:
    total = gpu_hours(_work().filter(course=course), start=start, end=end)
    lines = [
        _("%(code)s — %(name)s: %(hours)s GPU-hours") % {"code": course.code, "name": course.name, "hours": H(total)}
    ]
    students = list(course.students.values_list("pk", "username"))
    # What each booked to the course, as the teacher may see it: never a student's work outside the course.
    seen = Q(course=course) & work_visible_to(teacher, owner="user", course="course", at="starts_at")
    hours = gpu_hours_by_user([pk for pk, _ in students], start=start, end=end, where=seen)
    names = dict(students)
    ranked = sorted(((used, names[pk]) for pk, used in hours.items() if used), reverse=True)[:TOP]
    booked = _("%(name)s: %(hours)s GPU-hours (booked to %(code)s)")
    lines += ["    " + booked % {"name": name, "hours": H(used), "code": course.code} for used, name in ranked]
    if not ranked:
        lines.append("    " + _("no student used a GPU this week"))
    return lines


def _budget_lines(budgets: QuerySet[Budget], now: dt.datetime) -> list[str]:
    lines = []
    for use in budgets_use(budgets, now=now, with_energy=False):
        if use.period is None:
            continue
        line = "  " + _("Budget “%(name)s”: %(used)s of %(allowed)s GPU-hours (%(pct)s %%) %(period)s") % {
            "name": use.budget.name,
            "used": H(use.used_gpu_hours),
            "allowed": H(use.budget.gpu_hours),
            "pct": use.pct,
            "period": use.period.label,
        }
        if use.cost is not None:
            line += f", {fmt_number(use.cost, 2)} {use.currency}"
        lines.append(line)
    return lines


def lab_lines(*, start: dt.datetime, end: dt.datetime, now: dt.datetime) -> list[str]:
    """The admins' part: the lab, each course in term, every budget. The same for every admin: built once a run."""
    courses = list(_courses_of_week(start, end))
    hours = gpu_hours_by_course([course.pk for course in courses], start=start, end=end)
    lab = _("The lab: %(hours)s GPU-hours of notebooks and jobs.")
    lines = [lab % {"hours": H(gpu_hours(_work(), start=start, end=end))}]
    each = _("%(code)s: %(hours)s GPU-hours")
    lines += ["  " + each % {"code": course.code, "hours": H(hours[course.pk])} for course in courses]
    return lines + _budget_lines(Budget.objects.select_related("course", "user"), now)


def report_text(
    person: User, *, start: dt.datetime, end: dt.datetime, now: dt.datetime, lab: list[str] | None = None
) -> str:
    """One person's summary; `lab`: the admins' part when already built (lab_lines)."""
    local_start, local_end = timezone.localtime(start), timezone.localtime(end) - dt.timedelta(days=1)
    lines = [
        _("Hello %(name)s,") % {"name": person.get_full_name() or person.username},
        "",
        _("GPU usage of %(lab)s in the week %(first)s to %(last)s:")
        % {"lab": settings.LAB_NAME, "first": fmt_date(local_start), "last": fmt_date(local_end)},
        "",
    ]
    if person.is_lab_admin:
        lines += lab if lab is not None else lab_lines(start=start, end=end, now=now)
    else:
        courses = _courses_of_week(start, end).filter(teachers=person)
        for course in courses:
            lines += _course_lines(course, start, end, person)
            lines += _budget_lines(Budget.objects.filter(course=course).select_related("course"), now)
        if not courses:
            lines.append(_("None of your courses was in term this week."))
    lines += ["", _("Turn these e-mails off on your account page in the portal.")]
    return "\n".join(lines) + "\n"


def report_recipients(start: dt.datetime, end: dt.datetime) -> QuerySet[User]:
    """Admins, and teachers of a course in term that week; with an address and the report not turned off."""
    teachers = _courses_of_week(start, end).values("teachers")
    people = User.objects.filter(is_active=True, usage_report_email=True).exclude(email="")
    admins = lab_admins().values("pk")
    return people.filter(Q(pk__in=admins) | Q(pk__in=teachers)).distinct().order_by("pk")


def usage_weekly_report(*, now: dt.datetime | None = None) -> dict[str, int]:
    """Send last week's summary to everyone due it (once each); returns how many were sent and failed."""
    now = now or timezone.now()
    week = report_week(now)
    report = {"sent": 0, "failed": 0}
    if week is None:
        return report
    start, end = week
    labs: dict[str, list[str]] = {}  # the admins' part, built once a run per language
    for person in report_recipients(start, end):
        try:
            with transaction.atomic():
                _row, created = UsageReportSent.objects.get_or_create(
                    user=person, week_start=timezone.localtime(start).date(), defaults={"sent_at": now}
                )
                if not created:
                    continue
                with speaking(person):  # in the recipient's language
                    language = language_of(person)
                    if person.is_lab_admin and language not in labs:
                        labs[language] = lab_lines(start=start, end=end, now=now)
                    subject = _("[%(lab)s] GPU usage, week of %(first)s") % {
                        "lab": settings.LAB_NAME,
                        "first": fmt_date(timezone.localtime(start)),
                    }
                    body = report_text(person, start=start, end=end, now=now, lab=labs.get(language))
                EmailMessage(
                    subject=subject, body=body, from_email=settings.DEFAULT_FROM_EMAIL, to=[person.email]
                ).send(fail_silently=False)
            report["sent"] += 1
        except Exception:  # this person's mail failed and is not recorded: the next run tries again
            log.exception("weekly usage report to %s failed", person.pk)
            report["failed"] += 1
    return report
