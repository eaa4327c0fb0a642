"""Live pages converge on the truth: each live element is driven to its end state without a reload, and what the
page then shows is checked (no stale banner, no Cancel on a finished job, no "null" or "undefined")."""

import re
import threading
import time
from decimal import Decimal

import pytest
from django.db import connection
from django.utils import timezone
from playwright.sync_api import expect

from jobs.models import Job
from jobs.services import job_submit
from jobs.services.dispatch import jobs_follow
from labs.inventory import demo_specs
from labs.models import Node, NotebookProfile, NotebookSession, NotebookStatus
from labs.services import inventory_sync
from tests.browser.test_gpus import asgi_portal  # noqa: F401  (fixture)
from tests.factories import PASSWORD, AllocationFactory, UserFactory
from tests.jobs.factories import IMAGE, ImageRuleFactory, lab, local_backend_fixture  # noqa: F401
from tests.labs.telemetry.test_collector import clean_store  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SCREENS = "/work/wt/screens"


def sign_in(page, base, username):
    page.goto(base + "/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()


def no_null_nor_undefined(page):
    """Nothing in the page's text says "null" or "undefined" (a script that printed a missing value)."""
    expect(page.locator("main")).not_to_contain_text(re.compile(r"\b(null|undefined|NaN)\b"))


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


def submit(user, name, code):
    return job_submit(
        user=user, name=name, image=IMAGE, command=["python", "-c", code], gpus=1, nodes=1, max_runtime_s=600
    )


def test_a_job_page_follows_the_job_to_success(live_server, page, local_backend, follower):
    ImageRuleFactory()
    lab(1)
    sam = UserFactory(username="sam", role="student")
    job = submit(sam, "hello epochs", "import time; time.sleep(2); print('done')")
    after = submit(sam, "second", "import time; time.sleep(8); print('second done')")  # waits for the one GPU
    sign_in(page, live_server.url, "sam")
    page.goto(f"{live_server.url}/jobs/{job.pk}/")
    page.evaluate("window.notReloaded = true")

    expect(page.get_by_test_id("job-status")).to_have_text("succeeded", timeout=30_000)
    expect(page.get_by_test_id("cancel-link")).to_have_count(0)
    expect(page.get_by_test_id("logs")).to_have_text("done\n")
    events = page.get_by_test_id("events").locator("li")
    expect(events.last).to_contain_text("running → succeeded")
    # The events the page adds read as the server writes them ("Fri 04:55:17"), never "4:55:17 AM".
    expect(events.last).to_have_text(re.compile(r"^[A-Z][a-z]{2} \d\d:\d\d:\d\d running → succeeded"))
    expect(page.get_by_test_id("events")).not_to_contain_text(re.compile(r"\b[AP]M\b"))
    no_null_nor_undefined(page)
    assert page.evaluate("window.notReloaded") is True
    page.screenshot(path=f"{SCREENS}/job_succeeded_after.png", full_page=True)

    # The list follows the second job to its end as well, without a reload.
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Jobs").click()
    page.evaluate("window.notReloaded = true")
    expect(page.locator(f'tr[data-job-id="{job.pk}"] [data-field="status"]')).to_have_text("succeeded")
    expect(page.locator(f'tr[data-job-id="{after.pk}"] [data-field="status"]')).to_have_text(
        "succeeded", timeout=30_000
    )
    no_null_nor_undefined(page)
    assert page.evaluate("window.notReloaded") is True


def test_a_cancelled_job_loses_its_being_stopped_banner_and_its_cancel(live_server, page, local_backend, follower):
    ImageRuleFactory()
    lab(1)
    sam = UserFactory(username="sam", role="student")
    job = submit(sam, "long one", "import time; print('up', flush=True); time.sleep(120)")
    sign_in(page, live_server.url, "sam")
    page.goto(f"{live_server.url}/jobs/{job.pk}/")
    expect(page.get_by_test_id("job-status")).to_have_text("running", timeout=30_000)
    page.get_by_test_id("cancel-link").click()
    page.get_by_label("Yes, cancel this job.").check()
    page.get_by_role("button", name="Cancel the job").click()
    expect(page).to_have_url(f"{live_server.url}/jobs/{job.pk}/")
    page.evaluate("window.notReloaded = true")

    expect(page.get_by_test_id("job-status")).to_have_text("cancelled", timeout=30_000)
    expect(page.get_by_role("status")).to_have_count(0)  # "… is being stopped" is over
    expect(page.get_by_test_id("cancel-link")).to_have_count(0)
    expect(page.get_by_test_id("events")).to_contain_text("→ cancelled")
    no_null_nor_undefined(page)
    assert page.evaluate("window.notReloaded") is True
    assert Job.objects.get().state == "cancelled"


def queue_a_quarter_notebook(page, base: str) -> None:
    """Sam, a student, starts "PyTorch, a quarter" from the Notebooks page; the lab has no GPU for it yet."""
    NotebookProfile.objects.create(
        slug="pytorch-quarter",
        name="PyTorch, a quarter",
        image="quay.io/jupyter/pytorch-notebook:cuda12-latest",
        gpu_share=Decimal("0.25"),
        roles=["student"],
    )
    UserFactory(username="sam", role="student")
    sign_in(page, base, "sam")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Notebooks").click()
    page.get_by_label("PyTorch, a quarter").check()
    page.get_by_role("button", name="Start").click()
    expect(page.get_by_role("status")).to_contain_text("“PyTorch, a quarter” is in the queue.")


def test_a_notebook_card_and_banner_follow_it_from_the_queue_to_ready(live_server, page):
    queue_a_quarter_notebook(page, live_server.url)
    page.evaluate("window.notReloaded = true")
    card = page.get_by_test_id("live-notebooks").get_by_test_id("notebook")

    session = NotebookSession.objects.get()
    now = timezone.now()
    # Starting, with no reservation ahead (nothing it must end by): the card printed "null" there.
    NotebookSession.objects.filter(pk=session.pk).update(
        status=NotebookStatus.STARTING, node="gpu07", gpu_index=0, starting_at=now, reason="Starting on gpu07."
    )
    expect(card).to_contain_text("Starting on gpu07…")
    expect(page.get_by_role("status")).to_have_count(0)  # no longer "in the queue"
    no_null_nor_undefined(page)

    url = "http://127.0.0.1:8001/user/sam/nb1/"
    NotebookSession.objects.filter(pk=session.pk).update(status=NotebookStatus.READY, url=url, ready_at=now, reason="")
    expect(card.get_by_role("link", name="Open JupyterLab")).to_have_attribute("href", url)
    expect(card).not_to_contain_text("in the queue")
    expect(page.get_by_role("status")).to_have_count(0)
    no_null_nor_undefined(page)

    NotebookSession.objects.filter(pk=session.pk).update(status=NotebookStatus.STOPPED, url="", reason="")
    expect(page.get_by_test_id("ended-notebooks").get_by_test_id("notebook")).to_contain_text("Stopped.")
    no_null_nor_undefined(page)
    assert page.evaluate("window.notReloaded") is True


def test_the_grid_says_partly_used_and_cordoned_as_they_happen(asgi_portal, page):  # noqa: F811
    inventory_sync(specs=demo_specs(3), source="demo")
    gpus = {node.name: node.gpus.get() for node in Node.objects.prefetch_related("gpus")}
    UserFactory(username="maria", role="student")
    page.goto(asgi_portal + "/login/?next=/lab/gpus/")
    page.get_by_label("Username").fill("maria")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_test_id("live-state")).to_have_text("live", timeout=15_000)
    page.evaluate("window.notReloaded = true")
    first, second = page.get_by_test_id("gpu-gpu01-0"), page.get_by_test_id("gpu-gpu02-0")
    expect(first.locator('[data-field="state"]')).to_have_text("free")

    # Someone else's notebook takes a quarter of gpu01: shared, not "busy".
    AllocationFactory(gpu=gpus["gpu01"], kind="notebook", ref="notebook:9", share=Decimal("0.25"))
    expect(first.locator('[data-field="state"]')).to_have_text("partly used", timeout=10_000)
    expect(first.locator('[data-field="holder"]')).to_have_text("¼ in use")

    # gpu02 is cordoned: it says so, and nowhere "free".
    Node.objects.filter(name="gpu02").update(status="cordoned")
    expect(second.locator('[data-field="state"]')).to_have_text("cordoned", timeout=10_000)
    expect(second.locator('[data-field="holder"]')).to_have_text("nothing runs on it")
    expect(second).not_to_contain_text("free")
    expect(page.get_by_test_id("gpus-available")).to_have_text("1")
    no_null_nor_undefined(page)
    assert page.evaluate("window.notReloaded") is True

    page.reload()  # the server's cards say the same as the live ones
    expect(first.locator('[data-field="state"]')).to_have_text("partly used")
    expect(first.locator('[data-field="holder"]')).to_have_text("¼ in use")
    expect(second.locator('[data-field="holder"]')).to_have_text("nothing runs on it")
