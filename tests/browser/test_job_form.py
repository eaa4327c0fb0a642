"""A new teacher's first jobs from the page, as people type them: a one-line command with quotes, and a three-line
script; both run on the local backend and succeed, and the page showed how the command line would be run."""

import pytest
from playwright.sync_api import expect

from jobs.models import Job
from labs.images import ImageRule
from tests.browser.test_jobs import follower, sign_in  # noqa: F401
from tests.factories import UserFactory
from tests.jobs.factories import lab, local_backend_fixture  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
IMAGE = "python:3.12-slim"


def submit_and_wait(page, live_server, count: int) -> Job:
    page.get_by_role("button", name="Submit", exact=True).click()
    expect(page).to_have_url(f"{live_server.url}/jobs/{Job.objects.order_by('-pk').first().pk}/")
    job = Job.objects.order_by("-pk").first()
    assert Job.objects.count() == count
    expect(page.get_by_test_id("job-status")).to_have_text("succeeded", timeout=30_000)
    return job


def test_a_new_teacher_runs_a_command_line_and_a_script_from_the_page(live_server, page, local_backend, follower):  # noqa: F811
    ImageRule.objects.create(pattern=IMAGE, description="Python 3.12, no CUDA")
    lab(2)
    UserFactory(username="tess", role="teacher")
    sign_in(page, live_server.url, "tess")
    page.goto(live_server.url + "/jobs/new/")

    # The images are listed with what they hold; the resources are presets with the quota beside them.
    page.get_by_label("Image", exact=True).select_option(IMAGE)
    expect(page.get_by_label("Image", exact=True)).to_contain_text("Python 3.12, no CUDA")
    expect(page.get_by_test_id("quota")).to_contain_text("GPU-hours left this week")
    page.get_by_label("1 GPU · 1 h", exact=False).check()

    page.get_by_label("Name").fill("first")
    page.get_by_label("Command line", exact=True).fill('python -c "print(1)"')
    expect(page.get_by_test_id("argv-preview").locator("li")).to_have_text(["python", "-c", "print(1)"])
    expect(page.get_by_test_id("preview")).to_have_text("Yes: it would start now, on gpu01.")
    first = submit_and_wait(page, live_server, 1)
    expect(page.get_by_test_id("logs")).to_have_text("1\n")
    assert first.command == ["python", "-c", "print(1)"]

    # Edit and submit again, this time as a script of three lines.
    page.get_by_test_id("resubmit-link").click()
    expect(page.get_by_label("Command line", exact=True)).to_have_value("python -c 'print(1)'")
    page.get_by_label("Name").fill("second")
    page.get_by_label("A script").check()
    expect(page.get_by_label("Command line", exact=True)).to_be_hidden()
    script = 'echo "one"\nfor n in 2 3; do echo "line $n"; done | tr a-z A-Z\npython -c "print(2 + 2)"\n'
    page.get_by_label("Script", exact=True).fill(script)
    second = submit_and_wait(page, live_server, 2)
    expect(page.get_by_test_id("logs")).to_have_text("one\nLINE 2\nLINE 3\n4\n")
    expect(page.get_by_test_id("job-script")).to_have_text(script)
    assert second.script == script and second.command == []
