"""Where training jobs run: Kubernetes batch/v1 Jobs in the lab, processes on this machine locally, or nowhere
(simulated: bench_portal). settings.JOBS_BACKEND picks one; all speak the contract in base.py.
"""

from __future__ import annotations

from django.conf import settings

from jobs.backends.base import DatasetVolume, JobBackend, JobRef, JobSpec, JobStatus, PodStatus, job_name


def get_job_backend() -> JobBackend:
    if settings.JOBS_BACKEND == "kubernetes":
        from jobs.backends.kubernetes import KubernetesJobs

        return KubernetesJobs()
    if settings.JOBS_BACKEND == "simulated":
        from jobs.backends.simulated import SimulatedJobs

        return SimulatedJobs()
    from jobs.backends.local import LocalJobs

    return LocalJobs()


__all__ = ["DatasetVolume", "JobBackend", "JobRef", "JobSpec", "JobStatus", "PodStatus", "get_job_backend", "job_name"]
