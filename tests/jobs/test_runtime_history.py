"""Run-time predictions from a person's (and their course's) finished jobs, read from real rows; and the pass's
estimated start, shown as a range, planned with them."""

import datetime as dt

import pytest

from jobs.models import JobState
from jobs.selectors import runtime_predictions
from jobs.services import scheduling_pass
from tests.factories import CourseFactory, UserFactory
from tests.jobs.factories import IMAGE, ImageRuleFactory, JobFactory, lab

pytestmark = pytest.mark.django_db

COMMAND = ["python", "train.py"]


def finished(owner, run_s, *, now, course=None, ago_h=1.0, state=JobState.SUCCEEDED, command=COMMAND, attempt=1):
    end = now - dt.timedelta(hours=ago_h)
    start = end - dt.timedelta(seconds=run_s)
    return JobFactory(
        owner=owner, course=course, image=IMAGE, command=command, state=state, attempt=attempt,
        submitted_at=start, queued_since=start, started_at=start, running_at=start, finished_at=end,
    )  # fmt: skip


def queued(owner, *, now, course=None, limit=4 * 3600, command=COMMAND):
    return JobFactory(
        owner=owner, course=course, image=IMAGE, command=command, max_runtime_s=limit, submitted_at=now,
        queued_since=now,
    )  # fmt: skip


def test_without_history_the_prediction_is_the_limit(frozen_now):
    now = frozen_now("2026-03-02 10:00")
    job = queued(UserFactory(), now=now)
    prediction = runtime_predictions([job], now=now)[job.pk]
    assert (prediction.expected_s, prediction.confidence, prediction.samples) == (4 * 3600, "none", 0)


def test_a_consistent_history_predicts_its_median(frozen_now):
    now = frozen_now("2026-03-02 10:00")
    ann = UserFactory()
    for n, run_s in enumerate([600, 610, 590, 605, 595]):
        finished(ann, run_s, now=now, ago_h=n + 1)
    job = queued(ann, now=now)
    prediction = runtime_predictions([job], now=now)[job.pk]
    assert prediction.expected_s == 600 and prediction.confidence == "high" and prediction.samples == 5


def test_a_noisy_history_leans_long_with_low_confidence(frozen_now):
    now = frozen_now("2026-03-02 10:00")
    ann = UserFactory()
    for n, run_s in enumerate([60, 3000, 90, 2400, 70, 2800]):
        finished(ann, run_s, now=now, ago_h=n + 1)
    job = queued(ann, now=now)
    prediction = runtime_predictions([job], now=now)[job.pk]
    assert prediction.confidence == "low" and prediction.expected_s > 2000


def test_a_prediction_is_never_above_the_limit(frozen_now):
    now = frozen_now("2026-03-02 10:00")
    ann = UserFactory()
    for n in range(3):
        finished(ann, 5 * 3600, now=now, ago_h=n + 6)
    job = queued(ann, now=now, limit=3600)
    assert runtime_predictions([job], now=now)[job.pk].expected_s == 3600


def test_only_the_same_work_finished_well_counts_and_the_course_fills_in(frozen_now):
    now = frozen_now("2026-03-02 10:00")
    ann, bob, cal = UserFactory(), UserFactory(), UserFactory()
    course = CourseFactory()
    finished(ann, 100, now=now, command=["python", "other.py"])  # other work
    finished(ann, 200, now=now, state=JobState.FAILED)  # failed: says nothing about a run time
    finished(ann, 300, now=now, attempt=2)  # resumed: its last attempt is only part of the run
    finished(bob, 900, now=now)  # another person's, no course
    finished(cal, 1200, now=now, course=course)  # a classmate's, booked to the course
    mine = queued(ann, now=now)
    in_course = queued(ann, now=now, course=course)
    predictions = runtime_predictions([mine, in_course], now=now)
    assert predictions[mine.pk].confidence == "none"
    assert predictions[in_course.pk].expected_s == 1200 and predictions[in_course.pk].samples == 1


def test_the_pass_plans_the_estimated_start_with_the_predictions(frozen_now):
    now = frozen_now("2026-03-02 10:00")
    ImageRuleFactory()
    lab(1)
    ann = UserFactory()
    for n in range(5):
        finished(ann, 1200, now=now, ago_h=n + 1)
    first, second = queued(ann, now=now, limit=3 * 3600), queued(ann, now=now, limit=3 * 3600)
    report = scheduling_pass(now=now)
    assert report.started == [first.pk]
    second.refresh_from_db()
    # The first job is expected to run 20 min, not its 3 h limit: the second starts in 15-25 min.
    assert second.estimated_start == now + dt.timedelta(minutes=20)
    assert second.reason == "waiting for 1 GPU; first in line; estimated start 10:15-10:25"


def test_only_the_latest_runs_of_each_work_are_read_and_the_predictions_are_those_of_all_of_them(
    frozen_now, django_assert_num_queries
):
    # A class that ran the same script hundreds of times: the read keeps the latest WINDOW runs of each person's and
    # each course's work, which is all predict_runtime looks at, so the predictions equal the whole history's.
    import random

    from jobs.models import Job
    from jobs.policy.runtime import WINDOW, predict_runtime

    now = frozen_now("2026-03-02 10:00")
    rng = random.Random(7)
    course = CourseFactory(code="DL-101")
    people = [UserFactory(username=f"s{n}") for n in range(4)]
    other = ["python", "eval.py"]
    for n in range(150):
        who = people[n % 4]
        run_s = rng.choice([300, 310, 290]) if n < 120 else rng.choice([1200, 60, 2400])  # the latest are noisy
        finished(who, run_s, now=now, ago_h=150 - n + rng.random() / 10, course=course if n % 3 else None,
                 command=other if n % 5 == 0 else COMMAND)  # fmt: skip
    # A row whose end is before its start (a clock that jumped) is no run time, and is not one of the latest.
    finished(people[0], 100, now=now, ago_h=0.5).__class__.objects.filter(
        finished_at=now - dt.timedelta(hours=0.5)
    ).update(running_at=now)
    waiting = [queued(p, now=now, course=course if i % 2 else None, command=c) for i, p in enumerate(people)
               for c in (COMMAND, other)] + [queued(UserFactory(username="new"), now=now, course=course)]  # fmt: skip
    with django_assert_num_queries(1):
        predictions = runtime_predictions(waiting, now=now)

    def whole_history(job):
        done = Job.objects.filter(state=JobState.SUCCEEDED, attempt=1, image=job.image, command=job.command)
        own = [j for j in done.order_by("finished_at") if j.owner_id == job.owner_id]
        course_runs = [j for j in done.order_by("finished_at") if job.course_id and j.course_id == job.course_id]
        runs = [(j.finished_at - (j.running_at or j.started_at)).total_seconds() for j in (own or course_runs)]
        return predict_runtime([r for r in runs if r >= 0], float(job.max_runtime_s))

    assert {job.pk: whole_history(job) for job in waiting} == predictions
    assert max(p.samples for p in predictions.values()) == WINDOW
