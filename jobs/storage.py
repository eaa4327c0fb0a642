"""What jobs and datasets hold on disk, for the usage pages (labs.usage.storage): measured every
JOBS_STORAGE_MEASURE_S by a beat task (never while a page renders), where the portal can read the files (the local
backend's job dirs; datasets with a local directory). On the cluster the claims are the storage system's to count.

Per person: the outputs and checkpoints of their jobs (kept in the cache, one figure per person). Per course: each of
its datasets and shares (`Dataset.size_bytes`).
"""

from __future__ import annotations

import datetime as dt

from django.core.cache import cache
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from jobs.backends import get_job_backend
from jobs.backends.disk import TooDeep, disk_usage
from jobs.models import Dataset, Job

PERSON_KEY = "jobs:storage:person:{}"
KEEP_S = 7 * 24 * 3600


def storage_measure(*, now: dt.datetime | None = None) -> dict[str, int]:
    """Measure every dataset with a directory, and each person's job files. Returns how many of each."""
    now = now or timezone.now()
    counts = {"datasets": 0, "people": 0}
    for dataset in Dataset.objects.exclude(local_path=""):
        try:
            size = disk_usage([dataset.local_path])
        except TooDeep:
            size = None
        Dataset.objects.filter(pk=dataset.pk).update(size_bytes=size, measured_at=now)
        counts["datasets"] += 1
    backend = get_job_backend()
    per_person: dict[int, int] = {}
    for job_id, attempt, owner_id in Job.objects.values_list("pk", "attempt", "owner_id").iterator(chunk_size=2000):
        roots = list(backend.output_roots(job_id, attempt).values())
        if not roots:
            continue
        try:
            per_person[owner_id] = per_person.get(owner_id, 0) + disk_usage(roots)
        except TooDeep:
            continue
    for owner_id, size in per_person.items():
        cache.set(PERSON_KEY.format(owner_id), size, KEEP_S)
    counts["people"] = len(per_person)
    return counts


def storage_of(*, person=None, course=None) -> list[tuple[str, int | None]]:
    """The usage pages' rows (registered with labs.usage.storage in jobs/apps.py)."""
    rows: list[tuple[str, int | None]] = []
    if person is not None:
        rows.append((_("Job outputs and checkpoints"), cache.get(PERSON_KEY.format(person.pk))))
    if course is not None:
        for dataset in Dataset.objects.filter(Q(course=course)).order_by("name"):
            label = _("Course share %(name)s") if dataset.kind == "share" else _("Dataset %(name)s")
            rows.append((label % {"name": dataset.name}, dataset.size_bytes))
    return rows
