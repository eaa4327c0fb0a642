"""On a 390x844 phone: no page is wider than the screen (tables scroll inside their card), the header collapses to one
line behind a Menu button, and what a thumb presses is at least 44 px tall. Each role's pages, as the sweep sees them
(tests/browser/sweep.py: the header's links and the main detail pages)."""

from __future__ import annotations

import pytest

from tests.browser.sweep import (  # noqa: F401
    ROLES,
    VIEWPORTS,
    chromium,
    close_test_connections,
    pages_of,
    portal,
    signed_in,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db]

PHONE = VIEWPORTS["phone"]
COLLAPSED_HEADER_PX = 80  # the brand and the Menu button on one line; it was 200-277 px of the 844
SMALL_TARGETS = """() => [...document.querySelectorAll(
    "header a, header button, main button, main input:not([type=checkbox]):not([type=radio]), main select, .button-link"
  )].filter(e => e.offsetParent !== null && !e.closest(".table-scroll, .timeline"))
    .map(e => [e.outerHTML.slice(0, 90), Math.round(e.getBoundingClientRect().height)])
    .filter(([, height]) => height < 44)"""


@pytest.mark.parametrize("role", ROLES)
def test_no_page_is_wider_than_a_phone_and_the_header_collapses(portal, signed_in, role):  # noqa: F811
    page = signed_in(role)
    page.set_viewport_size(PHONE)
    too_wide, small = [], []
    for path in pages_of(page, portal, role):
        page.goto(portal.url + path)
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > PHONE["width"]:
            widest = page.evaluate(
                """() => [...document.querySelectorAll("main *")].filter(e => e.getBoundingClientRect().right > 391)
                  .slice(0, 3).map(e => e.outerHTML.slice(0, 80))"""
            )
            too_wide.append(f"{path}: {width} px wide, e.g. {widest}")
        header = page.locator("header.topbar")
        if not header.count():  # the API docs (Swagger UI) and the Django admin console have their own layout
            continue
        small += [f"{path}: {html} is {height} px tall" for html, height in page.evaluate(SMALL_TARGETS)]
        menu = header.get_by_role("button", name="Menu")
        assert header.bounding_box()["height"] <= COLLAPSED_HEADER_PX, f"{path}: the header is not collapsed"
        assert menu.get_attribute("aria-expanded") == "false"
        assert not header.get_by_role("navigation").is_visible()
    assert not too_wide, "Wider than a 390 px phone:\n" + "\n".join(too_wide)
    assert not small, "Touch targets under 44 px:\n" + "\n".join(small)


def test_the_menu_button_opens_and_closes_the_header_menu(portal, signed_in):  # noqa: F811
    page = signed_in("teacher")
    page.set_viewport_size(PHONE)
    page.goto(portal.url + "/jobs/")
    header = page.locator("header.topbar")
    menu = header.get_by_role("button", name="Menu")
    menu.click()
    assert menu.get_attribute("aria-expanded") == "true"
    nav = header.get_by_role("navigation")
    assert nav.is_visible() and nav.get_by_role("link", name="Reservations").is_visible()
    nav.get_by_role("link", name="Reservations").click()
    page.wait_for_url("**/lab/reservations/")
    assert page.locator("header.topbar").get_by_role("button", name="Menu").get_attribute("aria-expanded") == "false"
    menu = page.locator("header.topbar").get_by_role("button", name="Menu")
    menu.click()
    page.keyboard.press("Escape")  # closes it again, focus back on the button
    assert menu.get_attribute("aria-expanded") == "false"
    assert page.evaluate("document.activeElement.classList.contains('menu-toggle')")
    # On a desktop there is no Menu button: the links are all there.
    page.set_viewport_size(VIEWPORTS["desktop"])
    assert not menu.is_visible() and page.locator("header.topbar").get_by_role("navigation").is_visible()
