"""A person submits a tiny job in the browser, sees "will it start now?", and watches it finish with its logs."""

import threading
import time

import pytest
from django.db import connection
from playwright.sync_api import expect

from jobs.models import Job
from jobs.services.dispatch import jobs_follow
from tests.factories import PASSWORD, UserFactory
from tests.jobs.factories import IMAGE, ImageRuleFactory, lab, local_backend_fixture  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def sign_in(page, base, username):
    page.goto(base + "/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()


@pytest.fixture
def follower():
    """What Celery beat does in the lab: follow the placed jobs every half second."""
    stop = threading.Event()

    def run():
        try:
            while not stop.is_set():
                time.sleep(0.5)  # not stop.wait(0.5): a timed wait hangs under the clock drills' libfaketime
                jobs_follow()
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join(timeout=10)


def test_submit_a_tiny_job_and_see_it_finish_with_its_logs(live_server, page, local_backend, follower):
    ImageRuleFactory()
    lab(2)
    UserFactory(username="sam", role="student")
    sign_in(page, live_server.url, "sam")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Jobs").click()
    expect(page.get_by_text("No jobs yet.")).to_be_visible()
    page.get_by_role("link", name="Submit a job").click()

    page.get_by_label("Name").fill("hello")
    page.get_by_label("Or another image").fill(IMAGE)
    page.get_by_label("Command line", exact=True).fill("python -c \"print('hello from the lab')\"")
    page.get_by_label("Max runtime", exact=True).select_option(label="10 minutes")
    expect(page.get_by_test_id("preview")).to_have_text("Yes: it would start now, on gpu01.")
    page.get_by_role("button", name="Submit").click()

    job = Job.objects.get()
    expect(page).to_have_url(f"{live_server.url}/jobs/{job.pk}/")
    expect(page.get_by_role("status")).to_contain_text("“hello” is queued")
    expect(page.get_by_test_id("job-status")).to_have_text("succeeded", timeout=30_000)
    expect(page.get_by_test_id("logs")).to_have_text("hello from the lab\n")
    expect(page.get_by_test_id("events")).to_contain_text("running → succeeded")

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Jobs").click()
    expect(page.locator(f'tr[data-job-id="{job.pk}"] [data-field="status"]')).to_have_text("succeeded")
