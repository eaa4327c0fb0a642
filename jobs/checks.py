"""Where students' code runs: a start check, and `manage.py check --deploy`.

Outside DEBUG the start check (jobs.E003) refuses JOBS_BACKEND=local and HUB_SPAWNER=local unless SINGLE_MACHINE_LAB
is declared (every process refuses to start on it: portal/checks.py); the deploy checks also catch a development
configuration about to be deployed (jobs.E001), and a one-machine lab whose sandbox (bubblewrap) is missing.
"""

from __future__ import annotations

from django.conf import settings
from django.core import checks

from jobs.backends import sandbox
from jobs.backends.resources import parse_storage_limits


def _local() -> list[str]:
    return [name for name in ("JOBS_BACKEND", "HUB_SPAWNER") if getattr(settings, name) == "local"]


@checks.register("settings")
def check_local_execution_outside_debug(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    if settings.DEBUG or settings.SINGLE_MACHINE_LAB:
        return []
    return [
        checks.Error(
            f"{name}=local runs students' code on this machine: outside DEBUG use kubernetes, or declare a lab "
            "that is one machine with SINGLE_MACHINE_LAB=true (local jobs and notebooks, always sandboxed).",
            id="jobs.E003",
        )
        for name in _local()
    ]


@checks.register(checks.Tags.security, deploy=True)
def check_where_user_code_runs(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    local = _local()
    if not local:
        return []
    if not settings.SINGLE_MACHINE_LAB:
        if not settings.DEBUG:
            return []  # the start check (jobs.E003) already refuses it, with its own sentence
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


@checks.register(checks.Tags.security, deploy=True)
def check_jobs_really_run(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    if settings.JOBS_BACKEND != "simulated":
        return []
    return [
        checks.Error(
            "JOBS_BACKEND = simulated: jobs would never run (it is bench_portal's stand-in).",
            hint="Use kubernetes, or local with SINGLE_MACHINE_LAB=true.",
            id="jobs.E006",
        )
    ]


@checks.register("settings")
def check_local_uids_and_storage_limits(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """The per-person uid range fits uid_t (jobs.E004); JOBS_STORAGE_LIMITS reads (jobs.E005)."""
    found = []
    if settings.JOBS_LOCAL_UID_BASE + settings.JOBS_LOCAL_UID_COUNT > 2**32 - 2:
        found.append(
            checks.Error(
                "JOBS_LOCAL_UID_BASE + JOBS_LOCAL_UID_COUNT must stay below 4294967294 (uid_t).", id="jobs.E004"
            )
        )
    try:
        parse_storage_limits(settings.JOBS_STORAGE_LIMITS)
    except ValueError as why:
        found.append(checks.Error(f"JOBS_STORAGE_LIMITS: {why}", id="jobs.E005"))
    return found
