"""Telemetry's writes: what a node agent pushes, checked once before the collector's next tick may use it."""

from __future__ import annotations

import logging
import time
from typing import Any

from accounts.errors import InvalidInput, NotPermitted
from labs.models import NodeAgentToken
from labs.telemetry import store
from labs.telemetry.samples import GpuSample, sample_problem

log = logging.getLogger("labs.telemetry")


def agent_push(
    *, token: NodeAgentToken, node: str, samples: list[dict[str, Any]], client: str = "?", now: float | None = None
) -> int:
    """Keep a node's pushed samples for the collector (TELEMETRY_SOURCE=agent); how many were kept.

    `samples` are the push's readings as the API parsed them (index and values; a reading without a time is taken
    as now). The whole push is refused, and nothing kept, when the key is another node's (403), when an index is not
    in the node's inventory, or when any reading fails the sample's one check (samples.sample_problem) (400).
    `client` only names the sender in the log.
    """
    mine = token.node
    if node != mine.name:
        log.warning("telemetry: the key of %s was used to push for %s from %s; refused", mine.name, node, client)
        raise NotPermitted(f"This key belongs to node {mine.name}, not {node}.")
    known = set(mine.gpus.values_list("index", flat=True))
    unknown = sorted(sample["index"] for sample in samples if sample["index"] not in known)
    if unknown:
        log.warning("telemetry: refused a push for %s: GPU indexes %s are not in its inventory", mine.name, unknown)
        why = f"GPU index {', '.join(map(str, unknown))} is not in the inventory of {mine.name}."
        raise InvalidInput(why, fields={"samples": why})
    now = time.time() if now is None else now
    readings = [
        GpuSample(node=mine.name, **{"sampled_at": now, **{key: value for key, value in sample.items() if value != ""}})
        for sample in samples
    ]
    for position, reading in enumerate(readings):
        problem = sample_problem(reading, now=now)
        if problem is not None:
            log.warning("telemetry: refused a push for %s: %s", mine.name, problem)
            why = f"Sample {position}, {problem.field}: {problem.advice}"
            raise InvalidInput(why, fields={"samples": why})
    store.push_to_inbox(mine.name, readings)
    return len(readings)
