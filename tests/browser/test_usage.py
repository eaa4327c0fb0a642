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
        ("alice", "My usage", "/usage/", "Week,GPU-hours"),
        ("teach", "Course usage", "/usage/courses/", "Person,GPU-hours,Idle GPU-hours"),
        ("boss", "Lab usage", "/usage/lab/", "Course,GPU-hours"),
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


def test_a_teacher_reads_a_tiny_course_figure_on_an_honest_chart(live_server, page, frozen_now, lab):
    """A student's 33 seconds for the course, and a notebook of her own: the bar is small, its label says minutes,
    the columns are named for people, and the download says what and when."""
    import datetime as dt

    from tests.labs.usage.conftest import entry

    frozen_now(lab.now)
    g1, g2, _ = lab.gpus
    monday = lab.now - dt.timedelta(days=2, hours=12)
    entry(lab.alice, g1, monday, monday + dt.timedelta(seconds=33), course=lab.course)  # 0.009 GPU-hours
    entry(lab.alice, g2, monday, monday + dt.timedelta(hours=3), kind="notebook")  # hers, no course
    sign_in(page, live_server.url, "teach")
    page.goto(live_server.url + "/usage/courses/?course=DL-101&from=2026-03-09&to=2026-03-11")
    students = page.locator('table[data-table="students"]')
    expect(students.locator("thead")).to_have_text("PersonGPU-hoursIdle GPU-hours")
    expect(students.locator("tbody tr", has_text="alice")).to_contain_text("0.0092")  # not her 3 h notebook
    bar = page.locator("svg.usage-chart g.bar").last
    expect(bar.locator("text.usage-value")).to_have_text("0.6 min")
    assert float(bar.locator("rect").get_attribute("height")) < 5
    page.screenshot(path="/work/wt/screens/course_usage_after.png", full_page=True)
    with page.expect_download() as download_info:
        page.get_by_test_id("csv").first.click()
    assert download_info.value.suggested_filename == "usage-DL-101-students-2026-03-09_2026-03-11.csv"


def test_the_lab_page_fits_a_few_screens_with_its_labels_whole(live_server, page, frozen_now, lab):
    """Twenty nodes and people used in a window: the long tables fold, the chart's labels are not cut."""
    import datetime as dt

    from tests.factories import NodeFactory
    from tests.labs.usage.conftest import entry

    frozen_now(lab.now)
    for n in range(4, 24):
        gpu = NodeFactory(name=f"gpu{n:02d}").gpus.first()
        person = UserFactory(username=f"user{n:02d}")
        entry(person, gpu, lab.now - dt.timedelta(hours=n), lab.now - dt.timedelta(hours=1))
    entry(lab.alice, lab.gpus[0], lab.now - dt.timedelta(hours=30), lab.now - dt.timedelta(hours=28), course=lab.course)
    UserFactory(username="boss", role="admin")
    sign_in(page, live_server.url, "boss")
    page.goto(live_server.url + "/usage/lab/?from=2026-03-09&to=2026-03-11")
    labels = page.locator("svg.usage-chart").first.locator("text.usage-label").all_text_contents()
    assert "personal" in labels and "DL-101" in labels
    expect(page.get_by_test_id("fold-nodes")).not_to_have_attribute("open", "")
    page.screenshot(path="/work/wt/screens/lab_usage_after.png", full_page=True)
    assert page.evaluate("() => document.documentElement.scrollHeight") < 2600
