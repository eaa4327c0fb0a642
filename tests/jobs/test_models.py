"""The job rows: database constraints, the image allow-list's patterns, ledger refs."""

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from jobs.models import JobState
from labs.images import ImageRule, image_allowed_by
from labs.ledger import Ref
from tests.jobs.factories import JobFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "changes",
    [
        {"gpus_per_node": 0},
        {"nodes": 0},
        {"max_runtime_s": 0},
        {"attempt": 0},
        {"state": "exploded"},
        {"priority": "urgent"},
        {"state": JobState.SUCCEEDED},  # final without finished_at
        {"finished_at": timezone.now()},  # queued with finished_at
        {"state": JobState.RUNNING},  # placed without started_at
    ],
)
def test_the_database_refuses_impossible_jobs(changes):
    job = JobFactory()
    for name, value in changes.items():
        setattr(job, name, value)
    with pytest.raises(IntegrityError), transaction.atomic():
        job.save()


def test_a_finished_job_has_its_finish_time():
    job = JobFactory(state=JobState.FAILED, finished_at=timezone.now())
    assert job.is_finished and not job.is_active


@pytest.mark.parametrize(
    ("pattern", "image", "allowed"),
    [
        ("registry.lab.example/*", "registry.lab.example/team/train:1", True),
        ("registry.lab.example/*", "registry.lab.example.evil.com/x:1", False),
        ("pytorch/pytorch:2.*", "pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime", True),
        ("pytorch/pytorch:2.*", "pytorch/pytorch:1.13", False),
        ("python:3.12-slim", "python:3.12-slim", True),
        ("python:3.12-slim", "python:3.12-slim-evil", False),
        ("", "anything", False),
    ],
)
def test_image_patterns(pattern, image, allowed):
    assert image_allowed_by(pattern, image) is allowed


def test_a_disabled_rule_allows_nothing():
    rule = ImageRule.objects.create(pattern="registry.lab.example/*", enabled=False)
    assert not rule.matches("registry.lab.example/a:1")


def test_ledger_refs_round_trip():
    job = JobFactory(attempt=3)
    assert job.ref == f"job:{job.pk}#3"
    ref = Ref.parse(job.ref)
    assert ref == Ref.job(job.pk, 3) and (ref.holder_id, ref.attempt) == (job.pk, 3)
    assert Ref.parse("notebook:4").attempt is None
