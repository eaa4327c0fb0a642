"""Usage's rows: how well each holder of the ledger used its GPUs, computed from the telemetry's one-minute history.

One row per job attempt or notebook session (the ledger's `Ref`: `job:5#2`, `notebook:12`), written when the holder
ends and refreshed while it runs (labs/usage/efficiency.py), so a report never re-scans raw telemetry.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy


class HolderEfficiency(models.Model):
    """How a holder used what it held: utilisation, memory, energy and idle time over its ledger entries."""

    holder_kind = models.CharField(max_length=16, help_text=gettext_lazy("notebook or job, as the ledger's kind."))
    holder_ref = models.CharField(
        max_length=64, unique=True, help_text=gettext_lazy("The ledger's ref: notebook:12, job:5#2.")
    )
    holder_id = models.PositiveIntegerField(null=True, help_text=gettext_lazy("The session's or job's id."))
    attempt = models.PositiveIntegerField(null=True, help_text=gettext_lazy("A job attempt's number."))
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    course = models.ForeignKey("accounts.Course", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    node = models.ForeignKey("labs.Node", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True, help_text=gettext_lazy("Null while the holder still runs."))
    gpu_hours = models.FloatField(
        help_text=gettext_lazy("From the ledger: share × time held, up to ended_at or computed_at.")
    )
    mean_util_pct = models.FloatField(
        null=True, help_text=gettext_lazy("Over the minutes with telemetry, weighted by time held.")
    )
    p95_util_pct = models.FloatField(null=True)
    peak_mem_mb = models.FloatField(null=True)
    energy_wh = models.FloatField(
        null=True, help_text=gettext_lazy("Power integrated over the minutes held, times the share.")
    )
    idle_gpu_hours = models.FloatField(
        default=0, help_text=gettext_lazy("Held while utilisation stayed under the idle threshold.")
    )
    telemetry_minutes = models.PositiveIntegerField(
        default=0, help_text=gettext_lazy("Minutes held that had telemetry.")
    )
    computed_at = models.DateTimeField()

    class Meta:
        ordering = ["-started_at"]
        indexes = [
            models.Index(fields=["started_at"], name="usage_eff_start"),
            models.Index(fields=["user", "started_at"], name="usage_eff_user_start"),
            models.Index(fields=["course", "started_at"], name="usage_eff_course_start"),
        ]

    def __str__(self) -> str:
        return f"efficiency of {self.holder_ref}"
