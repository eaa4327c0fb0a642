"""Health: a GPU that runs too hot for too long, or reports an Xid error, raises an alert for the admins.

The watch runs inside the collector on the samples of each tick and writes only when something
changes (an alert raised, worse, cleared) or once a minute while it lasts, not every second.
Temperature alerts clear themselves once the GPU is a few degrees under the threshold; an Xid
code stays until the driver reports another or an admin clears the alert.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from labs.models import Gpu, GpuAlert, GpuAlertKind
from labs.telemetry.samples import GpuSample, GpuTarget

log = logging.getLogger("labs.telemetry")

HYSTERESIS_C = 3.0
TOUCH_EVERY_S = 60.0
XID_MEANINGS = {
    13: gettext_lazy("graphics engine exception, usually the application"),
    31: gettext_lazy("memory page fault, usually the application"),
    43: gettext_lazy("the GPU stopped an application"),
    45: gettext_lazy("preemptive cleanup after an earlier error"),
    48: gettext_lazy("double-bit ECC error"),
    63: gettext_lazy("ECC page retirement or row remapping"),
    64: gettext_lazy("ECC page retirement or row remapping failed"),
    74: gettext_lazy("NVLink error"),
    79: gettext_lazy("the GPU has fallen off the bus"),
    92: gettext_lazy("high single-bit ECC error rate"),
    94: gettext_lazy("contained ECC error"),
    95: gettext_lazy("uncontained ECC error"),
    119: gettext_lazy("GSP RPC timeout"),
    120: gettext_lazy("GSP error"),
}


@dataclasses.dataclass(frozen=True)
class AlertChange:
    action: str  # raise | touch | clear
    gpu_id: int
    kind: str
    value: float = 0.0
    threshold: float = 0.0
    message: str = ""


def _fmt_time(now: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(now, tz=dt.UTC)


class HealthWatch:
    def __init__(
        self,
        *,
        temp_threshold_c: float | None = None,
        hold_s: float | None = None,
        xid_ignored: set[int] | None = None,
    ) -> None:
        self.temp_threshold_c = float(settings.TELEMETRY_TEMP_ALERT_C if temp_threshold_c is None else temp_threshold_c)
        self.hold_s = float(settings.TELEMETRY_TEMP_ALERT_AFTER_S if hold_s is None else hold_s)
        self.xid_ignored = set(settings.TELEMETRY_XID_IGNORED if xid_ignored is None else xid_ignored)
        self._hot_since: dict[int, float] = {}
        self._xid_seen: dict[int, int] = {}
        # (gpu id, kind) -> [worst value, last write time, message] of the open alerts
        self.open: dict[tuple[int, str], list] = {}

    def load(self) -> None:
        """What the database knows: open alerts, and the last Xid code already alerted on each GPU."""
        self.open = {
            (alert.gpu_id, alert.kind): [alert.value, alert.last_seen_at.timestamp(), alert.message]
            for alert in GpuAlert.objects.filter(cleared_at__isnull=True)
        }
        for gpu_id, value in (
            GpuAlert.objects.filter(kind=GpuAlertKind.XID).order_by("raised_at").values_list("gpu_id", "value")
        ):
            self._xid_seen[gpu_id] = int(value)

    def alerts_of(self, gpu_id: int) -> list[dict]:
        return [
            {"kind": kind, "message": entry[2]}
            for (alert_gpu, kind), entry in sorted(self.open.items())
            if alert_gpu == gpu_id
        ]

    def check(self, pairs: list[tuple[GpuTarget, GpuSample]], now: float) -> list[AlertChange]:
        """Look at this tick's fresh samples; what to write."""
        changes: list[AlertChange] = []
        for target, sample in pairs:
            changes.extend(self._temperature(target, sample, now))
            changes.extend(self._xid(target, sample, now))
        return changes

    def _temperature(self, target: GpuTarget, sample: GpuSample, now: float) -> list[AlertChange]:
        if sample.temp_c is None:
            return []
        key = (target.gpu_id, GpuAlertKind.TEMPERATURE)
        threshold = self.temp_threshold_c
        if sample.temp_c >= threshold:
            since = self._hot_since.setdefault(target.gpu_id, now)
            if now - since < self.hold_s:
                return []
            entry = self.open.get(key)
            if entry is None:
                message = _(
                    "%(node)s GPU %(index)s at %(temp).0f °C, over %(threshold).0f °C for %(seconds).0f s. Consider"
                    " cordoning %(node)s and checking its cooling."
                ) % {
                    "node": target.node,
                    "index": target.index,
                    "temp": sample.temp_c,
                    "threshold": threshold,
                    "seconds": now - since,
                }
                self.open[key] = [sample.temp_c, now, message]
                return [AlertChange("raise", target.gpu_id, key[1], sample.temp_c, threshold, message)]
            if sample.temp_c > entry[0] or now - entry[1] >= TOUCH_EVERY_S:
                entry[0], entry[1] = max(entry[0], sample.temp_c), now
                return [AlertChange("touch", target.gpu_id, key[1], entry[0], threshold)]
            return []
        if sample.temp_c < threshold - HYSTERESIS_C:
            self._hot_since.pop(target.gpu_id, None)
            if self.open.pop(key, None) is not None:
                return [AlertChange("clear", target.gpu_id, key[1])]
        return []

    def _xid(self, target: GpuTarget, sample: GpuSample, now: float) -> list[AlertChange]:
        code = sample.xid
        if code is None:
            return []
        code = int(code)
        previous = self._xid_seen.get(target.gpu_id)
        self._xid_seen[target.gpu_id] = code
        if code == 0 or code == previous or code in self.xid_ignored:
            return []
        meaning = XID_MEANINGS.get(code, gettext_lazy("see NVIDIA's Xid catalog"))
        message = _("%(node)s GPU %(index)s reported Xid %(code)s (%(meaning)s). Consider cordoning %(node)s.") % {
            "node": target.node,
            "index": target.index,
            "code": code,
            "meaning": meaning,
        }
        key = (target.gpu_id, GpuAlertKind.XID)
        action = "touch" if key in self.open else "raise"
        self.open[key] = [float(code), now, message]
        return [AlertChange(action, target.gpu_id, key[1], float(code), 0.0, message)]


