"""The job pages for every role: list, submit (with the dry run), detail with events and logs, cancel."""

import pytest
from django.utils import timezone

from accounts.models import User
from jobs.models import Job, JobState
from tests.factories import CourseFactory, EnrollmentFactory, UserFactory
from tests.jobs.factories import IMAGE, ImageRuleFactory, JobFactory, lab, local_backend_fixture  # noqa: F401

pytestmark = pytest.mark.django_db

FORM = {
    "name": "mnist",
    "image": IMAGE,
    "command": "python\ntrain.py\n--epochs\n3\n",
    "gpus": "1",
    "nodes": "1",
    "max_runtime_s": "3600",
    "priority": "normal",
    "reservation": "",
    "env": "EPOCHS=3\nLR=0.1",
}


@pytest.fixture(autouse=True)
def _lab():
    ImageRuleFactory()
    lab(2)


@pytest.mark.parametrize("path", ["/jobs/", "/jobs/new/", "/jobs/1/", "/jobs/1/cancel/"])
def test_anonymous_is_sent_to_sign_in(client, path):
    response = client.get(path)
    assert response.status_code == 302 and response["Location"].startswith("/login/")


@pytest.mark.parametrize("role", ["student", "teacher", "admin"])
def test_the_nav_links_to_jobs_and_the_empty_list_says_so(browser_client, role):
    client = browser_client(role)
    response = client.get("/jobs/")
    assert response.status_code == 200
    assert b'href="/jobs/"' in response.content and b"No jobs yet." in response.content


@pytest.mark.parametrize("role", ["student", "teacher", "admin"])
def test_submit_from_the_form(browser_client, role):
    client = browser_client(role)
    assert client.get("/jobs/new/").status_code == 200
    response = client.post("/jobs/new/", FORM)
    job = Job.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.pk}/"
    assert job.command == ["python", "train.py", "--epochs", "3"] and job.env == {"EPOCHS": "3", "LR": "0.1"}
    assert job.owner.username == f"{role}-x"
    page = client.get(response["Location"])
    assert "is queued" in page.content.decode() and b"submitted" in page.content


def test_the_form_shows_the_services_errors_and_queues_nothing(browser_client):
    client = browser_client("student")
    response = client.post("/jobs/new/", {**FORM, "image": "evil/miner:1", "env": "CUDA_VISIBLE_DEVICES=1"})
    assert response.status_code == 400
    text = response.content.decode()
    assert "not on the lab&#x27;s image allow-list" in text and "set by the portal" in text
    assert client.post("/jobs/new/", {**FORM, "env": "no equals sign"}).status_code == 400
    assert client.post("/jobs/new/", {**FORM, "priority": "high"}).status_code == 400  # not a student's choice
    assert not Job.objects.exists()


def test_the_form_refuses_a_variable_the_program_loader_reads(browser_client):
    response = browser_client("student").post("/jobs/new/", {**FORM, "env": "EPOCHS=3\nLD_PRELOAD=/tmp/fast.so"})
    assert response.status_code == 400
    assert "LD_PRELOAD is read by the system&#x27;s program loader and may not be set by a job" in (
        response.content.decode()
    )
    assert not Job.objects.exists()


def test_will_it_start_now_button(browser_client):
    client = browser_client("student")
    response = client.post("/jobs/new/", {**FORM, "action": "preview"})
    assert response.status_code == 200
    assert "Yes: it would start now, on gpu0" in response.content.decode()
    assert not Job.objects.exists()


@pytest.fixture
def jobs():
    course = CourseFactory()
    student = UserFactory(username="student-x", role="student")
    teacher = UserFactory(username="teacher-x", role="teacher")
    course.teachers.add(teacher)
    EnrollmentFactory(user=student, course=course)
    return {
        "student": JobFactory(owner=student, name="student job", course=course),  # booked to the teacher's course
        "personal": JobFactory(owner=student, name="personal job"),  # booked to no course: the student's own
        "other": JobFactory(owner=UserFactory(username="other"), name="other job"),
    }


def test_detail_is_404_for_jobs_one_may_not_see(browser_client, jobs):
    client = browser_client("student")
    assert client.get(f"/jobs/{jobs['student'].pk}/").status_code == 200
    assert client.get(f"/jobs/{jobs['other'].pk}/").status_code == 404
    assert client.get(f"/jobs/{jobs['other'].pk}/cancel/").status_code == 404


def test_the_log_view_shows_the_end_of_a_huge_log_and_says_it_is_cut(browser_client, local_backend, settings):
    client = browser_client("student")
    job = JobFactory(owner=User.objects.get(username="student-x"), state=JobState.FAILED, finished_at=timezone.now())
    directory = local_backend.root / f"job-{job.pk}-a1"
    directory.mkdir(parents=True)
    (directory / "rank-0.log").write_bytes(b"epoch 1\nepoch 2\n")
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "epoch 1\nepoch 2\n</pre>" in page and "Showing the last" not in page
    # One line of 3 MiB (a progress bar without newlines): the page holds its last MiB and says so.
    (directory / "rank-0.log").write_bytes(b"#" * (3 * 1024 * 1024 - 9) + b"the end\n")
    response = client.get(f"/jobs/{job.pk}/")
    assert response.status_code == 200 and len(response.content) < 1024 * 1024 + 20_000
    page = response.content.decode()
    assert "the end\n</pre>" in page
    assert "Showing the last 1.0\xa0MB of 3.0\xa0MB: one view holds at most 1.0\xa0MB" in page


def test_teachers_see_their_students_jobs_but_do_not_cancel_them(browser_client, jobs):
    client = browser_client("teacher")
    page = client.get("/jobs/").content.decode()
    assert "student job" in page and "other job" not in page and "personal job" not in page
    assert client.get(f"/jobs/{jobs['personal'].pk}/").status_code == 404
    detail = client.get(f"/jobs/{jobs['student'].pk}/")
    assert detail.status_code == 200 and b"cancel-link" not in detail.content
    assert client.get(f"/jobs/{jobs['student'].pk}/cancel/").status_code == 403
    assert client.post(f"/jobs/{jobs['student'].pk}/cancel/", {"confirm": "yes"}).status_code == 403


def test_cancel_asks_for_confirmation(browser_client, jobs):
    client = browser_client("student")
    job = jobs["student"]
    assert b"Cancel this job?" in client.get(f"/jobs/{job.pk}/cancel/").content
    assert client.post(f"/jobs/{job.pk}/cancel/", {}).status_code == 400
    job.refresh_from_db()
    assert job.state == JobState.QUEUED
    response = client.post(f"/jobs/{job.pk}/cancel/", {"confirm": "yes"}, follow=True)
    assert "is cancelled" in response.content.decode()
    job.refresh_from_db()
    assert job.state == JobState.CANCELLED


def test_admins_cancel_anyones_job(browser_client, jobs):
    client = browser_client("admin")
    response = client.post(f"/jobs/{jobs['other'].pk}/cancel/", {"confirm": "yes"})
    assert response.status_code == 302
    assert Job.objects.get(pk=jobs["other"].pk).state == JobState.CANCELLED
    assert User.objects.filter(username="admin-x").exists()
