"""The ledger: who holds which GPU when. Quotas, usage reports, the live holders and idle detection read it."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext_lazy

from labs.models.nodes import Gpu


class AllocationKind(models.TextChoices):
    NOTEBOOK = "notebook", gettext_lazy("Notebook session")
    JOB = "job", gettext_lazy("Training job attempt")
    RESERVATION = "reservation", gettext_lazy("Node reservation")


class Allocation(models.Model):
    """One entry of the ledger: `user` held `share` of `gpu` from `starts_at` until `ends_at`.

    Quotas, usage reports, the live "who is on this GPU" and idle detection all read this
    table and nothing else. An open entry (ends_at is null) is still being held.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="allocations")
    course = models.ForeignKey(
        "accounts.Course", on_delete=models.SET_NULL, null=True, blank=True, related_name="allocations"
    )
    kind = models.CharField(max_length=16, choices=AllocationKind.choices)
    # What holds it, e.g. "job:42#2" or "notebook:17": ties ledger rows to the thing that made them.
    ref = models.CharField(max_length=64, db_index=True)
    gpu = models.ForeignKey(Gpu, on_delete=models.PROTECT, related_name="allocations")
    share = models.DecimalField(
        max_digits=4,
        decimal_places=3,
        default=Decimal("1"),
        validators=[MinValueValidator(Decimal("0.001")), MaxValueValidator(Decimal("1"))],
    )
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField(null=True, blank=True)
    reason = models.CharField(max_length=200, blank=True)

    class Meta:
        verbose_name = gettext_lazy("allocation")
        verbose_name_plural = gettext_lazy("allocations")
        ordering = ["-starts_at"]
        indexes = [
            models.Index(fields=["user", "starts_at"], name="alloc_user_start"),
            models.Index(fields=["gpu", "ends_at"], name="alloc_gpu_end"),
            # Usage reports read a window by its start; the CSV export pages through it by (starts_at, id).
            models.Index(fields=["starts_at", "id"], name="alloc_start_id"),
            # ... and find the entries begun before a window that were still held at its start.
            models.Index(fields=["ends_at"], name="alloc_end"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(ends_at__isnull=True) | Q(ends_at__gte=F("starts_at")), name="allocation_ends_after_start"
            ),
            models.CheckConstraint(condition=Q(share__gt=0) & Q(share__lte=1), name="allocation_share_in_0_1"),
        ]

    def __str__(self) -> str:
        return f"{self.ref} on {self.gpu} ({self.share})"
