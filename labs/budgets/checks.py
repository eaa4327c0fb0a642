"""Start check of the budgets' settings (portal/settings/usage.py): the lab's default alert thresholds, read by the
one rule every budget's thresholds keep (validation.py), which the settings do not import. Registered by
LabsConfig.ready()."""

from __future__ import annotations

from django.conf import settings
from django.core import checks

from labs.budgets.validation import parse_thresholds


@checks.register("settings")
def check_alert_thresholds(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    try:
        parse_thresholds(settings.BUDGET_ALERT_THRESHOLDS)
    except ValueError as why:
        return [checks.Error(f"BUDGET_ALERT_THRESHOLDS: {why}", id="labs.E004")]
    return []
