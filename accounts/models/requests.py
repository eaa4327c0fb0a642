"""Requests for more: a person asks for a higher weekly GPU-hour quota or extra GPU-hours for a while; a teacher of
the course (for course work) or an admin decides. An approved request is the time-limited override itself: the quota
and budget checks honour it from its decision until `granted_until`, and the expiry sweep closes it."""

from __future__ import annotations

from decimal import Decimal

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy

from accounts.models.people import Course, User


class RequestKind(models.TextChoices):
    # The weekly GPU-hour quota raised to `amount` GPU-hours per week.
    QUOTA = "quota", gettext_lazy("A higher weekly GPU-hour quota")
    # `amount` GPU-hours on top of the weekly quota and of the budgets that count the person's work.
    GPU_HOURS = "gpu_hours", gettext_lazy("Extra GPU-hours")


class RequestStatus(models.TextChoices):
    PENDING = "pending", gettext_lazy("Waiting for a decision")
    APPROVED = "approved", gettext_lazy("Approved")
    REFUSED = "refused", gettext_lazy("Refused")
    EXPIRED = "expired", gettext_lazy("Expired")


class MoreRequest(models.Model):
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="more_requests")
    kind = models.CharField(max_length=16, choices=RequestKind.choices)
    amount = models.DecimalField(max_digits=8, decimal_places=1)
    until = models.DateTimeField()
    reason = models.CharField(max_length=500)
    course = models.ForeignKey(Course, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    status = models.CharField(
        max_length=16, choices=RequestStatus.choices, default=RequestStatus.PENDING, db_index=True
    )
    created_at = models.DateTimeField(auto_now_add=True)
    decided_by = models.ForeignKey(User, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_reason = models.CharField(max_length=500, blank=True)
    # What the decider granted (they may change the amount and the end); the override in force is these.
    granted_amount = models.DecimalField(max_digits=8, decimal_places=1, null=True, blank=True)
    granted_until = models.DateTimeField(null=True, blank=True)
    warned_at = models.DateTimeField(null=True, blank=True)  # the "ends tomorrow" notice went out

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(condition=Q(amount__gt=0), name="more_request_amount_positive"),
            models.CheckConstraint(
                condition=Q(granted_amount__isnull=True) | Q(granted_amount__gt=0),
                name="more_request_granted_amount_positive",
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.user} {self.kind} {self.amount}"

    @property
    def in_force_amount(self) -> Decimal:
        return self.granted_amount if self.granted_amount is not None else self.amount
