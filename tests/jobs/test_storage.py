"""Storage per person and per course on the usage pages (jobs.storage, labs.usage.storage): measured by the beat
task, shown to the person (their job files) and to the course's teachers (its datasets and shares)."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.test import Client
from django.utils import timezone

from jobs.models import Dataset, DatasetKind, JobState
from jobs.storage import PERSON_KEY, storage_measure
from tests.factories import PASSWORD, CourseFactory, EnrollmentFactory, UserFactory
from tests.jobs.factories import JobFactory, local_backend_fixture  # noqa: F401

pytestmark = pytest.mark.django_db


def signed_in(user) -> Client:
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


def test_storage_per_person_and_per_course(local_backend, tmp_path):
    course = CourseFactory(code="DL-101")
    teacher = UserFactory(username="tess", role="teacher")
    course.teachers.add(teacher)
    sam, olga = UserFactory(username="sam"), UserFactory(username="olga")
    EnrollmentFactory(user=sam, course=course)
    cache.delete_many([PERSON_KEY.format(sam.pk), PERSON_KEY.format(olga.pk)])
    job = JobFactory(owner=sam, state=JobState.RUNNING, started_at=timezone.now())
    checkpoint = local_backend.checkpoint_dir(job.pk)
    checkpoint.mkdir(parents=True)
    (checkpoint / "model.pt").write_bytes(b"x" * 300_000)
    share_dir = tmp_path / "share"
    share_dir.mkdir()
    (share_dir / "week1.ipynb").write_bytes(b"y" * 50_000)
    Dataset.objects.create(name="dl101-share", course=course, kind=DatasetKind.SHARE, local_path=str(share_dir))
    Dataset.objects.create(name="unmeasured", course=course)
    assert signed_in(sam).get("/usage/").content.decode().count("not measured yet") == 1
    assert storage_measure() == {"datasets": 1, "people": 1}
    mine = signed_in(sam).get("/usage/").content.decode()
    assert 'data-testid="storage"' in mine and "Job outputs and checkpoints" in mine and "KB" in mine
    assert "not measured yet" in signed_in(olga).get("/usage/").content.decode()  # no job files of hers
    course_page = signed_in(teacher).get("/usage/courses/", {"course": "DL-101"}).content.decode()
    assert "Course share dl101-share" in course_page and "Dataset unmeasured" in course_page
    assert Dataset.objects.get(name="dl101-share").size_bytes >= 50_000
