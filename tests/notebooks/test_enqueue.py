"""How a service asks for a notebook pass: by the task's name, after the commit, and never in-process."""

from __future__ import annotations

from decimal import Decimal

import pytest
from celery import current_app

from labs.models import NotebookProfile, NotebookSession, NotebookStatus
from labs.notebooks import enqueue
from labs.notebooks.services import notebook_request
from portal.celery import app as celery_app
from tests.factories import CourseFactory, EnrollmentFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def ada():
    course = CourseFactory(code="DL-101")
    profile = NotebookProfile.objects.create(
        slug="quarter", name="Quarter GPU", image="quay.io/jupyter/base-notebook:latest", gpu_share=Decimal("0.25")
    )
    profile.courses.add(course)
    user = UserFactory(username="ada")
    EnrollmentFactory(user=user, course=course)
    return user


@pytest.fixture
def sent(monkeypatch):
    """What goes to the broker: (task name, args) per message."""
    messages = []
    monkeypatch.setattr(current_app, "send_task", lambda name, args=None, **kw: messages.append((name, args)))
    return messages


def test_with_a_worker_start_sends_the_pass_by_its_name_once_committed(
    ada, sent, settings, django_capture_on_commit_callbacks
):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        session = notebook_request(user=ada, profile="quarter")
        assert sent == []  # nothing before the commit: a worker must find the queued row
    for callback in callbacks:
        callback()
    assert sent == [("labs.tasks.notebooks_pass", [False])]
    assert NotebookSession.objects.get(pk=session.pk).status == NotebookStatus.QUEUED


def test_in_process_setups_send_nothing_the_periodic_pass_takes_it(ada, sent, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    session = notebook_request(user=ada, profile="quarter")
    assert sent == []
    assert NotebookSession.objects.get(pk=session.pk).status == NotebookStatus.QUEUED


def test_the_names_enqueue_sends_are_the_tasks_workers_and_beat_run(settings):
    celery_app.loader.import_default_modules()  # what a worker does at start: autodiscovery
    from labs.notebooks import tasks

    assert celery_app.tasks[enqueue.NOTEBOOKS_PASS].run is tasks.notebooks_pass.run
    assert celery_app.tasks[enqueue.NOTEBOOKS_TICK].run is tasks.notebooks_tick.run
    assert settings.CELERY_BEAT_SCHEDULE["notebooks-tick"]["task"] == enqueue.NOTEBOOKS_TICK
