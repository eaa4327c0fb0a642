"""A lab machine's seat, in a browser against the local hub: the kiosk page signs a student in, starts their
Desktop profile's server (the echo spawner stands in for the XFCE desktop, which needs the cluster's image), lands
on its desktop URL through the hub's proxy, and signs out, stopping it, for the next person."""

from __future__ import annotations

import threading
import time
from decimal import Decimal

import pytest
import requests
from django.db import connection
from playwright.sync_api import expect

from accounts.selectors import hub_username
from labs.images import ImageRule
from labs.models import NotebookProfile, NotebookSession, NotebookStatus
from labs.notebooks.localhub import LocalHub
from labs.notebooks.passes import notebooks_pass
from tests.factories import PASSWORD, NodeFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def echo_hub(live_server, settings):
    hub = LocalHub(spawner="echo", portal_url=live_server.url)
    hub.start(timeout=90)
    settings.NOTEBOOKS_HUB_API_URL, settings.NOTEBOOKS_HUB_PUBLIC_URL = hub.api_url, hub.public_url
    yield hub
    hub.close()


@pytest.fixture
def worker():
    """The notebook pass, over and over, as beat and the worker run it in production."""
    stop = threading.Event()
    problems: list[BaseException] = []

    def loop():
        try:
            while not stop.is_set():
                try:
                    notebooks_pass()
                except Exception as exc:
                    problems.append(exc)
                time.sleep(0.3)
        finally:
            connection.close()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join(timeout=30)
    assert not problems, problems


def hub_servers(hub: LocalHub, user: str) -> dict:
    answer = requests.get(f"{hub.api_url}/users/{user}", headers={"Authorization": f"token {hub.token}"}, timeout=10)
    return answer.json()["servers"] if answer.status_code == 200 else {}


def test_a_seat_signs_in_opens_the_desktop_and_signs_out(live_server, echo_hub, worker, page):
    # The admin's one-time setup (deploy/README.md, "A desktop at every seat"): the image rule and the profile.
    ImageRule.objects.create(pattern="registry.lab.example/gpu-lab-desktop:*")
    NotebookProfile.objects.create(
        slug="desktop",
        name="Desktop",
        image="registry.lab.example/gpu-lab-desktop:0.1.0",
        gpu_share=Decimal("0.25"),
        roles=["student"],
    )
    NodeFactory(name="gpu01")
    UserFactory(username="sam")
    page.set_default_timeout(60_000)

    # Power-on: the machine's browser opens the kiosk page and is sent to sign in, then back.
    page.goto(live_server.url + "/kiosk/")
    page.get_by_label("Username").fill("sam")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(live_server.url + "/kiosk/")
    expect(page.get_by_test_id("kiosk")).to_contain_text("Signed in as sam.")

    # Start: the page follows the queued and starting desktop by itself until it can be opened.
    page.get_by_role("button", name="Start my desktop").click()
    open_desktop = page.get_by_role("link", name="Open my desktop")
    expect(open_desktop).to_be_visible(timeout=90_000)
    session = NotebookSession.objects.get(user__username="sam")
    assert session.status == NotebookStatus.READY and session.profile.slug == "desktop" and session.node == "gpu01"
    assert session.server_name in hub_servers(echo_hub, hub_username(session.user))

    # Open it: through the hub's proxy, at the desktop's path of the server.
    open_desktop.click()
    hub_name = hub_username(session.user)  # the hub knows sam by the account's id
    page.wait_for_url(f"{echo_hub.public_url}/user/{hub_name}/{session.server_name}/desktop/")
    expect(page.locator("body")).to_contain_text(f"Echo notebook {session.server_name} of {hub_name}")

    # The end: back at the seat's page, sign out; the desktop stops and the next person signs in.
    page.goto(live_server.url + "/kiosk/")
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url(live_server.url + "/login/?next=/kiosk/")
    expect(page.get_by_label("Username")).to_be_visible()
    deadline = time.monotonic() + 60
    while NotebookSession.objects.get(pk=session.pk).status != NotebookStatus.STOPPED:
        assert time.monotonic() < deadline, "the desktop did not stop"
        time.sleep(0.3)
    assert session.server_name not in hub_servers(echo_hub, hub_username(session.user))
