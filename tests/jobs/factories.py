"""Factories for the job queue's rows, and a small lab to run jobs on."""

from __future__ import annotations

import time

import factory
import pytest
from django.utils import timezone

from jobs.backends.base import JobRef
from jobs.backends.local import LocalJobs
from jobs.models import Dataset, Job, JobState
from labs.images import ImageRule
from tests.factories import NodeFactory, UserFactory

IMAGE = "registry.lab.example/train:1"
# The job page's form (/jobs/new/) filled in for one GPU for 10 minutes.
JOB_FORM = {
    "name": "mnist",
    "image": IMAGE,
    "command": "python\ntrain.py\n",
    "gpus": "1",
    "nodes": "1",
    "max_runtime_s": "600",
    "priority": "normal",
    "reservation": "",
    "env": "",
}


class ImageRuleFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ImageRule
        django_get_or_create = ("pattern",)

    pattern = "registry.lab.example/*"
    description = "The lab's own registry"


class DatasetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Dataset
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"data{n}")
    claim = factory.LazyAttribute(lambda d: f"dataset-{d.name}")


class JobFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Job

    owner = factory.SubFactory(UserFactory)
    name = factory.Sequence(lambda n: f"train {n}")
    image = IMAGE
    command = factory.LazyFunction(lambda: ["python", "-c", "print('hello')"])
    gpus_per_node = 1
    nodes = 1
    max_runtime_s = 3600
    state = JobState.QUEUED
    submitted_at = factory.LazyFunction(timezone.now)
    queued_since = factory.LazyAttribute(lambda job: job.submitted_at)


def lab(count: int = 2, gpus: int = 1, prefix: str = "gpu") -> list:
    """`count` ready nodes gpu01.. with `gpus` GPUs each."""
    return [NodeFactory(name=f"{prefix}{n:02d}", gpus=gpus) for n in range(1, count + 1)]


@pytest.fixture(name="local_backend")
def local_backend_fixture(settings, tmp_path):
    """The local backend in a fresh directory, with a 1 s grace; every attempt left running is stopped after."""
    root = tmp_path / "jobs"
    settings.JOBS_BACKEND = "local"
    settings.JOBS_LOCAL_DIR = root
    settings.JOBS_STOP_GRACE_S = 1
    settings.JOBS_PREEMPT_GRACE_S = 1
    yield LocalJobs(root=root, grace_s=1)
    backend = LocalJobs(root=root, grace_s=0)
    for directory in root.glob("job-*-a*"):
        job_id, attempt = directory.name[4:].split("-a")
        backend.delete(JobRef(int(job_id), int(attempt)), grace_s=0)
    deadline = time.monotonic() + 10
    for directory in root.glob("job-*-a*"):
        while (directory / "launched").exists() and not (directory / "exit.json").exists():
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)


def wait_until(condition, timeout: float = 20.0, step: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(step)
    raise AssertionError("timed out waiting")
