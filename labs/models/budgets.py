"""Budgets: GPU-hours a course or a person may use in a period (a term, or each month), what was told about them.

Use is read from the one ledger (labs.ledger); these rows hold only the limits, the prices and what was sent.
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from labs.budgets.validation import (
    MAX_BUDGET_GPU_HOURS,
    MAX_PRICE_PER_GPU_HOUR,
    MAX_PRICE_PER_KWH,
    budget_fill_days,
    budget_problems,
)


class BudgetPeriod(models.TextChoices):
    TERM = "term", gettext_lazy("Term (from its first to its last day)")
    MONTH = "month", gettext_lazy("Each calendar month")


class BudgetAction(models.TextChoices):
    WARN = "warn", gettext_lazy("Warn only")
    BLOCK = "block", gettext_lazy("Refuse new notebooks and jobs")


class Budget(models.Model):
    """GPU-hours one course or one person may use in a period, and what happens at 100 %.

    A term budget runs from `starts_on` through `ends_on` (a course's term by default); a monthly one applies to
    each calendar month from `starts_on` (through `ends_on`, when given), starting afresh each month.
    """

    name = models.CharField(max_length=120, help_text=gettext_lazy("Names the budget in alerts and refusals."))
    course = models.ForeignKey(
        "accounts.Course", on_delete=models.CASCADE, null=True, blank=True, related_name="budgets"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True, related_name="budgets"
    )
    period = models.CharField(max_length=8, choices=BudgetPeriod.choices, default=BudgetPeriod.TERM)
    starts_on = models.DateField(
        blank=True,
        help_text=gettext_lazy("First day it counts (the lab's time zone); blank: a course's term starts it."),
    )
    ends_on = models.DateField(
        null=True, blank=True, help_text=gettext_lazy("Last day it counts; blank: monthly, no end.")
    )
    gpu_hours = models.DecimalField(
        max_digits=10,
        decimal_places=1,
        validators=[MinValueValidator(Decimal("0.1")), MaxValueValidator(MAX_BUDGET_GPU_HOURS)],
        help_text=gettext_lazy("GPU-hours per period (notebooks and jobs; a quarter GPU for 4 h is 1 GPU-hour)."),
    )
    price_per_gpu_hour = models.DecimalField(
        max_digits=10,
        decimal_places=4,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0")), MaxValueValidator(MAX_PRICE_PER_GPU_HOUR)],
        help_text=gettext_lazy("In USAGE_CURRENCY; blank: no cost shown."),
    )
    price_per_kwh = models.DecimalField(
        max_digits=8,
        decimal_places=4,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0")), MaxValueValidator(MAX_PRICE_PER_KWH)],
        help_text=gettext_lazy(
            "Energy price in USAGE_CURRENCY; the energy is the GPUs' power from telemetry while held."
        ),
    )
    thresholds = models.CharField(
        max_length=40,
        blank=True,
        help_text=gettext_lazy("Alert at these percentages, e.g. 50,80,100; blank: the lab's default."),
    )
    on_exceed = models.CharField(max_length=8, choices=BudgetAction.choices, default=BudgetAction.WARN)
    note = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = gettext_lazy("budget")
        verbose_name_plural = gettext_lazy("budgets")
        ordering = ["name", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(course__isnull=False, user__isnull=True) | Q(course__isnull=True, user__isnull=False),
                name="budget_for_a_course_or_a_person",
            ),
            models.CheckConstraint(
                condition=Q(gpu_hours__gt=0) & Q(gpu_hours__lte=MAX_BUDGET_GPU_HOURS), name="budget_gpu_hours_sane"
            ),
            models.CheckConstraint(
                condition=Q(price_per_gpu_hour__isnull=True)
                | (Q(price_per_gpu_hour__gte=0) & Q(price_per_gpu_hour__lte=MAX_PRICE_PER_GPU_HOUR)),
                name="budget_gpu_hour_price_sane",
            ),
            models.CheckConstraint(
                condition=Q(price_per_kwh__isnull=True)
                | (Q(price_per_kwh__gte=0) & Q(price_per_kwh__lte=MAX_PRICE_PER_KWH)),
                name="budget_kwh_price_sane",
            ),
            models.CheckConstraint(
                condition=Q(ends_on__isnull=True) | Q(ends_on__gte=F("starts_on")), name="budget_ends_after_start"
            ),
            models.CheckConstraint(
                condition=Q(period="month") | Q(ends_on__isnull=False), name="budget_term_has_an_end"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def scope_label(self) -> str:
        if self.course_id:
            return _("course %(code)s") % {"code": self.course.code}
        return _("user %(name)s") % {"name": self.user.username}

    def clean(self) -> None:
        budget_fill_days(self, today=timezone.localdate())
        problems = budget_problems(self)
        if problems:
            raise ValidationError(problems)


class BudgetAlert(models.Model):
    """One threshold of one budget crossed in one period: told once (the unique constraint decides who tells)."""

    budget = models.ForeignKey(Budget, on_delete=models.CASCADE, related_name="alerts")
    period_start = models.DateField()
    threshold = models.PositiveSmallIntegerField()
    used_gpu_hours = models.DecimalField(max_digits=12, decimal_places=2)
    sent_at = models.DateTimeField()
    notices = models.PositiveIntegerField(default=0)
    emails = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name = gettext_lazy("budget alert")
        verbose_name_plural = gettext_lazy("budget alerts")
        ordering = ["-sent_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["budget", "period_start", "threshold"], name="budget_alert_once_per_period"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.budget} {self.threshold}% ({self.period_start})"


class UsageReportSent(models.Model):
    """The weekly usage summary sent to one person for one week (Monday): sent once, whichever worker runs."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="usage_reports")
    week_start = models.DateField()
    sent_at = models.DateTimeField()

    class Meta:
        ordering = ["-week_start", "user_id"]
        constraints = [models.UniqueConstraint(fields=["user", "week_start"], name="usage_report_once_per_week")]

    def __str__(self) -> str:
        return f"{self.user} week of {self.week_start}"
