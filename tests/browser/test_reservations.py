import datetime as dt

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from accounts.permissions import RESERVATIONS_STAFF_ONLY
from labs.inventory import demo_specs
from labs.models import Reservation
from labs.services import inventory_sync
from tests.factories import PASSWORD, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def sign_in(page, base, username):
    page.goto(base + "/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()


def test_teacher_books_four_nodes_tomorrow_sees_them_on_the_timeline_and_cancels(live_server, page):
    inventory_sync(specs=demo_specs(40), source="demo")
    UserFactory(username="ada", role="teacher")
    tomorrow = timezone.localdate() + dt.timedelta(days=1)

    sign_in(page, live_server.url, "ada")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Reservations").click()
    expect(page.get_by_role("heading", name="Reservations", exact=True)).to_be_visible()
    expect(page.get_by_text("You have nothing booked.")).to_be_visible()
    page.get_by_role("link", name="Book nodes").first.click()

    page.get_by_label("Title").fill("DL-101 lab session")
    page.get_by_label("Date").fill(tomorrow.isoformat())
    page.get_by_label("From", exact=True).fill("14:00")
    page.get_by_label("Until", exact=True).fill("16:00")
    expect(page.get_by_test_id("availability")).to_have_text("40 of 40 nodes free 14:00–16:00.")
    page.get_by_label("Any free nodes").check()
    page.get_by_label("How many").fill("4")
    page.get_by_role("button", name="Reserve").click()

    expect(page.get_by_role("status")).to_contain_text("“DL-101 lab session” is booked on 4 nodes")
    reservation = Reservation.objects.get()
    blocks = page.locator(f'.tl-block[data-reservation="{reservation.pk}"]')
    expect(blocks).to_have_count(4)
    expect(page.locator('.tl-row[data-node="gpu01"] .tl-block')).to_have_text("DL-101 lab session")
    expect(page.get_by_test_id("my-reservations")).to_contain_text("DL-101 lab session")
    assert timezone.localtime(reservation.starts_at).strftime("%Y-%m-%d %H:%M") == f"{tomorrow} 14:00"

    # The booking form now sees those four nodes as taken.
    page.goto(live_server.url + f"/lab/reservations/new/?date={tomorrow}&start=15:00&end=17:00")
    expect(page.get_by_test_id("availability")).to_have_text("36 of 40 nodes free 15:00–17:00.")
    page.get_by_label("These nodes").check()
    expect(page.locator('.node-check[data-node="gpu01"] input')).to_be_disabled()
    expect(page.locator('.node-check[data-node="gpu05"] input')).to_be_enabled()

    page.goto(live_server.url + "/lab/reservations/")
    page.get_by_test_id("my-reservations").get_by_role("link", name="Cancel…").click()
    expect(page.get_by_role("heading", name="Cancel this reservation?")).to_be_visible()
    page.get_by_label("Yes, give these nodes back.").check()
    page.get_by_role("button", name="Cancel the reservation").click()
    expect(page.get_by_role("status")).to_contain_text("“DL-101 lab session” is cancelled.")
    expect(page.get_by_text("You have nothing booked.")).to_be_visible()
    page.goto(live_server.url + f"/lab/reservations/?week={tomorrow}")
    expect(page.locator(".tl-block")).to_have_count(0)
    assert Reservation.objects.get().status == "cancelled"


def test_a_student_sees_the_timeline_but_no_booking(live_server, page):
    UserFactory(username="sam", role="student")
    sign_in(page, live_server.url, "sam")
    page.goto(live_server.url + "/lab/reservations/")
    expect(page.get_by_role("link", name="Book nodes")).to_have_count(0)
    page.goto(live_server.url + "/lab/reservations/new/")
    expect(page.get_by_test_id("forbidden-reason")).to_have_text(RESERVATIONS_STAFF_ONLY)


def test_a_keyboard_only_booking_books_the_slot_it_was_typed_for(live_server, page):
    """No mouse: Tab from the top of the page, one stop per field (the date and times are one text field each), the
    times in 24-hour form; the booking lands on the intended day and hours, not on an AM/PM or month/day guess."""
    inventory_sync(specs=demo_specs(6), source="demo")
    UserFactory(username="ada", role="teacher")
    day = timezone.localdate() + dt.timedelta(days=2)
    sign_in(page, live_server.url, "ada")
    page.goto(live_server.url + "/lab/reservations/new/")

    def focused() -> str:
        return page.evaluate("document.activeElement.name || document.activeElement.textContent.trim()")

    page.keyboard.press("Tab")
    assert focused() == "Skip to content"
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    assert focused() == "title"
    page.keyboard.type("Morning lab")
    for name, text in (("date", day.isoformat()), ("start", "9:00"), ("end", "11:30")):
        page.keyboard.press("Tab")
        assert focused() == name  # one Tab stop each
        page.keyboard.press("ControlOrMeta+a")
        page.keyboard.type(text)
    expect(page.get_by_test_id("availability")).to_have_text("6 of 6 nodes free 09:00–11:30.")
    page.keyboard.press("Tab")
    assert focused() == "mode"  # the radio group: "Any free nodes" is chosen
    page.keyboard.press("Tab")
    assert focused() == "node_count"
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.type("2")
    while focused() != "Reserve":
        page.keyboard.press("Tab")
    page.keyboard.press("Enter")

    expect(page.get_by_role("status")).to_contain_text("“Morning lab” is booked on 2 nodes")
    booked = Reservation.objects.get()
    assert timezone.localtime(booked.starts_at).strftime("%Y-%m-%d %H:%M") == f"{day} 09:00"
    assert timezone.localtime(booked.ends_at).strftime("%Y-%m-%d %H:%M") == f"{day} 11:30"
