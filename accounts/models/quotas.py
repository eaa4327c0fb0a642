"""Quotas: limits for a role (the policy), a course or a person (overrides)."""

from __future__ import annotations

from decimal import Decimal

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext, gettext_lazy

from accounts.models.people import Course, Role, User


class Quota(models.Model):
    """Limits for one role (the policy), one course, or one user (overrides).

    A blank limit inherits: user override, then the most generous active course, then
    the role's policy, then the built-in default for the role.
    """

    role = models.CharField(max_length=16, choices=Role.choices, null=True, blank=True, unique=True)
    course = models.OneToOneField(Course, on_delete=models.CASCADE, null=True, blank=True, related_name="quota")
    user = models.OneToOneField(User, on_delete=models.CASCADE, null=True, blank=True, related_name="quota")

    max_notebooks = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text=gettext_lazy("Notebooks running at the same time.")
    )
    notebook_gpu_share = models.DecimalField(
        max_digits=4,
        decimal_places=3,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0.05")), MaxValueValidator(Decimal("1"))],
        help_text=gettext_lazy("Largest share of one GPU a notebook may take (1 = a whole 4090)."),
    )
    gpu_hours_week = models.DecimalField(
        max_digits=8,
        decimal_places=1,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0"))],
        help_text=gettext_lazy(
            "GPU-hours per week (Monday 00:00 in the lab's time zone), notebooks and jobs together."
        ),
    )
    max_jobs = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text=gettext_lazy("Training jobs running at once.")
    )
    max_gpus_per_job = models.PositiveSmallIntegerField(null=True, blank=True)
    reservation_max_nodes = models.PositiveSmallIntegerField(null=True, blank=True)
    reservation_max_hours = models.DecimalField(
        max_digits=6, decimal_places=1, null=True, blank=True, validators=[MinValueValidator(Decimal("0"))]
    )
    reservation_node_hours_week = models.DecimalField(
        max_digits=7,
        decimal_places=1,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0"))],
        help_text=gettext_lazy("Node-hours a person may have reserved per week (by the week the window starts in)."),
    )
    reservation_horizon_days = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text=gettext_lazy("How many days ahead a reservation may start.")
    )
    reservation_notice_min = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text=gettext_lazy("Minutes of notice a reservation needs before it starts (fewer is kinder)."),
    )
    reservation_approval_nodes = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text=gettext_lazy("Reservations of more nodes than this wait for an admin's approval."),
    )
    note = models.CharField(max_length=200, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    LIMIT_FIELDS = (
        "max_notebooks",
        "notebook_gpu_share",
        "gpu_hours_week",
        "max_jobs",
        "max_gpus_per_job",
        "reservation_max_nodes",
        "reservation_max_hours",
        "reservation_node_hours_week",
        "reservation_horizon_days",
        "reservation_notice_min",
        "reservation_approval_nodes",
    )
    # Limits where less is more generous: the most generous course is the one with the smallest value.
    LOWER_IS_GENEROUS = frozenset({"reservation_notice_min"})

    class Meta:
        verbose_name = gettext_lazy("quota")
        verbose_name_plural = gettext_lazy("quotas")
        ordering = ["role", "course__code", "user__username"]
        constraints = [
            models.CheckConstraint(
                condition=(
                    Q(role__isnull=False, course__isnull=True, user__isnull=True)
                    | Q(role__isnull=True, course__isnull=False, user__isnull=True)
                    | Q(role__isnull=True, course__isnull=True, user__isnull=False)
                ),
                name="quota_has_exactly_one_scope",
            )
        ]

    def __str__(self) -> str:
        return f"Quota for {self.scope_label}"

    @property
    def scope_label(self) -> str:
        if self.role:
            return f"role {self.role}"
        if self.course_id:
            return f"course {self.course.code}"
        return f"user {self.user.username}"

    def clean(self) -> None:
        scopes = [bool(self.role), self.course_id is not None, self.user_id is not None]
        if sum(scopes) != 1:
            raise ValidationError(gettext("A quota applies to exactly one of: a role, a course, or a user."))
