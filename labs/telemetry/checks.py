"""Start checks of the telemetry's settings (portal/settings/telemetry.py). Registered by LabsConfig.ready()."""

from __future__ import annotations

from django.conf import settings
from django.core import checks


@checks.register("settings")
def check_telemetry(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    errors = []
    if settings.TELEMETRY_COLLECTOR == "process" and not settings.REDIS_URL:
        errors.append(
            checks.Error(
                "TELEMETRY_COLLECTOR=process needs REDIS_URL: the web servers hear it through Redis.", id="labs.E002"
            )
        )
    if settings.TELEMETRY_SOURCE == "prometheus" and not settings.TELEMETRY_PROMETHEUS_URL:
        errors.append(checks.Error("TELEMETRY_SOURCE=prometheus needs TELEMETRY_PROMETHEUS_URL.", id="labs.E003"))
    return errors
