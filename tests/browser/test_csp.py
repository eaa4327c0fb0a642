"""The Content-Security-Policy in the browser: every page passes it, and the watch in conftest.py catches a breach.

Every browser test's `page` fails on a violation (conftest.watch_csp); here each page of the portal is opened per
role under the real policy, the admin console's pages too, and the watch is shown to fail on an inline script.
"""

import pytest
from playwright.sync_api import expect

from labs.inventory import demo_specs
from labs.services import inventory_sync
from tests.browser.conftest import watch_csp
from tests.factories import PASSWORD, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PAGES = {
    "student": [
        "/",
        "/lab/nodes/",
        "/lab/nodes/gpu01/",
        "/lab/gpus/",
        "/lab/reservations/",
        "/jobs/",
        "/jobs/new/",
        "/notebooks/",
        "/account/",
        "/account/password/",
    ],
    "teacher": [
        "/",
        "/lab/reservations/new/",
        "/notebooks/course/",
        "/notebooks/profiles/",
        "/notebooks/profiles/new/",
        "/account/",
    ],
    "admin": [
        "/",
        "/lab/reservations/approvals/",
        "/admin/",
        "/admin/accounts/user/",
        "/admin/accounts/user/add/",
        "/admin/labs/node/",
        "/account/",
    ],
}


def sign_in(page, base, username):
    page.goto(base + "/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()


@pytest.mark.parametrize("role", sorted(PAGES))
def test_every_page_runs_under_the_policy(live_server, browser, role):
    inventory_sync(specs=demo_specs(2), source="demo")
    UserFactory(username=f"csp-{role}", role=role, is_staff=role == "admin", is_superuser=role == "admin")
    context = browser.new_context()
    violations = watch_csp(context)
    page = context.new_page()
    page.set_default_timeout(10_000)
    try:
        sign_in(page, live_server.url, f"csp-{role}")
        for path in PAGES[role]:
            response = page.goto(live_server.url + path)
            assert response.status == 200, path
            policy = response.headers["content-security-policy"]
            assert "script-src 'self'" in policy and "unsafe-inline" not in policy.split("style-src-attr")[0], policy
            page.wait_for_load_state("load")
        assert violations == []
    finally:
        context.close()


def test_the_watch_catches_an_inline_script(live_server, browser):
    """A page under the portal's own policy with an inline script and an inline handler: both are reported."""
    UserFactory(username="csp-probe", role="student")
    context = browser.new_context()
    violations = watch_csp(context)
    page = context.new_page()
    try:
        policy = page.goto(live_server.url + "/login/").headers["content-security-policy"]
        body = "<html><body><script>document.title='ran'</script><button onclick=\"1\">x</button></body></html>"
        page.route(
            live_server.url + "/csp-probe/",
            lambda route: route.fulfill(
                status=200, body=body, headers={"Content-Type": "text/html", "Content-Security-Policy": policy}
            ),
        )
        page.goto(live_server.url + "/csp-probe/")
        assert page.title() != "ran"  # the inline script was blocked

        def reported(directive):
            return any(directive in v for v in violations)

        for _ in range(100):  # wait with a deadline: console messages arrive asynchronously
            if reported("script-src-elem") or reported("script-src"):
                break
            page.wait_for_timeout(50)
        assert reported("script-src"), violations
    finally:
        context.close()


def test_a_confirmation_asks_before_a_destructive_form(live_server, page):
    """data-confirm (static/js/portal.js) replaced the inline onsubmit: Cancel keeps the token, OK revokes it."""
    from portal.accounts.services import token_issue

    user = UserFactory(username="csp-confirm", role="student")
    token_issue(user=user)
    sign_in(page, live_server.url, "csp-confirm")
    page.goto(live_server.url + "/account/")
    page.get_by_label("Scripts using it get 401 from now on.").check()
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.get_by_test_id("revoke-token").click()
    expect(page.get_by_test_id("api-token")).to_be_visible()
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_test_id("revoke-token").click()
    expect(page.get_by_text("Your API token was revoked")).to_be_visible()
