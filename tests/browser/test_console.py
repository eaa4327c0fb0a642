"""The admin's daily node work in the portal: cordon a node with a reason from the operations console, read what
it will do first, and see the node cordoned, with the reason, on the live grid; never through /admin/."""

from pathlib import Path

import pytest
from playwright.sync_api import expect

from labs.inventory import demo_specs
from labs.models import Node
from labs.services import inventory_sync
from tests.factories import PASSWORD, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
# Before/after pictures of the console for the note (test-artifacts/ holds every test's last page too).
SCREENS = Path(__file__).resolve().parents[2] / "test-artifacts" / "console"


def sign_in(page, base, username):
    page.goto(base + "/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()


def test_admin_cordons_a_node_with_a_reason_and_the_grid_says_why(live_server, page):
    inventory_sync(specs=demo_specs(6), source="demo")
    UserFactory(username="ada", role="admin")
    SCREENS.mkdir(parents=True, exist_ok=True)
    visited = []
    page.on("framenavigated", lambda frame: visited.append(frame.url))

    sign_in(page, live_server.url, "ada")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Operations").click()
    expect(page.get_by_role("heading", name="Operations console")).to_be_visible()
    page.get_by_role("navigation", name="Operations console").get_by_role("link", name="Nodes").click()
    row = page.locator('tr[data-node="gpu03"]')
    expect(row).to_contain_text("Ready")
    page.screenshot(path=str(SCREENS / "console_nodes_before_cordon.png"), full_page=True)

    row.get_by_role("link", name="Cordon…").click()
    expect(page.get_by_role("heading", name="Cordon gpu03")).to_be_visible()
    expect(page.get_by_test_id("what-happens")).to_contain_text(
        "Nothing is stopped: what runs there now keeps running."
    )
    expect(page.get_by_test_id("nothing-running")).to_be_visible()
    page.get_by_label("Why").fill("Fan noise, a new fan comes on Monday")
    page.screenshot(path=str(SCREENS / "console_cordon_confirmation.png"), full_page=True)
    page.get_by_role("button", name="Cordon gpu03").click()

    expect(page.get_by_role("status")).to_contain_text("gpu03 is cordoned: Fan noise, a new fan comes on Monday")
    expect(page.locator('tr[data-node="gpu03"]')).to_contain_text("Fan noise, a new fan comes on Monday")
    page.screenshot(path=str(SCREENS / "console_nodes_after_cordon.png"), full_page=True)
    node = Node.objects.get(name="gpu03")
    assert (node.status, node.status_reason) == ("cordoned", "Fan noise, a new fan comes on Monday")

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Live GPUs").click()
    card = page.get_by_test_id("gpu-gpu03-0")
    expect(card.locator('[data-field="state"]')).to_have_text("cordoned")
    expect(card.locator('[data-field="node_reason"]')).to_have_text("Fan noise, a new fan comes on Monday")
    expect(page.get_by_test_id("gpu-gpu02-0").locator('[data-field="node_reason"]')).to_be_hidden()
    page.screenshot(path=str(SCREENS / "grid_after_cordon.png"), full_page=True)
    assert not [url for url in visited if "/admin/" in url], visited
