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


class UsageDay(models.Model):
    """Partial sums beside the ledger: the GPU time of one person's closed ledger entries of one kind, booked to one
    course (0: none), within one day of the lab's zone, in share-thousandths × microseconds (an exact integer: 1 GPU
    for 1 s is 10^9). Kept in the close's own transaction (labs/usage/daysums.py); open entries are never in it."""

    day = models.DateField()
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    course_key = models.IntegerField(default=0, help_text=gettext_lazy("The course's id; 0: booked to no course."))
    kind = models.CharField(max_length=16)
    share_us = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["day", "user", "course_key", "kind"], name="usage_day_key"),
        ]
        indexes = [models.Index(fields=["user", "day"], name="usage_day_user")]

    def __str__(self) -> str:
        return f"{self.day} {self.user_id}/{self.course_key}/{self.kind}"


class UsageDayCourse(models.Model):
    """`UsageDay` summed over people: one row per day, course (0: none) and kind, what the lab's and a course's day
    reports read (a few dozen rows a day, not thousands)."""

    day = models.DateField()
    course_key = models.IntegerField(default=0)
    kind = models.CharField(max_length=16)
    share_us = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["day", "course_key", "kind"], name="usage_day_course_key")]

    def __str__(self) -> str:
        return f"{self.day} {self.course_key}/{self.kind}"
