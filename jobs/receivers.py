"""Receivers for what the lab says happened (labs.signals), wired in JobsConfig.ready()."""

from __future__ import annotations

import logging

from jobs.services.dispatch import jobs_preempt_for_allocations

log = logging.getLogger(__name__)


def on_allocations_ended(sender, *, allocation_ids: list[int], reason: str = "", **kwargs) -> None:
    """A reservation's window began on a node running someone else's job: stop that attempt and requeue it."""
    stopped = jobs_preempt_for_allocations(allocation_ids=list(allocation_ids), reason=reason)
    if stopped:
        log.info("jobs %s preempted: %s", stopped, reason)
