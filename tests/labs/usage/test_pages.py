"""The usage pages per role: what each shows, totals that agree with the API, CSV downloads, no inline scripts."""

from __future__ import annotations

import csv
import io
import re

import pytest
from django.test import Client

from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def now(frozen_now, lab):
    return frozen_now(lab.now)


def signed_in(user) -> Client:
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


def total_on(page: str) -> float:
    return float(re.search(r'data-testid="total">([0-9.]+)<', page).group(1))


def no_inline_script(page: str) -> None:
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", page), "inline <script>"
    assert not re.search(r"\son[a-z]+\s*=", page), "inline event handler"


def test_my_usage_shows_the_week_the_chart_and_each_session(now, lab, known, api_as):
    from labs.ledger import Ref
    from labs.models import Allocation
    from labs.usage.efficiency import efficiency_compute

    for ref in set(Allocation.objects.filter(user=lab.alice).values_list("ref", flat=True)):
        efficiency_compute(ref=Ref.parse(ref), now=lab.now)
    page = signed_in(lab.alice).get("/usage/", {"from": "2026-03-09", "to": "2026-03-11"}).content.decode()
    no_inline_script(page)
    assert 'data-testid="week-used">4.00<' in page  # Monday 00:00 to now: 4 GPU-hours
    assert "<svg" in page and 'class="bar"' in page
    assert total_on(page) == pytest.approx(4.0)
    assert "job 1 of alice" in page and "notebook 2 of alice" in page  # not "job:1#1", "notebook:2"
    assert "p95 GPU utilisation (%)" in page and "p95_util_pct" not in page
    assert "bob" not in page and "carol" not in page


def test_the_course_page_agrees_with_the_api(now, lab, known):
    client = signed_in(lab.teacher)
    page = client.get("/usage/courses/", {"course": "DL-101", "from": "2026-03-09", "to": "2026-03-11"})
    body = page.content.decode()
    no_inline_script(body)
    assert "alice" in body and "bob" in body and "carol" not in body and "Budget use" in body
    api = client.get("/api/v1/usage/", {"course": "DL-101", "from": "2026-03-09", "to": "2026-03-11"}).json()
    assert total_on(body) == pytest.approx(api["total_gpu_hours"], abs=0.01)
    download = client.get("/usage/csv/course-students/", {"course": "DL-101", "from": "2026-03-09", "to": "2026-03-11"})
    rows = list(csv.DictReader(io.StringIO(b"".join(download.streaming_content).decode())))
    assert sum(float(row["GPU-hours"]) for row in rows) == pytest.approx(api["total_gpu_hours"], abs=0.01)
    assert client.get("/usage/courses/", {"course": "CV-201"}).status_code == 404


def test_the_lab_page_is_for_admins(now, lab, known):
    admin = UserFactory(username="boss", role="admin")
    page = signed_in(admin).get("/usage/lab/", {"from": "2026-03-09", "to": "2026-03-11"}).content.decode()
    no_inline_script(page)
    assert total_on(page) == pytest.approx((known["alice"] + known["bob"] + known["carol"]) / 3600, abs=0.01)
    assert "DL-101" in page and "CV-201" in page and "gpu01" in page
    assert signed_in(lab.teacher).get("/usage/lab/").status_code == 403
    assert signed_in(lab.alice).get("/usage/courses/").status_code == 403


def test_bad_dates_show_a_sentence_not_an_error(now, lab):
    page = signed_in(lab.alice).get("/usage/", {"from": "2026-03-10", "to": "2026-01-01"})
    assert page.status_code == 200 and "Must be after from" not in page.content.decode()
    assert "the window must end after it starts" in page.content.decode()


def test_the_course_page_shows_the_course_budget_in_use(now, lab, known):
    from decimal import Decimal

    from labs.models import Budget

    Budget.objects.create(
        name="DL-101 spring term",
        course=lab.course,
        period="term",
        starts_on=lab.course.term_start,
        ends_on=lab.course.term_end,
        gpu_hours=Decimal("100"),
        on_exceed="block",
    )
    Budget.objects.create(
        name="CV-201 term",
        course=lab.other_course,
        period="term",
        starts_on=lab.other_course.term_start,
        ends_on=lab.other_course.term_end,
        gpu_hours=Decimal("5"),
    )
    body = signed_in(lab.teacher).get("/usage/courses/", {"course": "DL-101"}).content.decode()
    assert "DL-101 spring term" in body and "CV-201 term" not in body
    api = signed_in(lab.teacher).get("/api/v1/budgets/").json()
    mine = next(row for row in api if row["name"] == "DL-101 spring term")
    pct = re.search(r'data-testid="budget-pct">([0-9.]+) %', body).group(1)
    assert float(pct) == pytest.approx(float(mine["used_gpu_hours"]), abs=0.1)  # of 100 GPU-hours: the same number


