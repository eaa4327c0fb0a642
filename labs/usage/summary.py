"""Each person's weekly efficiency summary: their GPU-hours and idle GPU-hours of last week (from the efficiency
rows, labs.usage.efficiency) and one concrete hint, as a notice and an e-mail in their language.

Beat runs `labs.tasks.usage_efficiency_summary` every USAGE_REPORT_CHECK_S; the week is the one the weekly usage
report covers (from USAGE_REPORT_HOUR on Monday). The notice's ref names the week,
so a person is told once (a second run, or a second worker, sends nothing); the e-mail goes with the first notice,
to those with an address who have not turned the usage e-mails off (`User.usage_report_email`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging

from django.conf import settings
from django.core.mail import EmailMessage
from django.db.models import Sum
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.locale import fmt_number, speaking
from accounts.models import User
from accounts.services import notice_send
from accounts.timefmt import fmt_date
from labs.ledger import week_start
from labs.models import HolderEfficiency

log = logging.getLogger(__name__)


def report_week(now: dt.datetime) -> tuple[dt.datetime, dt.datetime] | None:
    """Last week, from USAGE_REPORT_HOUR on Monday (as the weekly usage report, labs.budgets.report); else None."""
    this_monday = week_start(now)
    if timezone.localtime(now) < this_monday + dt.timedelta(hours=settings.USAGE_REPORT_HOUR):
        return None
    return week_start(this_monday - dt.timedelta(hours=1)), this_monday


# Idle shares at which the hint changes (of the GPU-hours held that week).
MOSTLY_IDLE = 0.5
OFTEN_IDLE = 0.15


@dataclasses.dataclass(frozen=True)
class WeekEfficiency:
    gpu_hours: float
    idle_gpu_hours: float
    notebook_idle_gpu_hours: float

    @property
    def idle_share(self) -> float:
        return self.idle_gpu_hours / self.gpu_hours if self.gpu_hours else 0.0


def week_efficiency_by_user(start: dt.datetime, end: dt.datetime) -> dict[int, WeekEfficiency]:
    """Per person, the GPU-hours and idle GPU-hours of the holders (jobs, notebooks) that started in [start, end)."""
    rows = HolderEfficiency.objects.filter(started_at__gte=start, started_at__lt=end)
    out: dict[int, dict[str, float]] = {}
    for user_id, kind, held, idle in (
        rows.values_list("user_id", "holder_kind")
        .annotate(held=Sum("gpu_hours"), idle=Sum("idle_gpu_hours"))
        .values_list("user_id", "holder_kind", "held", "idle")
    ):
        figures = out.setdefault(user_id, {"held": 0.0, "idle": 0.0, "notebook": 0.0})
        figures["held"] += held or 0.0
        figures["idle"] += idle or 0.0
        if kind == "notebook":
            figures["notebook"] += idle or 0.0
    return {uid: WeekEfficiency(f["held"], f["idle"], f["notebook"]) for uid, f in out.items()}


def hint(week: WeekEfficiency) -> str:
    """One concrete thing to do, in the active language, from where the idle time went."""
    if week.idle_share >= MOSTLY_IDLE and week.notebook_idle_gpu_hours >= week.idle_gpu_hours / 2:
        return _(
            "Most of it was notebooks left open: stop a notebook when you step away (its files stay), and start "
            "it again when you come back."
        )
    if week.idle_share >= MOSTLY_IDLE:
        return _(
            "Most of it was jobs whose GPU did nothing: check that your code moves the model and data to the GPU "
            "(model.to('cuda')), and give idle_ok_reason when a job must wait on purpose."
        )
    if week.idle_share >= OFTEN_IDLE:
        return _(
            "Your GPUs often waited for data: raise your DataLoader's num_workers and set pin_memory=True, or "
            "preprocess the data once into a dataset."
        )
    return _("Your GPUs were kept busy. Asking for a shorter max runtime lets the queue start your jobs sooner.")


def summary_text(person: User, week: WeekEfficiency, start: dt.datetime, end: dt.datetime) -> str:
    return _(
        "Your GPU week from %(first)s to %(last)s: %(held)s GPU-hours, of which %(idle)s idle (%(pct)s %%). %(hint)s"
    ) % {
        "first": fmt_date(timezone.localtime(start)),
        "last": fmt_date(timezone.localtime(end) - dt.timedelta(days=1)),
        "held": fmt_number(week.gpu_hours, 1),
        "idle": fmt_number(week.idle_gpu_hours, 1),
        "pct": fmt_number(100 * week.idle_share, 0),
        "hint": hint(week),
    }


def efficiency_summaries_send(*, now: dt.datetime | None = None) -> dict[str, int]:
    """Tell everyone who held GPUs last week how well they used them, once each. Returns the counts."""
    now = now or timezone.now()
    counts = {"told": 0, "mailed": 0, "failed": 0}
    week_range = report_week(now)
    if week_range is None:
        return counts
    start, end = week_range
    figures = week_efficiency_by_user(start, end)
    ref = f"efficiency:{timezone.localtime(start).date().isoformat()}"
    for person in User.objects.filter(pk__in=figures, is_active=True).order_by("pk"):
        week = figures[person.pk]
        if week.gpu_hours <= 0:
            continue
        with speaking(person):
            text = summary_text(person, week, start, end)
            subject = _("[%(lab)s] How your GPUs were used, week of %(first)s") % {
                "lab": settings.LAB_NAME,
                "first": fmt_date(timezone.localtime(start)),
            }
        if not notice_send(user=person, text=text, ref=ref):
            continue
        counts["told"] += 1
        if not person.email or not person.usage_report_email:
            continue
        try:
            EmailMessage(
                subject=subject, body=text + "\n", from_email=settings.DEFAULT_FROM_EMAIL, to=[person.email]
            ).send(fail_silently=False)
            counts["mailed"] += 1
        except Exception:  # the notice stands; the e-mail is not tried again
            log.exception("efficiency summary e-mail to %s failed", person.pk)
            counts["failed"] += 1
    return counts
