"""The audit trail: who changed what, written by the services in the same transaction as the change."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from accounts.models.people import Course, User


class AuditEntry(models.Model):
    """One change a person (or the lab itself: no actor) made to roles, quotas, budgets, courses' members,
    reservations' decisions, nodes, tokens, sign-in mappings, profiles or requests for more.

    Rows are only ever added (accounts.audit.record) and removed by the retention sweep (AUDIT_RETENTION_DAYS): the
    admin console shows them read-only and the API has no write. The actor's name and the target's label are kept
    as text, so an entry still reads right after the account or the thing is gone."""

    at = models.DateTimeField(default=timezone.now, db_index=True)
    actor = models.ForeignKey(User, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    actor_name = models.CharField(max_length=150, blank=True)
    action = models.CharField(max_length=64, db_index=True)  # a stable dotted code: quota.change, node.cordon
    target_type = models.CharField(max_length=40, db_index=True)  # e.g. "user", "node", "budget"
    target_id = models.CharField(max_length=64, blank=True)
    target_label = models.CharField(max_length=200, blank=True)
    # The course the change belongs to, when it belongs to one: its teachers see the entry.
    course = models.ForeignKey(Course, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    before = models.JSONField(default=dict, blank=True)
    after = models.JSONField(default=dict, blank=True)
    reason = models.CharField(max_length=500, blank=True)
    request_id = models.CharField(max_length=64, blank=True, db_index=True)

    class Meta:
        ordering = ["-at", "-pk"]
        indexes = [models.Index(fields=["target_type", "target_id"], name="audit_target")]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        who = self.actor_name or "system"
        return f"{self.at:%Y-%m-%d %H:%M} {who} {self.action} {self.target_type}:{self.target_label or self.target_id}"