def alerts_apply(*, changes: list[AlertChange], now: float) -> None:
    """Write what the watch decided. A GPU that left the inventory meanwhile is skipped."""
    at = _fmt_time(now)
    for change in changes:
        filters = {"gpu_id": change.gpu_id, "kind": change.kind, "cleared_at__isnull": True}
        if change.action == "raise":
            if not Gpu.objects.filter(pk=change.gpu_id).exists():
                continue
            try:
                with transaction.atomic():
                    alert, created = GpuAlert.objects.get_or_create(
                        **filters,
                        defaults={
                            "value": change.value,
                            "threshold": change.threshold,
                            "message": change.message,
                            "raised_at": at,
                            "last_seen_at": at,
                        },
                    )
                    if not created:
                        GpuAlert.objects.filter(pk=alert.pk).update(
                            value=change.value, message=change.message, last_seen_at=at
                        )
            except IntegrityError:
                continue  # raised by another writer in between: it is open, which is all that matters
            if created:
                log.warning("telemetry alert: %s", change.message)
        elif change.action == "touch":
            update = {"last_seen_at": at, "value": change.value}
            if change.message:
                update["message"] = change.message
            GpuAlert.objects.filter(**filters).update(**update)
        elif change.action == "clear":
            GpuAlert.objects.filter(**filters).update(cleared_at=at)
            log.info("telemetry alert cleared: %s on GPU id %s", change.kind, change.gpu_id)


def alert_acknowledge(*, alert: GpuAlert, by) -> GpuAlert:
    """An admin has looked at it (and perhaps cordoned the node).

    A temperature alert stays open until the GPU cools down; an Xid alert closes, since the
    driver keeps reporting the last code until it sees another.
    """
    now = dt.datetime.now(tz=dt.UTC)
    update = {"acknowledged_by": by, "acknowledged_at": now}
    if alert.kind == GpuAlertKind.XID:
        update["cleared_at"] = now
    GpuAlert.objects.filter(pk=alert.pk, cleared_at__isnull=True).update(**update)
    alert.refresh_from_db()
    return alert
