"""A teacher writes a course job template on the page, and a student of the course picks it on the job form, fills
in its parameters and submits: the job runs on the local backend and succeeds, the values in its environment."""

import pytest
from playwright.sync_api import expect

from jobs.models import Job
from labs.images import ImageRule
from tests.browser.test_jobs import follower, sign_in  # noqa: F401
from tests.factories import CourseFactory, EnrollmentFactory, UserFactory
from tests.jobs.factories import lab, local_backend_fixture  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
IMAGE = "python:3.12-slim"
SCRIPT = 'echo "model $MODEL"\npython -c "import os; print(int(os.environ[\'EPOCHS\']) * 2)"\n'


def test_a_student_submits_from_a_course_template(live_server, page, local_backend, follower):  # noqa: F811
    ImageRule.objects.create(pattern=IMAGE, description="Python 3.12, no CUDA")
    lab(2)
    course = CourseFactory(code="ML-101", name="Machine learning")
    course.teachers.add(UserFactory(username="tess", role="teacher"))
    EnrollmentFactory(user=UserFactory(username="sam", role="student"), course=course)

    sign_in(page, live_server.url, "tess")
    page.get_by_test_id("templates-link").click()
    page.get_by_test_id("template-new").click()
    page.get_by_label("Name", exact=True).fill("double the epochs")
    page.get_by_label("Description").fill("Prints the model and twice the epochs.")
    page.get_by_label("Image", exact=True).select_option(IMAGE)
    page.get_by_label("A script").check()
    page.get_by_label("Script", exact=True).fill(SCRIPT)
    page.get_by_label("Max runtime").select_option("600")
    page.get_by_label("Parameters").fill(
        "EPOCHS | Epochs | int | 1..50 | 3\nMODEL | Model | choice | small, big | small"
    )
    page.get_by_role("button", name="Save the template").click()
    expect(page.get_by_test_id("templates")).to_contain_text("double the epochs")
    page.context.clear_cookies()  # signed out

    sign_in(page, live_server.url, "sam")
    page.goto(live_server.url + "/jobs/new/")
    page.get_by_test_id("template-pick").click()
    expect(page.get_by_test_id("template-description")).to_have_text("Prints the model and twice the epochs.")
    page.get_by_label("Epochs").fill("99")
    page.get_by_role("button", name="Submit", exact=True).click()
    expect(page.locator(".errorlist, .field-error").first).to_be_visible()
    assert not Job.objects.exists()
    page.get_by_label("Epochs").fill("21")
    page.get_by_label("Model").select_option("big")
    page.get_by_role("button", name="Submit", exact=True).click()
    expect(page.get_by_test_id("job-status")).to_have_text("succeeded", timeout=30_000)
    expect(page.get_by_test_id("logs")).to_have_text("model big\n42\n")
    job = Job.objects.get()
    assert job.owner.username == "sam" and job.course == course and job.env == {"EPOCHS": "21", "MODEL": "big"}
    assert job.script == SCRIPT
