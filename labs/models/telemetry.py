"""Telemetry's rows: per-minute GPU history, node agents' keys, GPU health alerts."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy

from labs.models.nodes import Gpu, Node


class GpuMinute(models.Model):
    """One minute of one GPU's samples: what the node page charts and what outlives the live stream.

    Written by the telemetry collector at the end of each minute; kept TELEMETRY_HISTORY_DAYS.
    """

    gpu = models.ForeignKey(Gpu, on_delete=models.CASCADE, related_name="minutes")
    minute = models.DateTimeField(help_text=gettext_lazy("The minute's start (UTC)."))
    samples = models.PositiveIntegerField()
    util_avg = models.FloatField(null=True)
    util_max = models.FloatField(null=True)
    mem_used_avg_mb = models.FloatField(null=True)
    mem_used_max_mb = models.FloatField(null=True)
    temp_avg_c = models.FloatField(null=True)
    temp_max_c = models.FloatField(null=True)
    power_avg_w = models.FloatField(null=True)
    power_max_w = models.FloatField(null=True)

    class Meta:
        ordering = ["gpu", "minute"]
        constraints = [models.UniqueConstraint(fields=["gpu", "minute"], name="gpu_minute_once")]
        indexes = [models.Index(fields=["minute"], name="gpu_minute_at")]

    def __str__(self) -> str:
        return f"{self.gpu} at {self.minute:%Y-%m-%d %H:%M}"


class NodeAgentToken(models.Model):
    """The credential a node's agent pushes its NVML samples with. Only a hash is kept; the key is shown once."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="agent_tokens")
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(
        max_length=16, editable=False, help_text=gettext_lazy("The key's first characters, to tell keys apart.")
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", editable=False
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        verbose_name = gettext_lazy("node agent token")
        verbose_name_plural = gettext_lazy("node agent tokens")
        ordering = ["node__name", "-created_at"]

    def __str__(self) -> str:
        return f"{self.node.name} agent key {self.prefix}…"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class GpuAlertKind(models.TextChoices):
    TEMPERATURE = "temperature", gettext_lazy("Temperature")
    XID = "xid", gettext_lazy("Xid error")


class GpuAlert(models.Model):
    """A GPU crossed a health threshold. Open until its readings are back to normal; admins may cordon the node."""

    gpu = models.ForeignKey(Gpu, on_delete=models.CASCADE, related_name="alerts")
    kind = models.CharField(max_length=16, choices=GpuAlertKind.choices)
    value = models.FloatField(help_text=gettext_lazy("The worst reading: degrees, or the Xid code."))
    threshold = models.FloatField()
    message = models.CharField(max_length=300)
    raised_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()
    cleared_at = models.DateTimeField(null=True, blank=True)
    acknowledged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    acknowledged_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = gettext_lazy("GPU alert")
        verbose_name_plural = gettext_lazy("GPU alerts")
        ordering = ["-raised_at"]
        constraints = [
            # The collector updates the one open alert of a kind rather than raising a new one every second.
            models.UniqueConstraint(
                fields=["gpu", "kind"], condition=Q(cleared_at__isnull=True), name="gpu_alert_one_open_per_kind"
            )
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} on {self.gpu}"

    @property
    def is_open(self) -> bool:
        return self.cleared_at is None
