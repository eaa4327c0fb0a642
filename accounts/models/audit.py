"""The audit trail: who changed what, written by the services in the same transaction as the change."""

from __future__ import annotations

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from accounts.models.people import Course, User


class AuditEntry(models.Model):
    """One change a person (or the lab itself: no actor) made to roles, quotas, budgets, courses' members,
    reservations' decisions, nodes, tokens, sign-in mappings, profiles or requests for more.

    Rows are only ever added (accounts.audit.record) and removed by the retention sweep (AUDIT_RETENTION_DAYS): the
    admin console shows them read-only and the API has no write. The actor's name and the target's label are kept
    as text, so an entry still reads right after the account or the thing is gone."""

    at = models.DateTimeField(_("when"), default=timezone.now, db_index=True)
    actor = models.ForeignKey(
        User, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", verbose_name=_("who")
    )
    actor_name = models.CharField(_("who"), max_length=150, blank=True)
    # A stable dotted code: quota.change, node.cordon.
    action = models.CharField(_("action"), max_length=64, db_index=True)
    target_type = models.CharField(_("kind of target"), max_length=40, db_index=True)  # e.g. "user", "node", "budget"
    target_id = models.CharField(_("target id"), max_length=64, blank=True)
    target_label = models.CharField(_("target"), max_length=200, blank=True)
    # The course the change belongs to, when it belongs to one: its teachers see the entry.
    course = models.ForeignKey(
        Course, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", verbose_name=_("course")
    )
    before = models.JSONField(_("before"), default=dict, blank=True)
    after = models.JSONField(_("after"), default=dict, blank=True)
    reason = models.CharField(_("reason"), max_length=500, blank=True)
    request_id = models.CharField(_("request id"), max_length=64, blank=True, db_index=True)

    class Meta:
        ordering = ["-at", "-pk"]
        indexes = [models.Index(fields=["target_type", "target_id"], name="audit_target")]
        verbose_name = _("audit entry")
        verbose_name_plural = _("audit entries")

    def __str__(self) -> str:
        who = self.actor_name or "system"
        return f"{self.at:%Y-%m-%d %H:%M} {who} {self.action} {self.target_type}:{self.target_label or self.target_id}"
