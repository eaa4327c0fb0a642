"""jobs.enqueue: the task names never change, a send waits for the commit, and a process that never imported
jobs.tasks (a web process) still finds the tasks by name and runs them eagerly as the tests' settings say."""

import os
import subprocess
import sys

import pytest
from django.conf import settings

from jobs import enqueue
from jobs.models import JobState
from jobs.services import job_submit
from tests.factories import UserFactory
from tests.jobs.factories import IMAGE, ImageRuleFactory, lab

pytestmark = pytest.mark.django_db


def test_the_task_names_are_the_ones_messages_and_beat_already_use():
    assert (enqueue.SCHEDULE_PASS, enqueue.DISPATCH, enqueue.STOP, enqueue.FOLLOW) == (
        "jobs.tasks.schedule_pass",
        "jobs.tasks.dispatch",
        "jobs.tasks.stop",
        "jobs.tasks.follow",
    )
    beat = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert {"jobs.tasks.schedule_pass", "jobs.tasks.follow"} <= beat
    for name in (enqueue.SCHEDULE_PASS, enqueue.DISPATCH, enqueue.STOP, enqueue.FOLLOW):
        assert enqueue._task(name).name == name


def test_a_submit_schedules_a_pass_only_once_it_commits(django_capture_on_commit_callbacks):
    ImageRuleFactory()
    lab(1)
    sam = UserFactory(username="sam", role="student")
    fields = dict(name="tiny", image=IMAGE, command=["python", "x.py"], gpus=1, max_runtime_s=600)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        job = job_submit(user=sam, **fields)
    assert len(callbacks) == 1
    job.refresh_from_db()
    assert job.state == JobState.QUEUED  # nothing sent before the commit
    for callback in callbacks:
        callback()  # the commit: the pass runs in-process (eager) and places the job
    job.refresh_from_db()
    assert job.state in (JobState.STARTING, JobState.RUNNING)


def _fresh_process(code: str) -> subprocess.CompletedProcess:
    """Run `code` in a new Python process on the tests' settings, as a web process starts."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=settings.BASE_DIR,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_fresh_process_finds_the_tasks_by_name_without_importing_them():
    code = (
        "import sys, django; django.setup()\n"
        "from jobs import enqueue\n"
        "assert 'jobs.tasks' not in sys.modules\n"
        "task = enqueue._task(enqueue.DISPATCH)\n"
        "from celery import current_app\n"
        "print(task.name, current_app.conf.task_always_eager)\n"
    )
    done = _fresh_process(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["jobs.tasks.dispatch", "True"]


def test_with_a_worker_a_web_process_sends_by_name_and_many_threads_at_once_all_send():
    """Not eager (a worker takes the tasks): no import of jobs.tasks in the web process, so no request can see the
    half-imported module (`NotRegistered` when two requests raced on that import); sixteen threads all send."""
    code = (
        "import sys, threading, django; django.setup()\n"
        "from django.conf import settings\n"
        "settings.CELERY_TASK_ALWAYS_EAGER = False\n"
        "from celery import current_app\n"
        "sent, errors = [], []\n"
        "current_app.send_task = lambda name, args=(): sent.append((name, tuple(args)))\n"
        "from jobs import enqueue\n"
        "def one(n):\n"
        "    try:\n"
        "        enqueue.send(enqueue.DISPATCH, n, 1)\n"
        "    except Exception as error:\n"
        "        errors.append(repr(error))\n"
        "threads = [threading.Thread(target=one, args=(n,)) for n in range(16)]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]\n"
        "print(len(sent), len(errors), 'jobs.tasks' in sys.modules, sorted(set(name for name, _ in sent)))\n"
    )
    done = _fresh_process(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["16", "0", "False", "['jobs.tasks.dispatch']"]
