"""The Content-Security-Policy in the browser: every page passes it, and the watch in conftest.py catches a breach.

Every browser test's `page` fails on a violation (conftest.watch_csp); here each page of the portal is opened per
role under the real policy, the admin console's pages too, and the watch is shown to fail on an inline script.
"""

import re

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


def test_a_data_confirm_form_asks_first(live_server, page):
    """data-confirm (static/js/portal.js) replaced the inline onsubmit/onclick handlers: Cancel stops the form."""
    UserFactory(username="csp-confirm", role="student")
    sign_in(page, live_server.url, "csp-confirm")
    page.goto(live_server.url + "/account/")
    page.evaluate(
        """() => {
        const form = document.createElement("form");
        form.method = "get"; form.action = "/lab/nodes/"; form.dataset.confirm = "Really?";
        form.innerHTML = '<button type="submit" id="probe">Go</button>';
        document.querySelector("main").append(form);
    }"""
    )
    asked = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    page.locator("#probe").click()
    expect(page).to_have_url(live_server.url + "/account/")
    assert asked == ["Really?"]
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#probe").click()
    expect(page).to_have_url(re.compile(r"/lab/nodes/\??$"))  # a GET form with no fields: "?" at the end


def test_account_page_tokens_and_sign_out_everywhere(live_server, page):
    UserFactory(username="csp-account", role="teacher")
    sign_in(page, live_server.url, "csp-account")
    page.goto(live_server.url + "/account/")
    expect(page.get_by_test_id("no-api-tokens")).to_be_visible()
    page.get_by_label("What is it for?").fill("laptop")
    page.get_by_label("Works for").select_option("30")
    page.get_by_role("button", name="Make a new token").click()
    key = page.get_by_test_id("new-api-token").inner_text()
    assert key.startswith("glp_")
    page.goto(live_server.url + "/account/")
    table = page.get_by_test_id("api-tokens")
    expect(table).to_contain_text("laptop")
    expect(table).to_contain_text(key[:12])
    expect(page.get_by_test_id("new-api-token")).to_have_count(0)  # shown once
    table.get_by_role("link", name="Revoke…").click()
    expect(page.get_by_role("heading", name="Revoke this API token?")).to_be_visible()
    page.get_by_label("Yes, revoke this token.").check()
    page.get_by_test_id("confirm-revoke").click()
    expect(page.get_by_text("The API token laptop was revoked")).to_be_visible()
    expect(page.get_by_test_id("no-api-tokens")).to_be_visible()

    page.get_by_test_id("sign-out-everywhere").click()
    expect(page.get_by_role("heading", name="Sign out everywhere?")).to_be_visible()
    page.get_by_label("Sign me out on every device now.").check()
    page.get_by_test_id("confirm-sign-out-everywhere").click()
    expect(page).to_have_url(live_server.url + "/login/")
    expect(page.get_by_text("You were signed out everywhere")).to_be_visible()
