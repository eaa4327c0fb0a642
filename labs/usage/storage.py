"""Storage per person and per course on the usage pages. What takes storage is defined a floor up (jobs: job outputs,
checkpoints, datasets and course shares), so it registers its sources here at start (jobs/apps.py), as labs never
imports jobs.

A source is `fn(person=None, course=None) -> list of (label, bytes or None)`: None when not measured yet.
"""

from __future__ import annotations

from collections.abc import Callable

StorageSource = Callable[..., list[tuple[str, int | None]]]
_SOURCES: list[StorageSource] = []


def storage_register(source: StorageSource) -> None:
    if source not in _SOURCES:
        _SOURCES.append(source)


def storage_rows(*, person=None, course=None) -> list[tuple[str, int | None]]:
    return [row for source in _SOURCES for row in source(person=person, course=course)]
