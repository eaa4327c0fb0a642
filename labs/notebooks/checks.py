"""Start check of the notebooks' settings (portal/settings/notebooks.py). Registered by LabsConfig.ready()."""

from __future__ import annotations

from django.conf import settings
from django.core import checks


@checks.register("settings")
def check_hub_token(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    # With DEBUG the settings give a development token; outside DEBUG nothing stands in for it.
    if not settings.NOTEBOOKS_HUB_TOKEN:
        return [
            checks.Error("NOTEBOOKS_HUB_TOKEN (the portal's JupyterHub service token) must be set.", id="labs.E001")
        ]
    return []
