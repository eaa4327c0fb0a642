"""Every write about training jobs: submit, cancel, the scheduling pass, and the state machine's moves."""

from jobs.services.scheduling import PassReport, Preview, preview, scheduling_pass, snapshot
from jobs.services.submit import job_cancel, job_preview, job_submit
from jobs.services.transitions import (
    close_allocations,
    job_finish,
    job_mark_running,
    job_request_stop,
    job_stop_done,
    transition,
)
from jobs.services.validation import JobRequest, validate_request

__all__ = [
    "JobRequest",
    "PassReport",
    "Preview",
    "close_allocations",
    "job_cancel",
    "job_finish",
    "job_mark_running",
    "job_preview",
    "job_request_stop",
    "job_stop_done",
    "job_submit",
    "preview",
    "scheduling_pass",
    "snapshot",
    "transition",
    "validate_request",
]
