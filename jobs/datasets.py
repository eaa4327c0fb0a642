"""Datasets and course shares: who may mount which (the one rule, for jobs, notebooks and the API), and how a teacher
or an admin defines one.

- A lab-wide dataset (no course) is for everyone; a course's dataset or share is for the people the course gives
  access today (enrolled or teaching, in term: accounts.selectors.courses_active_for); admins may mount any.
- Everything is mounted read-only, except a course share in the notebooks of the course's teachers (and admins),
  who write what its students read.
- Admins define datasets on any claim or directory (the admin site, or here); a teacher defines their course's only,
  and never chooses where it lives: locally DATASETS_LOCAL_ROOT/<course>/<name>, on the cluster the claim
  `dataset-<name>` (which the lab's storage provisions), so nobody can point a dataset at someone else's files.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.utils.translation import gettext as _

from accounts.errors import Conflict, InvalidInput, NotPermitted
from accounts.models import Course, User
from accounts.selectors import course_ids_active_for
from jobs.models import Dataset, DatasetKind, dataset_name_validator

SHARE_MOUNT_ROOT = "/course"


def datasets_usable_by(user: User) -> QuerySet[Dataset]:
    """The enabled datasets this person may mount in their jobs and notebooks."""
    datasets = Dataset.objects.filter(enabled=True).select_related("course")
    if user.is_lab_admin:
        return datasets
    return datasets.filter(Q(course__isnull=True) | Q(course_id__in=course_ids_active_for(user)))


def dataset_writable_by(user: User, dataset: Dataset) -> bool:
    """A course share is written by its course's teachers (and admins); everything else is read-only to all."""
    if dataset.kind != DatasetKind.SHARE:
        return False
    return user.is_lab_admin or dataset.course.teachers.filter(pk=user.pk).exists()


def mount_path(dataset: Dataset) -> str:
    """Where a notebook finds it: /data/<name>, a course share /course/<code>/<name> (jobs: $DATASET_<NAME>)."""
    if dataset.kind == DatasetKind.SHARE:
        return f"{SHARE_MOUNT_ROOT}/{re.sub(r'[^A-Za-z0-9_.-]', '_', dataset.course.code)}/{dataset.name}"
    return f"/data/{dataset.name}"


def notebook_volumes_for(user: User) -> list[dict]:
    """What a person's notebook mounts (registered with labs.notebooks.volumes in jobs/apps.py): signed into its
    options, bound by the hub's spawner (a directory locally, the claim on the cluster)."""
    teaching = set(user.courses_taught.values_list("pk", flat=True))
    volumes = []
    for dataset in datasets_usable_by(user).order_by("name")[: settings.DATASETS_PER_NOTEBOOK_MAX]:
        writable = dataset.kind == DatasetKind.SHARE and (user.is_lab_admin or dataset.course_id in teaching)
        volumes.append(
            {
                "name": dataset.name,
                "claim": dataset.claim,
                "local_path": dataset.local_path,
                "mount_path": mount_path(dataset),
                "writable": writable,
            }
        )
    return volumes


def _local_dir(course: Course, name: str, kind: str) -> str:
    root = Path(settings.DATASETS_LOCAL_ROOT)
    path = root / re.sub(r"[^A-Za-z0-9_.-]", "_", course.code) / name
    path.mkdir(parents=True, exist_ok=True)
    # A share is written by its teachers' uids and read by its students' (each their own, jobs.backends.local_files);
    # only the sandboxes it is bound into see it, read-only but for its teachers.
    os.chmod(path, 0o1777 if kind == DatasetKind.SHARE else 0o755)
    return str(path)


def dataset_create(
    *, user: User, name: str, description: str = "", course: str | None = None, kind: str = DatasetKind.DATASET,
    claim: str = "", local_path: str = "",
) -> Dataset:  # fmt: skip
    """Define a dataset: admins lab-wide or for a course (any claim or directory), teachers for a course they teach
    (its place chosen here). InvalidInput names the bad fields; NotPermitted for anyone else."""
    errors: dict[str, str] = {}
    if not isinstance(name, str) or not name:
        errors["name"] = _("Lower-case letters, digits and dashes (at most 63).")
    else:
        try:
            dataset_name_validator(name)
        except Exception:
            errors["name"] = _("Lower-case letters, digits and dashes (at most 63).")
    if kind not in DatasetKind.values:
        errors["kind"] = _("One of %(kinds)s.") % {"kinds": ", ".join(DatasetKind.values)}
    if not isinstance(description, str) or len(description) > 200:
        errors["description"] = _("At most 200 characters.")
    course_row = None
    if course:
        course_row = Course.objects.filter(code=course).first() if isinstance(course, str) else None
        if course_row is None:
            errors["course"] = _("No such course.")
    elif kind == DatasetKind.SHARE:
        errors["course"] = _("A course share belongs to a course.")
    if errors:
        raise InvalidInput(_("Please correct %(fields)s.") % {"fields": ", ".join(sorted(errors))}, fields=errors)
    if not user.is_lab_admin:
        if not (user.is_teacher and course_row is not None and course_row.teachers.filter(pk=user.pk).exists()):
            raise NotPermitted(_("Teachers define datasets for the courses they teach; lab-wide ones are for admins."))
        claim, local_path = "", ""
    elif local_path and (not os.path.isabs(local_path) or os.path.normpath(local_path) != local_path):
        raise InvalidInput(_("Please correct local_path."), fields={"local_path": _("An absolute, normalised path.")})
    try:
        with transaction.atomic():
            dataset = Dataset.objects.create(
                name=name,
                description=description,
                course=course_row,
                kind=kind,
                created_by=user,
                claim=claim or f"dataset-{name}",
                local_path=local_path,
            )
            if not local_path and course_row is not None:
                dataset.local_path = _local_dir(course_row, name, kind)
                dataset.save(update_fields=["local_path"])
    except IntegrityError as exc:
        raise Conflict(_("A dataset with this name exists already.")) from exc
    return dataset
