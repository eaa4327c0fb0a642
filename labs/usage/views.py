"""The usage pages: "My usage" (everyone), per course (teachers, admins), the lab (admins), and every table as CSV.

Thin: read the window (labs.usage.params), ask labs.usage.reports, render. Refusals come from the selectors and
accounts.permissions; bad dates show their sentence on the page with the default window instead."""

from __future__ import annotations

import datetime as dt
import re

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from accounts.errors import InvalidInput, NotPermitted
from accounts.permissions import USAGE_COURSE_STAFF_ONLY, USAGE_LAB_ADMINS_ONLY, looks_after_courses
from accounts.selectors import courses_staffed_by
from labs.budgets.selectors import budgets_use, budgets_visible_to
from labs.models import Gpu
from labs.usage import charts, csvstream, reports
from labs.usage.params import read_window
from labs.usage.selectors import Scope, scope_for
from labs.usage.storage import storage_rows

HOURS = [f"{hour:02d}" for hour in range(24)]


def _window(request, params=None):
    """The window asked for, or the last eight weeks with the sentence saying what was wrong."""
    now = timezone.now()
    try:
        return read_window(request.GET if params is None else params, now=now), None
    except InvalidInput as error:
        return read_window({}, now=now), error.message


def _course_window(request, scope: Scope):
    """A course's page and its CSV tables: without `from`, the course's term so far (to `to` when given)."""
    if scope.course is None or request.GET.get("from"):
        return _window(request)
    params = {"from": scope.course.term_start.isoformat()}
    if request.GET.get("to"):
        params["to"] = request.GET["to"]
    return _window(request, params)


def _course_scope(request) -> Scope:
    if not looks_after_courses(request.user):
        raise NotPermitted(USAGE_COURSE_STAFF_ONLY)
    code = request.GET.get("course") or ""
    if not code:
        first = courses_staffed_by(request.user).order_by("-term_start", "code").first()
        return Scope(viewer=request.user, course=first)
    return scope_for(request.user, course_code=code)


def _require_admin(request) -> None:
    if not request.user.is_lab_admin:
        raise NotPermitted(USAGE_LAB_ADMINS_ONLY)


def _days(window) -> tuple[dt.date, dt.date]:
    """The first and the last day the window covers, in the lab's zone (`to` is included: the window ends at the
    next midnight, or now)."""
    first = timezone.localtime(window.start).date()
    last = (timezone.localtime(window.end) - dt.timedelta(microseconds=1)).date()
    return first, max(first, last)


def _context(request, window, error, **more):
    return {
        "window": window,
        "window_error": error,
        "from_value": _days(window)[0].isoformat(),
        "to_value": _days(window)[1].isoformat(),
        "query": request.GET.urlencode(),
        "keep": [("course", more["scope"].course.code)] if more.get("scope") and more["scope"].course else [],
        "lab_zone": timezone.get_current_timezone_name(),
        "history_days": settings.TELEMETRY_HISTORY_DAYS,
        **more,
    }


@login_required
@require_GET
def my_usage(request):
    window, error = _window(request)
    scope = Scope(viewer=request.user, person=request.user)
    weeks = reports.grouped_table(scope, window, "week", name="weeks")
    quota = reports.week_against_quota(request.user, window.now)
    sessions = reports.sessions_table(scope, window)
    chart = charts.bars(
        [(row[0], row[1]) for row in weeks.rows], title=_("Your GPU-hours per week"), limit=quota["allowed"]
    )
    context = _context(
        request,
        window,
        error,
        weeks=weeks,
        quota=quota,
        sessions=sessions,
        chart=chart,
        idle=set(reports.idle_hints(sessions)),
        storage=storage_rows(person=request.user),
    )
    return render(request, "usage/mine.html", context)


