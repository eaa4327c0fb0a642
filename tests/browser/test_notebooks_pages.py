"""A student starts a notebook in the browser and watches it go from the queue to ready without reloading.

No hub here: the test moves the session as the notebook pass would (starting on gpu07, then ready with its URL),
and the page follows by polling the API.
"""

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from labs.models import NotebookProfile, NotebookSession, NotebookStatus
from tests.factories import PASSWORD, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def sign_in(page, base, username):
    page.goto(base + "/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()


def test_start_a_notebook_and_see_it_become_ready_without_a_reload(live_server, page):
    NotebookProfile.objects.create(
        slug="pytorch-quarter",
        name="PyTorch, a quarter",
        image="quay.io/jupyter/pytorch-notebook:cuda12-latest",
        gpu_share=Decimal("0.25"),
        roles=["student"],
    )
    UserFactory(username="sam", role="student")
    sign_in(page, live_server.url, "sam")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Notebooks").click()
    expect(page.get_by_test_id("no-notebooks")).to_have_text("Pick a profile and press Start.")
    page.get_by_label("PyTorch, a quarter").check()
    page.get_by_role("button", name="Start").click()

    expect(page.get_by_role("status")).to_contain_text("“PyTorch, a quarter” is in the queue.")
    card = page.get_by_test_id("live-notebooks").get_by_test_id("notebook")
    expect(card).to_contain_text("Position 1 in the queue")
    page.evaluate("window.notReloaded = true")

    session = NotebookSession.objects.get()
    now = timezone.now()
    NotebookSession.objects.filter(pk=session.pk).update(
        status=NotebookStatus.STARTING, node="gpu07", gpu_index=0, starting_at=now, reason="Starting on gpu07."
    )
    expect(card).to_contain_text("Starting on gpu07…")
    expect(card.locator("progress")).to_be_visible()

    ends = now + dt.timedelta(hours=4)
    # The card shows "14:05" for today and "Tue 14:05" for another day, by the browser's clock: pin that clock to
    # the session's last day, so the label does not depend on the hour the test runs at.
    page.clock.set_fixed_time(ends)
    url = "http://127.0.0.1:8001/user/sam/nb1/"
    NotebookSession.objects.filter(pk=session.pk).update(
        status=NotebookStatus.READY, url=url, ready_at=now, ends_at=ends, reason=""
    )
    open_link = card.get_by_role("link", name="Open JupyterLab")
    expect(open_link).to_have_attribute("href", url)
    expect(open_link).to_have_attribute("target", "_blank")
    expect(card).to_contain_text(f"ends at {timezone.localtime(ends):%H:%M}")
    expect(card.get_by_role("button", name="Keep running / Extend")).to_be_visible()
    page.clock.set_fixed_time(ends + dt.timedelta(days=1))  # seen the day after, it names the day
    expect(card).to_contain_text(f"ends at {timezone.localtime(ends):%a %H:%M}")

    NotebookSession.objects.filter(pk=session.pk).update(
        status=NotebookStatus.STOPPED, url="", stopped_at=timezone.now(), reason="Stopped after 60 minutes idle."
    )
    ended = page.get_by_test_id("ended-notebooks").get_by_test_id("notebook")
    expect(ended).to_contain_text("Stopped after 60 minutes idle.")
    expect(page.get_by_test_id("live-notebooks").get_by_test_id("notebook")).to_have_count(0)
    assert page.evaluate("window.notReloaded") is True

    # The Keep running button posts to the page: try it on a fresh ready session after a reload.
    NotebookSession.objects.filter(pk=session.pk).update(
        status=NotebookStatus.READY, url=url, stopped_at=None, ends_at=ends, reason=""
    )
    page.reload()
    page.get_by_role("button", name="Keep running / Extend").click()
    expect(page.get_by_role("status")).to_contain_text("keeps running until")
