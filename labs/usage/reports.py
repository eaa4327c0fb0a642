"""What the usage pages show, as tables (a header and rows) that the pages render and the CSV downloads stream: one
source for both, so a page's figures and its CSV's agree. Visibility comes from the selectors (`Scope`)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections import defaultdict

from django.db.models import Avg, Count, F, Sum
from django.db.models.functions import ExtractHour
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from accounts.models import Course
from accounts.quotas import effective_quota
from accounts.selectors import students_of
from labs.ledger import week_gpu_hours, week_start
from labs.models import GpuMinute
from labs.usage.accounting import NO_COURSE, Period
from labs.usage.efficiency import p95
from labs.usage.selectors import Scope, efficiency_in_scope, reservations_use, usage_report
from labs.usage.waits import queue_wait_kinds, queue_waits_between

IDLE_HINT_SHARE = 0.5  # a notebook idle for more than half of what it held gets a hint


# What people read above a column, on the pages and in the pages' CSV downloads (the API keeps its field names).
LABELS = {
    "holder": _("Notebook or job"),
    "kind": _("Kind"),
    "user": _("Person"),
    "course": _("Course"),
    "node": _("Node"),
    "started": _("Started"),
    "ended": _("Ended"),
    "gpu_hours": _("GPU-hours"),
    "mean_util_pct": _("Mean GPU utilisation (%)"),
    "p95_util_pct": _("p95 GPU utilisation (%)"),
    "peak_mem_mb": _("Peak GPU memory (MB)"),
    "energy_wh": _("Energy (Wh)"),
    "idle_gpu_hours": _("Idle GPU-hours"),
    "week": _("Week"),
    "day": _("Day"),
    "month": _("Month"),
    "term": _("Term"),
    "hour": _("Hour of the day"),
    "minutes": _("Minutes sampled"),
    "reservation": _("Reservation"),
    "starts": _("Starts"),
    "ends": _("Ends"),
    "reserved_gpu_hours": _("Reserved GPU-hours"),
    "used_gpu_hours": _("Used GPU-hours"),
    "utilisation_pct": _("Utilisation (%)"),
    "no_show": _("No-show"),
    "notebook_wait_mean_s": _("Notebook wait, mean (s)"),
    "notebook_wait_p95_s": _("Notebook wait, p95 (s)"),
    "job_wait_mean_s": _("Job wait, mean (s)"),
    "job_wait_p95_s": _("Job wait, p95 (s)"),
}
PERSONAL = _("personal")  # work booked to no course: the person's own


@dataclasses.dataclass
class Table:
    name: str
    header: list[str]
    rows: list[list]

    @property
    def labels(self) -> list[str]:
        """The header as people read it (pages, their CSV downloads)."""
        return [str(LABELS.get(column, column.replace("_", " "))) for column in self.header]

    @property
    def total_gpu_hours(self) -> float:
        index = self.header.index("gpu_hours") if "gpu_hours" in self.header else None
        return round(sum(row[index] for row in self.rows), 6) if index is not None else 0.0


def _hours(seconds: float) -> float:
    return round(seconds / 3600, 4)


def holder_label(ref: str, kind: str, username: str) -> str:
    """ "notebook:12" of ana -> "notebook 12 of ana"; "job:7#2" -> "job 7 (attempt 2) of ana"."""
    number = ref.partition(":")[2]
    number, _sep, attempt = number.partition("#")
    if attempt and attempt != "1":
        return str(_("%(kind)s %(number)s (attempt %(attempt)s) of %(user)s")) % {
            "kind": kind,
            "number": number,
            "attempt": attempt,
            "user": username,
        }
    return str(_("%(kind)s %(number)s of %(user)s")) % {"kind": kind, "number": number, "user": username}


def sessions_table(scope: Scope, window: Period) -> Table:
    rows = []
    for row in efficiency_in_scope(scope, window)[:1000]:
        rows.append(
            [
                holder_label(row.holder_ref, row.holder_kind, row.user.username),
                row.holder_kind,
                row.user.username,
                row.course.code if row.course_id else "",
                row.node.name if row.node_id else "",
                timezone.localtime(row.started_at),
                timezone.localtime(row.ended_at) if row.ended_at else None,
                round(row.gpu_hours, 4),
                row.mean_util_pct,
                row.p95_util_pct,
                row.peak_mem_mb,
                row.energy_wh,
                round(row.idle_gpu_hours, 4),
            ]
        )
    header = ["holder", "kind", "user", "course", "node", "started", "ended", "gpu_hours", "mean_util_pct"]
    header += ["p95_util_pct", "peak_mem_mb", "energy_wh", "idle_gpu_hours"]
    return Table("sessions", header, rows)


def idle_hints(table: Table) -> list[str]:
    """Notebooks that sat idle on a GPU for more than half of what they held."""
    hints = []
    for row in table.rows:
        gpu_hours, idle = row[7], row[12]
        if row[1] == "notebook" and gpu_hours and idle / gpu_hours > IDLE_HINT_SHARE:
            hints.append(row[0])
    return hints


def grouped_table(scope: Scope, window: Period, group_by: str, *, name: str) -> Table:
    rows = [[row.key, _hours(row.gpu_seconds)] for row in usage_report(scope, window, group_by)]
    if group_by == "course":
        rows = [[str(PERSONAL) if key == NO_COURSE else key, hours] for key, hours in rows]
    return Table(name, [group_by, "gpu_hours"], rows)


def students_table(scope: Scope, window: Period, *, sort: str = "gpu_hours") -> Table:
    """Each person with GPU-hours (ledger) and idle GPU-hours (efficiency rows), sorted by a column."""
    used = {row.key: _hours(row.gpu_seconds) for row in usage_report(scope, window, "user")}
    idle = dict(
        efficiency_in_scope(scope, window)
        .order_by()
        .values("user__username")
        .annotate(idle=Sum("idle_gpu_hours"))
        .values_list("user__username", "idle")
    )
    if scope.course is not None:
        for person in students_of(Course.objects.filter(pk=scope.course.pk)):
            used.setdefault(person.username, 0.0)
    rows = [[user, hours, round(idle.get(user) or 0.0, 4)] for user, hours in used.items()]
    column = {"user": 0, "gpu_hours": 1, "idle_gpu_hours": 2}.get(sort, 1)
    rows.sort(key=lambda row: (row[column], row[0]) if column == 0 else (-row[column], row[0]))
    return Table("students", ["user", "gpu_hours", "idle_gpu_hours"], rows)


def reservations_table(scope: Scope, window: Period) -> Table:
    rows = []
    for use in reservations_use(scope, window):
        r = use.reservation
        pct = use.utilisation_pct
        rows.append(
            [
                r.title,
                r.course.code if r.course_id else "",
                timezone.localtime(r.starts_at),
                timezone.localtime(r.ends_at),
                _hours(use.reserved_seconds),
                _hours(use.used_seconds),
                round(pct, 1) if pct is not None else None,
                "yes" if use.no_show else "no",
            ]
        )
    header = ["reservation", "course", "starts", "ends", "reserved_gpu_hours", "used_gpu_hours", "utilisation_pct"]
    return Table("reservations", [*header, "no_show"], rows)


def heat_table(window: Period) -> Table:
    """Mean GPU utilisation per node and hour of the day (the lab's zone), from the telemetry history."""
    rows = (
        GpuMinute.objects.filter(minute__gte=window.start, minute__lt=window.until)
        .annotate(hour=ExtractHour("minute", tzinfo=timezone.get_current_timezone()), node=F("gpu__node__name"))
        .values("node", "hour")
        .annotate(util=Avg("util_avg"), minutes=Count("id"))
        .order_by("node", "hour")
    )
    return Table(
        "heat",
        ["node", "hour", "mean_util_pct", "minutes"],
        [[row["node"], row["hour"], round(row["util"] or 0, 1), row["minutes"]] for row in rows],
    )


def _wait_figures(waits: list[float]) -> tuple[float | None, float | None]:
    if not waits:
        return None, None
    return round(sum(waits) / len(waits), 1), p95(waits)


def days_table(scope: Scope, window: Period, *, gpus: int) -> Table:
    """Per day: GPU-hours used, the lab's utilisation (used / GPUs × hours of the day) and, for each kind of work
    that queues (notebooks, jobs: labs.usage.waits), the mean and p95 wait from asking to getting GPUs."""
    kinds = queue_wait_kinds()
    waits: dict[tuple[str, str], list[float]] = defaultdict(list)
    for kind in kinds:
        for asked, got in queue_waits_between(kind, window.start, window.until):
            waits[(kind, timezone.localtime(asked).date().isoformat())].append((got - asked).total_seconds())
    rows = []
    for row in usage_report(scope, window, "day"):
        hours = (row.ends_at - row.starts_at).total_seconds() / 3600
        capacity = gpus * hours
        utilisation = round(100 * row.gpu_hours / capacity, 1) if capacity else None
        figures = [figure for kind in kinds for figure in _wait_figures(waits.get((kind, row.key), []))]
        rows.append([row.key, _hours(row.gpu_seconds), utilisation, *figures])
    columns = [name for kind in kinds for name in (f"{kind}_wait_mean_s", f"{kind}_wait_p95_s")]
    return Table("days", ["day", "gpu_hours", "utilisation_pct", *columns], rows)


def week_against_quota(viewer, now: dt.datetime) -> dict:
    used = float(week_gpu_hours(viewer, now=now))
    allowed = float(effective_quota(viewer).gpu_hours_week)
    return {
        "used": used,
        "allowed": allowed,
        "left": max(allowed - used, 0.0),
        "pct": min(100.0, 100 * used / allowed) if allowed else 0.0,
        "since": week_start(now),
    }