@login_required
@require_GET
def course_usage(request):
    scope = _course_scope(request)
    window, error = _course_window(request, scope)
    context = _context(request, window, error, scope=scope, courses=courses_staffed_by(request.user).order_by("code"))
    if scope.course is not None:
        sort = request.GET.get("sort") or "gpu_hours"
        weeks = reports.grouped_table(scope, window, "week", name="weeks")
        context.update(
            sort=sort,
            students=reports.students_table(scope, window, sort=sort),
            weeks=weeks,
            chart=charts.bars(
                [(row[0], row[1]) for row in weeks.rows],
                title=_("%(code)s GPU-hours per week") % {"code": scope.course.code},
            ),
            reservations=reports.reservations_table(scope, window),
            budgets=budgets_use(budgets_visible_to(request.user).filter(course=scope.course), now=window.now),
            storage=storage_rows(course=scope.course),
        )
    return render(request, "usage/course.html", context)


@login_required
@require_GET
def lab_usage(request):
    _require_admin(request)
    window, error = _window(request)
    scope = Scope(viewer=request.user)
    courses = reports.grouped_table(scope, window, "course", name="courses")
    users = reports.grouped_table(scope, window, "user", name="users")
    nodes = reports.grouped_table(scope, window, "node", name="nodes")
    days = reports.days_table(scope, window, gpus=Gpu.objects.count())
    heat = reports.heat_table(window)
    heat_values = {(row[0], f"{row[1]:02d}"): row[2] for row in heat.rows}
    node_names = sorted({row[0] for row in heat.rows})
    context = _context(
        request,
        window,
        error,
        courses=courses,
        users=users,
        top_users=users.rows[:10],
        nodes=nodes,
        days=days,
        heat=heat,
        courses_chart=charts.bars([(r[0], r[1]) for r in courses.rows[:30]], title="GPU-hours by course"),
        days_chart=charts.bars([(r[0], r[1]) for r in days.rows[-60:]], title=_("GPU-hours per day")),
        heat_chart=charts.heat_map(node_names, HOURS, heat_values, title="Mean GPU utilisation by node and hour"),
    )
    return render(request, "usage/lab.html", context)


def _table(request, name: str) -> tuple[reports.Table, str, object]:
    """The table asked for, what it is about (a course's code, the person, the lab) and its window."""
    window, _ = _window(request)
    if name == "my-sessions":
        me = Scope(viewer=request.user, person=request.user)
        return reports.sessions_table(me, window), request.user.username, window
    if name == "my-weeks":
        me = Scope(viewer=request.user, person=request.user)
        return reports.grouped_table(me, window, "week", name="weeks"), request.user.username, window
    if name.startswith("course-"):
        scope = _course_scope(request)
        if scope.course is None:  # a teacher of no course: the tables' headers, no rows
            return reports.Table(name, ["user", "gpu_hours", "idle_gpu_hours"], []), "no-course", window
        window, _ = _course_window(request, scope)
        code = scope.course.code
        if name == "course-students":
            return reports.students_table(scope, window, sort=request.GET.get("sort") or "gpu_hours"), code, window
        if name == "course-reservations":
            return reports.reservations_table(scope, window), code, window
        if name == "course-weeks":
            return reports.grouped_table(scope, window, "week", name="weeks"), code, window
    if name in ("lab-courses", "lab-users", "lab-nodes", "lab-days", "lab-heat"):
        _require_admin(request)
        scope = Scope(viewer=request.user)
        if name == "lab-days":
            return reports.days_table(scope, window, gpus=Gpu.objects.count()), "lab", window
        if name == "lab-heat":
            return reports.heat_table(window), "lab", window
        return reports.grouped_table(scope, window, name[4:-1], name=name[4:]), "lab", window
    raise Http404


def csv_filename(subject: str, table: str, window) -> str:
    """What and when: usage-DL-101-students-2026-11-01_2026-11-27.csv (the days included, in the lab's zone)."""
    first, last = _days(window)
    subject = re.sub(r"[^A-Za-z0-9._-]+", "-", subject).strip("-") or "usage"
    return f"usage-{subject}-{table}-{first.isoformat()}_{last.isoformat()}.csv"


@login_required
@require_GET
def table_csv(request, table: str):
    found, subject, window = _table(request, table)
    return csvstream.csv_response(
        request,
        filename=csv_filename(subject, found.name, window),
        header=found.labels,
        pages=csvstream.one_page(found.rows),
    )
