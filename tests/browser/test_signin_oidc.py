"""The university's sign-in in a browser, with nothing faked: a student presses "Sign in with Example University"
on the portal, signs in at a real OpenID Connect provider (oidc-provider-mock in its own process, PKCE enforced),
lands on the dashboard with the role and the course her groups give, and opens JupyterLab through a real
JupyterHub with no second prompt (IdP -> portal -> hub: the hub signs in through the portal's own provider)."""

from __future__ import annotations

from decimal import Decimal

import pytest
import requests
from playwright.sync_api import expect

from accounts.models import Enrollment, ExternalIdentity, Role, User
from labs.models import NotebookProfile, NotebookSession, NotebookStatus
from tests.browser.test_notebook_login import real_hub, worker  # noqa: F401 (fixtures)
from tests.factories import CourseFactory, NodeFactory
from tests.fakes.oidc_idp import MockIdP

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def idp(settings):
    provider = MockIdP()
    settings.OIDC_PROVIDER_URL = provider.url
    settings.OIDC_PROVIDER_NAME = "Example University"
    settings.OIDC_RP_CLIENT_ID = "gpu-portal"
    settings.OIDC_RP_CLIENT_SECRET = "portal-secret"
    settings.OIDC_DISCOVERY_CACHE_S = 0
    settings.LOCAL_LOGIN = "staff"
    settings.SIGNIN_ROLE_GROUPS = "lab-teachers=teacher,lab-admins=admin"
    yield provider
    provider.close()


def test_a_student_signs_in_at_the_university_and_opens_a_notebook_with_no_second_prompt(
    live_server,
    idp,
    real_hub,  # noqa: F811
    worker,  # noqa: F811
    page,
):
    course = CourseFactory(code="DL-101", name="Deep learning", term="2026W")
    profile = NotebookProfile.objects.create(
        slug="lab-quarter",
        name="DL-101 notebook",
        image="quay.io/jupyter/base-notebook:latest",
        gpu_share=Decimal("0.25"),
        roles=[],
    )
    profile.courses.add(course)
    NodeFactory(name="gpu01")
    idp.set_user(
        "ada-0001",
        {"preferred_username": "ada", "email": "ada@uni.example", "groups": ["course-dl101-2026w-students"]},
    )

    page.set_default_timeout(60_000)
    page.goto(live_server.url + "/login/")
    page.get_by_role("link", name="Sign in with Example University").click()
    # At the IdP: its own sign-in form (the mock's: the subject to sign in as).
    page.wait_for_url(f"{idp.url}/oauth2/authorize?**")
    assert "code_challenge_method=S256" in page.url
    page.locator("input[name=sub]").fill("ada-0001")
    page.get_by_role("button", name="Authorize").click()

    # Back at the portal, signed in: the dashboard with the course her group gives.
    page.wait_for_url(live_server.url + "/")
    expect(page.get_by_role("heading", name="Your courses")).to_be_visible()
    expect(page.get_by_text("Deep learning")).to_be_visible()
    ada = User.objects.get(username="ada")
    assert ada.role == Role.STUDENT and ExternalIdentity.objects.get(user=ada).subject == "ada-0001"
    assert Enrollment.objects.get(user=ada).course == course

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Notebooks").click()
    page.get_by_label("DL-101 notebook").check()
    page.get_by_role("button", name="Start").click()
    card = page.get_by_test_id("live-notebooks").get_by_test_id("notebook")
    open_link = card.get_by_role("link", name="Open JupyterLab")
    expect(open_link).to_be_visible(timeout=90_000)
    session = NotebookSession.objects.get(user=ada)
    assert session.status == NotebookStatus.READY

    # The hub sends the browser to the portal's /o/authorize/, which knows ada from the university's sign-in:
    # no form at the portal, none at the IdP.
    with page.context.expect_page() as opened:
        open_link.click()
    lab = opened.value
    lab.set_default_timeout(90_000)
    lab.wait_for_url(f"{real_hub.public_url}/user/u{ada.pk}/{session.server_name}/lab**", timeout=90_000)
    expect(lab.locator("#jp-main-dock-panel")).to_be_attached(timeout=90_000)
    assert lab.get_by_label("Password").count() == 0 and lab.locator("input[name=sub]").count() == 0
    hub_user = requests.get(
        f"{real_hub.api_url}/users/u{ada.pk}", headers={"Authorization": f"token {real_hub.token}"}, timeout=10
    ).json()
    assert hub_user["admin"] is False and session.server_name in hub_user["servers"]
    lab.close()


def test_when_the_university_is_down_people_read_why_and_staff_still_sign_in(live_server, settings, page):
    import socket

    from tests.factories import PASSWORD, UserFactory

    with socket.socket() as probe:  # a port nothing listens on: the IdP is down
        probe.bind(("127.0.0.1", 0))
        settings.OIDC_PROVIDER_URL = f"http://127.0.0.1:{probe.getsockname()[1]}"
    settings.OIDC_PROVIDER_NAME = "Example University"
    settings.OIDC_RP_CLIENT_ID, settings.OIDC_RP_CLIENT_SECRET = "gpu-portal", "portal-secret"
    settings.OIDC_DISCOVERY_CACHE_S = 0
    settings.LOCAL_LOGIN = "staff"
    UserFactory(username="root", role=Role.ADMIN)

    page.goto(live_server.url + "/login/")
    page.get_by_role("link", name="Sign in with Example University").click()
    expect(page.get_by_test_id("signin-failed")).to_contain_text(
        "The sign-in of Example University is not answering right now"
    )
    page.get_by_role("link", name="Back to the sign-in page").click()
    page.get_by_label("Username").fill("root")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(live_server.url + "/")
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()
