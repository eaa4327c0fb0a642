"""Each role's usage page in Chromium: the chart is drawn with data, and a table downloads as CSV."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.factories import PASSWORD, UserFactory
from tests.labs.usage import conftest as usage_data

lab, known = usage_data.lab, usage_data.known  # the usage tests' known ledger, as fixtures here too

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def sign_in(page, base: str, username: str) -> None:
    page.goto(base + "/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()


@pytest.mark.parametrize(
    "who,link,path,header",
    [
        ("alice", "My usage", "/usage/", "week,gpu_hours"),
        ("teach", "Course usage", "/usage/courses/", "user,gpu_hours,idle_gpu_hours"),
        ("boss", "Lab usage", "/usage/lab/", "course,gpu_hours"),
    ],
)
def test_each_role_sees_a_chart_and_downloads_a_csv(live_server, page, frozen_now, lab, known, who, link, path, header):
    frozen_now(lab.now)
    UserFactory(username="boss", role="admin")
    sign_in(page, live_server.url, who)
    page.get_by_role("navigation", name="Main").get_by_role("link", name=link).click()
    expect(page).to_have_url(live_server.url + path)
    page.get_by_label("From").fill("2026-03-09")
    page.get_by_label("To (included)").fill("2026-03-11")
    page.get_by_role("button", name="Show").click()
    chart = page.locator("svg.usage-chart").first
    expect(chart).to_be_visible()
    assert page.locator("svg.usage-chart g.bar rect").count() > 0
    heights = [
        float(h)
        for h in page.locator("svg.usage-chart g.bar rect").evaluate_all("r => r.map(e => e.getAttribute('height'))")
    ]
    assert max(heights) > 0
    total = float(page.get_by_test_id("total").first.inner_text())
    assert total > 0
    with page.expect_download() as download_info:
        page.get_by_test_id("csv").first.click()
    text = download_info.value.path().read_text(encoding="utf-8")
    assert text.splitlines()[0] == header
    assert len(text.splitlines()) > 1
