"""Sign out everywhere reaches the hub: a person signed in to a real JupyterHub through the portal is sent to sign in
again once the portal has revoked the hub's tokens (the hub keeps them as auth state: JUPYTERHUB_CRYPT_KEY, and
asks the portal again every HUB_AUTH_REFRESH_AGE_S seconds)."""

from __future__ import annotations

import secrets
import time

import pytest
from playwright.sync_api import expect

from labs.notebooks.localhub import LocalHub
from portal.oauth.services import hub_client_sync
from tests.factories import PASSWORD, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def hub(live_server, settings):
    env = {"JUPYTERHUB_CRYPT_KEY": secrets.token_hex(32), "HUB_AUTH_REFRESH_AGE_S": "1"}
    hub = LocalHub(spawner="echo", portal_url=live_server.url, env=env)
    hub.start(timeout=120)
    settings.NOTEBOOKS_HUB_API_URL, settings.NOTEBOOKS_HUB_PUBLIC_URL = hub.api_url, hub.public_url
    hub_client_sync()
    yield hub
    hub.close()


def test_after_sign_out_everywhere_the_hub_asks_the_portal_again(live_server, hub, page):
    UserFactory(username="sam")
    page.goto(live_server.url + "/login/")
    page.get_by_label("Username").fill("sam")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()

    # One sign-in: the hub lets sam in through the portal without a prompt.
    page.goto(hub.public_url + "/hub/token")
    expect(page).to_have_url(hub.public_url + "/hub/token")

    page.goto(live_server.url + "/account/sign-out-everywhere/")
    page.get_by_label("Sign me out on every device now.").check()
    page.get_by_role("button", name="Sign out everywhere").click()
    expect(page).to_have_url(live_server.url + "/login/")

    # The hub's own cookie still stands until it next asks the portal (every second here): then it sends sam to
    # the portal, which has no session for sam any more.
    deadline = time.monotonic() + 30
    while True:
        page.goto(hub.public_url + "/hub/token")
        if page.url.startswith(live_server.url + "/login/"):
            break
        assert time.monotonic() < deadline, f"the hub still let sam in: {page.url}\n{hub.log_tail()}"
        page.wait_for_timeout(500)
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
