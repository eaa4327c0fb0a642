"""The budget check: a notice and an e-mail at each threshold a budget crosses, once per budget and period.

Run by Celery beat (`labs.tasks.budgets_check`, every BUDGETS_CHECK_INTERVAL_S) and right after a holder ends
(labs.budgets.receivers). Each threshold told is a BudgetAlert row whose unique constraint (budget, period,
threshold) decides which of two concurrent checks tells: the other's insert waits for the first to commit and then
finds the row. The notices and the e-mails are sent inside that transaction, one e-mail per person: an address the
SMTP server refuses costs that person their e-mail and the alert stands (a retry would mail the others again); only
when nobody could be reached (the server is down, or refuses everyone) is nothing recorded, and the next check tries
again.
"""

from __future__ import annotations

import datetime as dt
import logging
import smtplib
from collections.abc import Callable, Iterable

from django.conf import settings
from django.core.mail import EmailMessage, get_connection
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.locale import fmt_number, speaking
from accounts.models import NoticeLevel, User
from accounts.notify import EMAIL, PORTAL, notify
from accounts.services import notice_send
from labs.budgets.selectors import BudgetUse, alert_recipients, budget_use, thresholds_of, who_raises
from labs.models.budgets import Budget, BudgetAction, BudgetAlert

log = logging.getLogger(__name__)


def alert_sentence(use: BudgetUse, threshold: int) -> str:
    """The alert, in the active language (each recipient's: `speaking(person)`)."""
    budget, period = use.budget, use.period
    text = _(
        "Budget “%(name)s” (%(scope)s) has reached %(threshold)s %%: %(used)s of %(allowed)s GPU-hours %(period)s."
    ) % {
        "name": budget.name,
        "scope": budget.scope_label,
        "threshold": threshold,
        "used": fmt_number(use.used_gpu_hours, 1),
        "allowed": fmt_number(budget.gpu_hours, 1),
        "period": period.label,
    }
    if use.cost is not None:
        text += " " + _("Cost so far: %(cost)s %(currency)s.") % {
            "cost": fmt_number(use.cost, 2),
            "currency": use.currency,
        }
    if threshold >= 100:
        if budget.on_exceed == BudgetAction.BLOCK:
            text += " " + _("New notebooks and jobs that count against it are refused until %(day)s.") % {
                "day": period.resets
            }
        else:
            text += " " + _("New work still starts (this budget only warns).")
        text += " " + _("Ask %(whom)s to raise it if more is needed.") % {"whom": who_raises(budget)}
    return text


class NobodyReached(Exception):
    """Every e-mail of an alert was refused: the alert is not recorded, so the next check tries again."""


def _mail(recipients: Iterable[User], compose: Callable[[], tuple[str, str]]) -> int:
    """E-mail each person on their own, in their language (`compose()` gives the subject and body, called as they
    speak), over one connection; how many were reached. Raises NobodyReached (or the connection's error) when people
    with an address were due an e-mail and none could be reached."""
    addressed = [person for person in recipients if person.email]
    if not addressed:
        return 0
    reached, refused = 0, []
    with get_connection(fail_silently=False) as connection:  # a server that is down raises here: nobody reached
        for person in addressed:
            with speaking(person):
                subject, body = compose()
            message = EmailMessage(
                subject=subject,
                body=body,
                from_email=settings.DEFAULT_FROM_EMAIL,
                to=[person.email],
                connection=connection,
            )
            try:
                reached += message.send(fail_silently=False)
            except (smtplib.SMTPException, OSError) as exc:
                log.warning("budget alert e-mail to %s (%s) failed: %s", person.username, person.email, exc)
                refused.append(person.username)
    if not reached:
        raise NobodyReached(f"the mail server refused every recipient: {', '.join(refused)}")
    return reached


def _tell(use: BudgetUse, threshold: int, *, now: dt.datetime) -> tuple[int, int]:
    if use.budget.price_per_kwh is not None:  # the check reads no energy (a telemetry join); the sentence's cost does
        use = budget_use(use.budget, now=now)
    people = alert_recipients(use.budget)
    level = NoticeLevel.WARNING if threshold >= 80 else NoticeLevel.INFO
    ref = f"budget:{use.budget.pk}:{use.period.first_day:%Y%m%d}:{threshold}"
    notices = 0
    for person in people:  # each in their own language
        with speaking(person):
            notices += notice_send(user=person, text=alert_sentence(use, threshold), ref=ref, level=level)

    def compose() -> tuple[str, str]:
        subject = _("[%(lab)s] Budget “%(name)s” at %(threshold)s %%") % {
            "lab": settings.LAB_NAME,
            "name": use.budget.name,
            "threshold": threshold,
        }
        details = _("The lab's usage: sign in to the portal to see the details.")
        return subject, f"{alert_sentence(use, threshold)}\n\n{details}\n"

    emails = _mail(people, compose)
    # The notices and e-mails above are those channels (their own once-only rules); chat as each person chose.
    notify(
        people,
        "budget.threshold",
        {"id": use.budget.pk, "name": use.budget.name, "threshold": threshold},
        already=(PORTAL, EMAIL),
    )
    return notices, emails


def _alert_once(use: BudgetUse, threshold: int, *, now: dt.datetime, tell: bool) -> bool:
    """Claim (budget, period, threshold); True when this call claimed it (and told, with `tell`)."""
    with transaction.atomic():
        alert, created = BudgetAlert.objects.get_or_create(
            budget=use.budget,
            period_start=use.period.first_day,
            threshold=threshold,
            defaults={"used_gpu_hours": use.used_gpu_hours, "sent_at": now},
        )
        if created and tell:
            alert.notices, alert.emails = _tell(use, threshold, now=now)
            alert.save(update_fields=["notices", "emails"])
    return created


def budget_check(budget: Budget, *, now: dt.datetime) -> int:
    """Tell the thresholds this budget crossed in its period and has not told yet. When several are crossed at once
    (a long job ended), only the highest is told; the lower ones are recorded as passed."""
    use = budget_use(budget, now=now, with_energy=False)
    if use.period is None:
        return 0
    told = 0
    already = set(
        BudgetAlert.objects.filter(budget=budget, period_start=use.period.first_day).values_list("threshold", flat=True)
    )
    crossed = [threshold for threshold in thresholds_of(budget) if use.reached(threshold) and threshold not in already]
    for position, threshold in enumerate(sorted(crossed, reverse=True)):
        if _alert_once(use, threshold, now=now, tell=position == 0):
            told += position == 0
    return told


def budgets_check(
    *, now: dt.datetime | None = None, user_ids: Iterable[int] = (), course_ids: Iterable[int] = ()
) -> dict[str, int]:
    """Check every budget (or only those of these people and courses, after their work ended)."""
    now = now or timezone.now()
    budgets = Budget.objects.select_related("course", "user").order_by("pk")
    user_ids, course_ids = list(user_ids), list(course_ids)
    if user_ids or course_ids:
        budgets = budgets.filter(Q(user_id__in=user_ids) | Q(course_id__in=course_ids))
    report = {"budgets": 0, "alerts": 0, "failed": 0}
    for budget in budgets:
        report["budgets"] += 1
        try:
            report["alerts"] += budget_check(budget, now=now)
        except Exception:  # one budget's mail server trouble must not stop the others; the next check retries
            log.exception("budget %s: the alert could not be sent", budget.pk)
            report["failed"] += 1
    return report
