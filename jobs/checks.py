"""`manage.py check --deploy`: where students' code runs.

Outside DEBUG the settings already refuse JOBS_BACKEND=local and HUB_SPAWNER=local unless SINGLE_MACHINE_LAB is
declared; these checks also catch a development configuration about to be deployed, and a one-machine lab
whose sandbox (bubblewrap) is missing.
"""

from __future__ import annotations

from django.conf import settings
from django.core import checks

from jobs.backends import sandbox


@checks.register(checks.Tags.security, deploy=True)
def check_where_user_code_runs(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    local = [name for name in ("JOBS_BACKEND", "HUB_SPAWNER") if getattr(settings, name) == "local"]
    if not local:
        return []
    if not settings.SINGLE_MACHINE_LAB:
        return [
            checks.Error(
                f"{' and '.join(local)} = local: students' code would run on the portal's machine.",
                hint="Use kubernetes, or declare a lab that is one machine with SINGLE_MACHINE_LAB=true "
                "(local jobs and notebooks then run in a bubblewrap sandbox).",
                id="jobs.E001",
            )
        ]
    why = sandbox.missing()
    if why is not None:
        return [checks.Error(f"SINGLE_MACHINE_LAB: {why}", id="jobs.E002")]
    return []
