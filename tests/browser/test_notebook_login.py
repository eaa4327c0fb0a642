"""The whole notebook path in a browser, with nothing faked: a student signs in to the portal, starts a notebook,
opens the real JupyterLab through a real JupyterHub's proxy without a second login (the hub logs them in through
the portal's OAuth 2 / OpenID Connect provider), and stops it from the portal."""

from __future__ import annotations

import threading
import time
from decimal import Decimal

import pytest
import requests
from django.db import connection
from playwright.sync_api import expect

from labs.models import NotebookProfile, NotebookSession, NotebookStatus
from labs.notebooks.localhub import LocalHub
from labs.notebooks.passes import notebooks_pass
from portal.oauth.services import hub_client_sync
from tests.factories import PASSWORD, CourseFactory, EnrollmentFactory, NodeFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def real_hub(live_server, settings):
    """JupyterHub with the local-process spawner (real JupyterLab), logging people in through this portal."""
    hub = LocalHub(spawner="local", portal_url=live_server.url)
    hub.start(timeout=120)
    settings.NOTEBOOKS_HUB_API_URL, settings.NOTEBOOKS_HUB_PUBLIC_URL = hub.api_url, hub.public_url
    hub_client_sync()  # the hub's OAuth client, with its callback on this hub
    yield hub
    hub.close()


@pytest.fixture
def worker():
    """What Celery beat and the worker do in production: the notebook pass, over and over."""
    stop = threading.Event()
    problems: list[BaseException] = []

    def loop():
        try:
            while not stop.is_set():
                try:
                    notebooks_pass()
                except Exception as exc:  # keep going, but fail the test at the end
                    problems.append(exc)
                time.sleep(0.5)  # not stop.wait(0.5): a timed wait hangs under the clock drills' libfaketime
        finally:
            connection.close()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join(timeout=30)
    assert not problems, problems


def test_a_student_opens_jupyterlab_without_a_second_login_and_stops_it(live_server, real_hub, worker, page):
    course = CourseFactory(code="DL-101")
    profile = NotebookProfile.objects.create(
        slug="lab-quarter",
        name="DL-101 notebook",
        image="quay.io/jupyter/base-notebook:latest",
        gpu_share=Decimal("0.25"),
        roles=[],
    )
    profile.courses.add(course)
    NodeFactory(name="gpu01")
    sam = UserFactory(username="sam")
    EnrollmentFactory(user=sam, course=course)

    page.set_default_timeout(60_000)
    page.goto(live_server.url + "/login/")
    page.get_by_label("Username").fill("sam")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Notebooks").click()
    page.get_by_label("DL-101 notebook").check()
    page.get_by_role("button", name="Start").click()

    card = page.get_by_test_id("live-notebooks").get_by_test_id("notebook")
    open_link = card.get_by_role("link", name="Open JupyterLab")
    expect(open_link).to_be_visible(timeout=90_000)
    session = NotebookSession.objects.get(user=sam)
    assert session.status == NotebookStatus.READY and session.node == "gpu01"

    # Open it: the hub sends the browser to the portal's /o/authorize/, which knows sam already and sends it
    # straight back; no sign-in form on the way.
    with page.context.expect_page() as opened:
        open_link.click()
    lab = opened.value
    lab.set_default_timeout(90_000)
    # The hub knows sam as u<id> (the account's, never the name: accounts.selectors.hub_username).
    lab.wait_for_url(f"{real_hub.public_url}/user/u{sam.pk}/{session.server_name}/lab**", timeout=90_000)
    expect(lab.locator("#jp-main-dock-panel")).to_be_attached(timeout=90_000)
    assert lab.get_by_label("Password").count() == 0
    # The hub knows sam as the portal said: a student, not a hub admin.
    user = requests.get(
        f"{real_hub.api_url}/users/u{sam.pk}", headers={"Authorization": f"token {real_hub.token}"}, timeout=10
    ).json()
    assert user["admin"] is False and session.server_name in user["servers"]
    lab.close()

    # Stop it from the portal, behind a confirmation.
    card.get_by_role("link", name="Stop…").click()
    page.get_by_label("Yes, stop it.").check()
    page.get_by_test_id("confirm-stop").click()
    deadline = time.monotonic() + 60
    while NotebookSession.objects.get(pk=session.pk).status != NotebookStatus.STOPPED:
        assert time.monotonic() < deadline, "the notebook did not stop"
        time.sleep(0.3)
    gone = requests.get(
        f"{real_hub.api_url}/users/u{sam.pk}", headers={"Authorization": f"token {real_hub.token}"}, timeout=10
    ).json()
    assert session.server_name not in gone["servers"]
    page.goto(live_server.url + "/notebooks/")
    expect(page.get_by_test_id("ended-notebooks")).to_contain_text("Stopped by you.")
