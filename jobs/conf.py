"""The queue policy's configuration from settings, for the services and the Celery tasks that run passes."""

from __future__ import annotations

from django.conf import settings

from jobs.policy import PolicyConfig


def policy_config() -> PolicyConfig:
    return PolicyConfig(
        half_life_s=float(settings.JOBS_FAIRSHARE_HALF_LIFE_S),
        preempt_grace_s=float(settings.JOBS_PREEMPT_GRACE_S),
        preempt_exempt_s=float(settings.JOBS_PREEMPT_EXEMPT_S),
    )
