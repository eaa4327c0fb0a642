"""Maintenance windows (nodes out of service for a time, announced ahead) and announcements (a banner with a
severity and an end). labs/maintenance/ moves them along."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext_lazy

from labs.models.nodes import Node


class Maintenance(models.Model):
    """Some nodes (or all: `all_nodes`) out of service from `starts_at` to `ends_at`. The scheduler places no work
    that would run into it; people with work or bookings there are told MAINTENANCE_NOTIFY_LEAD_H ahead
    (`notified_at`); at its start the nodes are drained and cordoned (`started_at`), at its end uncordoned
    (`ended_at`)."""

    starts_at = models.DateTimeField(db_index=True)
    ends_at = models.DateTimeField(db_index=True)
    reason = models.CharField(max_length=300)
    all_nodes = models.BooleanField(default=False)
    nodes = models.ManyToManyField(Node, blank=True, related_name="maintenances")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    notified_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["starts_at", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(ends_at__gt=F("starts_at")), name="maintenance_ends_after_start"),
        ]

    def __str__(self) -> str:
        return f"maintenance {self.starts_at:%Y-%m-%d %H:%M}: {self.reason[:40]}"


class Severity(models.TextChoices):
    INFO = "info", gettext_lazy("Information")
    WARNING = "warning", gettext_lazy("Warning")
    CRITICAL = "critical", gettext_lazy("Critical")


class Announcement(models.Model):
    """A banner on every page from `starts_at` until `ends_at`."""

    text = models.CharField(max_length=300)
    severity = models.CharField(max_length=16, choices=Severity.choices, default=Severity.INFO)
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField(db_index=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-starts_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(ends_at__gt=F("starts_at")), name="announcement_ends_after_start"),
        ]

    def __str__(self) -> str:
        return self.text[:60]
