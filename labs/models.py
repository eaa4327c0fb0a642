"""The lab: nodes, their GPUs, and the ledger of who holds which GPU when."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import F, Q

# Kubernetes node names are DNS-1123 subdomains; we keep to the label subset (no dots) for readability.
node_name_validator = RegexValidator(
    r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
    "A node name is lower-case letters, digits and dashes (at most 63), as Kubernetes requires.",
)


class NodeStatus(models.TextChoices):
    READY = "ready", "Ready"
    CORDONED = "cordoned", "Cordoned"
    DOWN = "down", "Down"


class Node(models.Model):
    name = models.CharField(max_length=63, unique=True, validators=[node_name_validator])
    labels = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=NodeStatus.choices, default=NodeStatus.READY, db_index=True)
    status_reason = models.CharField(max_length=200, blank=True)
    status_changed_at = models.DateTimeField(null=True, blank=True)
    source = models.CharField(max_length=16, default="local", help_text="Where the inventory learnt of this node.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if not isinstance(self.labels, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in self.labels.items()
        ):
            raise ValidationError({"labels": "Labels are a mapping of text keys to text values."})


class Gpu(models.Model):
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="gpus")
    index = models.PositiveSmallIntegerField()
    uuid = models.CharField(max_length=64, unique=True, null=True, blank=True)
    model = models.CharField(max_length=100)
    memory_mb = models.PositiveIntegerField(validators=[MinValueValidator(1)])

    class Meta:
        ordering = ["node__name", "index"]
        constraints = [models.UniqueConstraint(fields=["node", "index"], name="gpu_index_unique_per_node")]

    def __str__(self) -> str:
        return f"{self.node.name}/{self.index}"


class AllocationKind(models.TextChoices):
    NOTEBOOK = "notebook", "Notebook session"
    JOB = "job", "Training job attempt"
    RESERVATION = "reservation", "Node reservation"


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
        ordering = ["-starts_at"]
        indexes = [
            models.Index(fields=["user", "starts_at"], name="alloc_user_start"),
            models.Index(fields=["gpu", "ends_at"], name="alloc_gpu_end"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(ends_at__isnull=True) | Q(ends_at__gte=F("starts_at")), name="allocation_ends_after_start"
            ),
            models.CheckConstraint(condition=Q(share__gt=0) & Q(share__lte=1), name="allocation_share_in_0_1"),
        ]

    def __str__(self) -> str:
        return f"{self.ref} on {self.gpu} ({self.share})"