def test_a_teaching_assistant_sees_the_course_usage_and_not_another_course(now, lab, known):
    from tests.factories import EnrollmentFactory

    assistant = UserFactory(username="tara")
    EnrollmentFactory(user=assistant, course=lab.course, role="assistant")
    client = signed_in(assistant)
    body = client.get(
        "/usage/courses/", {"course": "DL-101", "from": "2026-03-09", "to": "2026-03-11"}
    ).content.decode()
    assert "alice" in body and "bob" in body and "carol" not in body
    assert client.get("/usage/courses/", {"course": "CV-201"}).status_code == 404
    assert client.get("/api/v1/usage/", {"course": "CV-201"}).status_code == 404
    assert client.get("/usage/lab/").status_code == 403


def test_the_lab_days_show_the_queue_wait_of_jobs_and_notebooks(now, lab, known):
    """Jobs register their queue waits with labs.usage.waits (labs may not import jobs): the lab's table per day has
    the mean and p95 wait of both kinds, from asking to getting GPUs."""
    import datetime as dt

    from jobs.models import JobState
    from tests.jobs.factories import JobFactory

    tuesday = lab.now - dt.timedelta(days=1)  # Tuesday 12:00 in the lab's zone
    for wait_s in (60, 180):
        JobFactory(
            owner=lab.alice,
            state=JobState.SUCCEEDED,
            submitted_at=tuesday,
            queued_since=tuesday,
            started_at=tuesday + dt.timedelta(seconds=wait_s),
            finished_at=tuesday + dt.timedelta(hours=1),
        )
    JobFactory(owner=lab.bob, submitted_at=tuesday, queued_since=tuesday)  # still queued: no wait yet
    admin = UserFactory(username="boss", role="admin")
    download = signed_in(admin).get("/usage/csv/lab-days/", {"from": "2026-03-09", "to": "2026-03-11"})
    rows = {row["Day"]: row for row in csv.DictReader(io.StringIO(b"".join(download.streaming_content).decode()))}
    waits = {"Job wait, mean (s)", "Job wait, p95 (s)", "Notebook wait, mean (s)", "Notebook wait, p95 (s)"}
    assert waits <= set(rows["2026-03-10"])
    assert float(rows["2026-03-10"]["Job wait, mean (s)"]) == 120.0
    assert float(rows["2026-03-10"]["Job wait, p95 (s)"]) == 180.0
    assert rows["2026-03-09"]["Job wait, mean (s)"] == ""  # no job waited that day
    page = signed_in(admin).get("/usage/lab/", {"from": "2026-03-09", "to": "2026-03-11"}).content.decode()
    assert "job_wait_mean_s" in page or "Job wait" in page or "job wait" in page.lower()


def test_the_course_page_without_dates_shows_the_term_so_far_and_its_csv_agrees(now, lab, known):
    import datetime as dt

    from django.utils import timezone

    from tests.labs.usage.conftest import HOUR, entry

    # Before the term (1 February) but inside the eight-week default: not the course's term.
    before_term = timezone.make_aware(dt.datetime(2026, 1, 26, 9))
    entry(lab.alice, lab.gpus[0], before_term, before_term + 2 * HOUR, course=lab.course)
    # In the term, booked to the course: alice's 5 h from Sunday 22:00 (2 h before Monday 00:00). Never what the
    # students booked to no course (alice's notebook, bob's notebook and his 10 h on 7-8 March).
    term_hours = 5.0
    client = signed_in(lab.teacher)
    body = client.get("/usage/courses/", {"course": "DL-101"}).content.decode()
    assert 'role="alert"' not in body and "eight weeks" not in body
    assert 'name="from" value="2026-02-01"' in body and 'name="to" value="2026-03-11"' in body
    assert total_on(body) == pytest.approx(term_hours, abs=0.01)
    for table in ("course-students", "course-weeks"):
        download = client.get(f"/usage/csv/{table}/", {"course": "DL-101"})
        rows = list(csv.DictReader(io.StringIO(b"".join(download.streaming_content).decode())))
        assert sum(float(row["GPU-hours"]) for row in rows) == pytest.approx(term_hours, abs=0.01), table
    until_monday = client.get("/usage/courses/", {"course": "DL-101", "to": "2026-03-08"}).content.decode()
    assert 'role="alert"' not in until_monday and 'name="from" value="2026-02-01"' in until_monday
    assert total_on(until_monday) == pytest.approx(2, abs=0.01)  # alice's 2 h before Monday (bob's 10 h: his)


def test_the_course_students_table_lists_students_not_assistants(now, lab, known):
    from tests.factories import EnrollmentFactory

    EnrollmentFactory(user=UserFactory(username="tom"), course=lab.course, role="assistant")
    download = signed_in(lab.teacher).get(
        "/usage/csv/course-students/", {"course": "DL-101", "from": "2026-03-09", "to": "2026-03-11"}
    )
    rows = list(csv.DictReader(io.StringIO(b"".join(download.streaming_content).decode())))
    assert {row["Person"] for row in rows} == {"alice", "bob"}
