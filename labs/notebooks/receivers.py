"""Receivers for what the lab says happened (labs.signals), wired in LabsConfig.ready()."""

from __future__ import annotations

import logging

from labs.notebooks.services import notebooks_end_for_allocations

log = logging.getLogger(__name__)


def on_allocations_ended(sender, *, allocation_ids: list[int], reason: str = "", **kwargs) -> None:
    """A reservation's window began on a node with someone else's notebook: stop that notebook."""
    ended = notebooks_end_for_allocations(allocation_ids=list(allocation_ids), reason=reason or "Stopped by the lab.")
    if ended:
        log.info("%s notebooks stopped: %s", ended, reason)
