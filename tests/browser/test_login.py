import pytest
from playwright.sync_api import expect

from labs.inventory import demo_specs
from labs.services import inventory_sync
from tests.factories import PASSWORD, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_sign_in_wrong_then_right_see_dashboard_then_sign_out(live_server, page):
    inventory_sync(specs=demo_specs(40), source="demo")
    UserFactory(username="maria", role="student")

    page.goto(live_server.url + "/")
    expect(page).to_have_url(live_server.url + "/login/?next=/")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()

    page.get_by_label("Username").fill("maria")
    page.get_by_label("Password").fill("not-my-password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("Please enter a correct username and password")

    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(live_server.url + "/")
    expect(page.get_by_role("heading", name="Hello, maria")).to_be_visible()
    expect(page.get_by_test_id("meter-gpu-hours")).to_contain_text("0.0 / 20")
    expect(page.get_by_test_id("nodes-ready")).to_have_text("40")

    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(live_server.url + "/login/")
    page.goto(live_server.url + "/account/")
    expect(page).to_have_url(live_server.url + "/login/?next=/account/")


@pytest.mark.parametrize("role,heading", [("teacher", "Hello, t1"), ("admin", "Lab overview")])
def test_each_role_lands_on_its_dashboard(live_server, page, role, heading):
    UserFactory(username="t1" if role == "teacher" else "a1", role=role)
    page.goto(live_server.url + "/login/")
    page.get_by_label("Username").fill("t1" if role == "teacher" else "a1")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name=heading)).to_be_visible()
    admin_link = page.get_by_role("navigation", name="Main").get_by_role("link", name="Admin console")
    expect(admin_link).to_have_count(1 if role == "admin" else 0)
