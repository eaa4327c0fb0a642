"""The dashboard's notebook card and notices, and the job list, converge on the truth without a reload: each is
driven to its end state and what the page then shows is checked (no stale notice, no "null"/"undefined")."""

import datetime as dt

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from accounts.services import notice_send
from jobs.models import Job
from jobs.services import job_submit
from labs.models import NotebookSession, NotebookStatus, Reservation
from labs.reservations.services import NodeRequest, reservation_create, reservation_decide
from tests.browser.test_live_pages import follower, no_null_nor_undefined, queue_a_quarter_notebook, sign_in  # noqa: F401
from tests.factories import NodeFactory, UserFactory
from tests.jobs.factories import IMAGE, ImageRuleFactory, lab, local_backend_fixture  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_job_list_adds_a_job_submitted_elsewhere_and_follows_it(live_server, page, local_backend, follower):  # noqa: F811
    ImageRuleFactory()
    lab(2)
    sam = UserFactory(username="sam", role="student")
    sign_in(page, live_server.url, "sam")
    page.goto(live_server.url + "/jobs/")
    expect(page.get_by_text("No jobs yet.")).to_be_visible()
    page.evaluate("window.notReloaded = true")

    # Submitted through the API (or the CLI, another tab): the list shows it without a reload, then its end.
    job = job_submit(
        user=sam, name="from the API", image=IMAGE, command=["python", "-c", "print(1)"], gpus=1, max_runtime_s=600
    )
    row = page.locator(f'tr[data-job-id="{job.pk}"]')
    expect(row).to_contain_text("from the API")
    expect(page.get_by_text("No jobs yet.")).to_be_hidden()
    expect(row.locator('[data-field="status"]')).to_have_text("succeeded", timeout=30_000)
    expect(row.get_by_role("link", name="from the API")).to_have_attribute("href", f"/jobs/{job.pk}/")
    no_null_nor_undefined(page)
    assert Job.objects.get().state == "succeeded"
    assert page.evaluate("window.notReloaded") is True


def test_the_dashboard_notebook_card_follows_the_notebook(live_server, page):
    queue_a_quarter_notebook(page, live_server.url)
    page.goto(live_server.url + "/")
    card = page.get_by_test_id("dashboard-notebooks")
    expect(card).to_contain_text("PyTorch, a quarter")
    page.evaluate("window.notReloaded = true")

    session = NotebookSession.objects.get()
    now = timezone.now()
    NotebookSession.objects.filter(pk=session.pk).update(
        status=NotebookStatus.STARTING, node="gpu07", gpu_index=0, starting_at=now, reason="Starting on gpu07."
    )
    expect(card).to_contain_text("on gpu07…")
    no_null_nor_undefined(page)

    url = "http://127.0.0.1:8001/user/sam/nb1/"
    NotebookSession.objects.filter(pk=session.pk).update(status=NotebookStatus.READY, url=url, ready_at=now, reason="")
    expect(card.get_by_role("link", name="Open")).to_have_attribute("href", url)
    expect(card).not_to_contain_text("on gpu07…")
    no_null_nor_undefined(page)

    NotebookSession.objects.filter(pk=session.pk).update(status=NotebookStatus.STOPPED, url="", reason="")
    expect(card).to_contain_text("No notebook is running.")
    expect(card.get_by_role("link", name="Open")).to_have_count(0)
    no_null_nor_undefined(page)
    assert page.evaluate("window.notReloaded") is True


def test_the_admins_approve_or_reject_notice_goes_once_another_admin_decided(live_server, page):
    NodeFactory(name="gpu01")
    ada = UserFactory(username="ada", role="teacher")
    root = UserFactory(username="root", role="admin")
    other = UserFactory(username="other-admin", role="admin")
    start = timezone.now().replace(microsecond=0) + dt.timedelta(days=1)
    [reservation] = reservation_create(
        by=ada, title="DL-101 lab", starts_at=start, ends_at=start + dt.timedelta(hours=2), nodes=NodeRequest(count=1)
    )
    Reservation.objects.filter(pk=reservation.pk).update(status="pending")
    notice_send(
        user=root, text="ada asks for 1 nodes: approve or reject it.", ref=f"reservation:{reservation.pk}:pending"
    )
    sign_in(page, live_server.url, "root")
    notices = page.get_by_test_id("notices")
    expect(notices).to_contain_text("approve or reject it")
    page.evaluate("window.notReloaded = true")

    reservation_decide(by=other, reservation=Reservation.objects.get(pk=reservation.pk), approve=True)
    expect(page.get_by_test_id("notices")).to_have_count(0)
    expect(page.locator("main")).not_to_contain_text("approve or reject it")

    # And a new notice shows up the same way.
    notice_send(user=root, text="Node gpu01 is back.", ref="node:gpu01")
    expect(page.get_by_test_id("notices")).to_contain_text("Node gpu01 is back.")
    no_null_nor_undefined(page)
    assert page.evaluate("window.notReloaded") is True
