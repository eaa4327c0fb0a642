"""The reservation pages as people use them: book, see, cancel, approve; and what each role may see."""

import datetime as dt
import re

import pytest
from django.utils import timezone

from accounts.models import Quota
from labs.models import Reservation
from labs.reservations.services import NodeRequest, reservation_create
from tests.factories import PASSWORD, CourseFactory, NodeFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def lab():
    return [NodeFactory(name=f"gpu{n:02d}") for n in range(1, 7)]


def signed_in(client, username, role):
    user = UserFactory(username=username, role=role)
    assert client.login(username=username, password=PASSWORD)
    return user


def tomorrow():
    return timezone.localdate() + dt.timedelta(days=1)


def form(**overrides):
    return {
        "title": "DL-101 lab",
        "date": tomorrow().isoformat(),
        "start": "14:00",
        "end": "16:00",
        "mode": "count",
        "node_count": "4",
        **overrides,
    }


def test_teacher_books_from_the_form_and_sees_it_on_the_timeline(client, lab):
    signed_in(client, "ada", "teacher")
    page = client.get("/lab/reservations/new/")
    assert page.status_code == 200 and b"Availability" in page.content
    response = client.post("/lab/reservations/new/", form())
    assert response.status_code == 302
    reservation = Reservation.objects.get()
    assert timezone.localtime(reservation.starts_at).time() == dt.time(14)
    assert reservation.nodes.count() == 4
    timeline = client.get(response["Location"])
    html = timeline.content.decode()
    assert "is booked on 4 nodes" in html
    # four node rows, "my reservations" and the week's table
    assert html.count(f'data-reservation="{reservation.pk}"') == 4 + 1 + 1


def test_the_week_is_also_a_table_one_row_per_booking_with_its_nodes(client, lab):
    signed_in(client, "ada", "teacher")
    client.post("/lab/reservations/new/", form(node_count="2"))
    reservation = Reservation.objects.get()
    html = client.get(f"/lab/reservations/?week={tomorrow().isoformat()}").content.decode()
    table = html[html.index('data-testid="week-table"') :]
    table = table[: table.index("</details>")]
    assert "The week as a table" in table
    assert table.count(f'<tr data-reservation="{reservation.pk}">') == 1
    assert "DL-101 lab</a> — ada (yours)" in table and "<td>2: gpu01, gpu02</td>" in table
    # The one rule for time (accounts.timefmt): the lab's zone, a date-time then the end's clock time.
    assert f"{timezone.localtime(reservation.starts_at):%Y-%m-%d %H:%M}–16:00" in table


def test_named_and_all_modes_and_the_course(client, lab):
    ada = signed_in(client, "ada", "teacher")
    course = CourseFactory(code="DL-101")
    course.teachers.add(ada)
    client.post("/lab/reservations/new/", form(mode="named", nodes=["gpu02", "gpu05"], course="DL-101"))
    named = Reservation.objects.get()
    assert sorted(named.nodes.values_list("name", flat=True)) == ["gpu02", "gpu05"] and named.course == course
    client.post("/lab/reservations/new/", form(mode="all", start="17:00", end="18:00"))
    assert Reservation.objects.get(requested="all").nodes.count() == 6


@pytest.mark.parametrize(
    "overrides,status,says",
    [
        ({"end": "13:00"}, 400, "End after the start"),
        ({"mode": "named"}, 400, "Tick the nodes you want"),
        ({"title": ""}, 400, "This field is required"),
        ({"date": "2001-01-01"}, 400, "already begun"),
        ({"node_count": "7"}, 400, "Only 6 nodes are ready"),
        ({"course": "NOPE"}, 400, "Select a valid choice"),
    ],
)
def test_bad_input_shows_the_form_again_with_why_and_writes_nothing(client, lab, overrides, status, says):
    signed_in(client, "ada", "teacher")
    response = client.post("/lab/reservations/new/", form(**overrides))
    assert response.status_code == status
    assert says in response.content.decode()
    assert not Reservation.objects.exists()


def test_the_date_and_times_are_one_text_field_each_in_one_format(client, lab):
    """One Tab stop per field (a browser's date and time inputs take three), the format said next to it."""
    signed_in(client, "ada", "teacher")
    html = client.get("/lab/reservations/new/?date=2026-03-12&start=9:00").content.decode()
    assert 'type="date"' not in html and 'type="time"' not in html
    assert 'name="date" value="2026-03-12"' in html and 'aria-describedby="id_date_helptext"' in html
    assert '<span class="help" id="id_date_helptext">Year-month-day, e.g. 2026-03-12.</span>' in html
    assert '<span class="help" id="id_start_helptext">24-hour clock, e.g. 14:00.</span>' in html


@pytest.mark.parametrize("start,end", [("10:00", "12:00"), ("10.00", "12.00"), ("1000", "1200")])
def test_times_typed_in_24_hour_form_book_that_slot(client, lab, start, end):
    signed_in(client, "ada", "teacher")
    response = client.post("/lab/reservations/new/", form(start=start, end=end))
    assert response.status_code == 302, response.content.decode()
    booked = Reservation.objects.get()
    assert timezone.localtime(booked.starts_at).strftime("%H:%M") == "10:00"
    assert timezone.localtime(booked.ends_at).strftime("%H:%M") == "12:00"


@pytest.mark.parametrize("date", ["03/12/2026", "12/03/2026", "2026-3-12x"])
def test_a_date_in_another_format_is_refused_not_guessed(client, lab, date):
    signed_in(client, "ada", "teacher")
    response = client.post("/lab/reservations/new/", form(date=date))
    assert response.status_code == 400 and "Enter a valid date." in response.content.decode()
    assert not Reservation.objects.exists()


def test_a_conflict_offers_the_earliest_window_that_fits(client, lab):
    grace = UserFactory(username="grace", role="teacher")
    start = timezone.make_aware(dt.datetime.combine(tomorrow(), dt.time(14)))
    reservation_create(
        by=grace, title="CV lab", starts_at=start, ends_at=start + dt.timedelta(hours=2), nodes=NodeRequest(count=4)
    )
    signed_in(client, "ada", "teacher")
    response = client.post("/lab/reservations/new/", form(node_count="3"))
    assert response.status_code == 409
    html = response.content.decode()
    assert "Only 2 nodes are free in that window; you asked for 3." in html
    assert f"/lab/reservations/new/?date={tomorrow().isoformat()}&amp;start=16%3A00&amp;end=18%3A00" in html


def test_over_quota_is_refused_with_the_limit(client, lab):
    ada = signed_in(client, "ada", "teacher")
    Quota.objects.create(user=ada, reservation_max_hours=1)
    response = client.post("/lab/reservations/new/", form())
    assert response.status_code == 403
    assert "A reservation may last at most 1 hour; this one is 2." in response.content.decode()


def test_cancel_asks_for_confirmation_first(client, lab):
    ada = signed_in(client, "ada", "teacher")
    start = timezone.make_aware(dt.datetime.combine(tomorrow(), dt.time(14)))
    [r] = reservation_create(
        by=ada, title="Mine", starts_at=start, ends_at=start + dt.timedelta(hours=1), nodes=NodeRequest(count=1)
    )
    assert b"Cancel this reservation?" in client.get(f"/lab/reservations/{r.pk}/cancel/").content
    assert client.post(f"/lab/reservations/{r.pk}/cancel/").status_code == 400
    assert Reservation.objects.get().status == "approved"
    response = client.post(f"/lab/reservations/{r.pk}/cancel/", {"confirm": "yes"}, follow=True)
    assert "is cancelled" in response.content.decode()
    assert Reservation.objects.get().status == "cancelled"


def test_another_teacher_may_not_open_or_cancel_mine(client, lab):
    ada = UserFactory(username="ada", role="teacher")
    start = timezone.make_aware(dt.datetime.combine(tomorrow(), dt.time(14)))
    [r] = reservation_create(
        by=ada, title="Mine", starts_at=start, ends_at=start + dt.timedelta(hours=1), nodes=NodeRequest(count=1)
    )
    signed_in(client, "grace", "teacher")
    assert client.get(f"/lab/reservations/{r.pk}/").status_code == 403
    assert client.post(f"/lab/reservations/{r.pk}/cancel/", {"confirm": "yes"}).status_code == 403
    assert Reservation.objects.get().status == "approved"


@pytest.mark.parametrize("language,nodes_word", [("en", "Nodes"), ("pt-br", "Nós")])
def test_a_booking_page_shows_its_owner_the_booking_and_others_a_refusal_or_a_404(client, lab, language, nodes_word):
    ada = UserFactory(username="ada", role="teacher")
    start = timezone.make_aware(dt.datetime.combine(tomorrow(), dt.time(14)))
    [r] = reservation_create(
        by=ada, title="Deep nets", starts_at=start, ends_at=start + dt.timedelta(hours=1),
        nodes=NodeRequest(names=("gpu02", "gpu01")),
    )  # fmt: skip
    client.defaults["HTTP_ACCEPT_LANGUAGE"] = language
    client.force_login(ada)
    html = client.get(f"/lab/reservations/{r.pk}/").content.decode()
    assert "Deep nets" in html and "gpu01" in html and "gpu02" in html and nodes_word in html
    for missing in (r.pk + 1000, 2**70):  # none, and an id no row can have
        assert client.get(f"/lab/reservations/{missing}/").status_code == 404
    signed_in(client, "sam", "student")  # refused before learning whether it exists
    assert client.get(f"/lab/reservations/{r.pk}/").status_code == 403
    assert client.get(f"/lab/reservations/{r.pk + 1000}/").status_code == 403


def test_the_timeline_tells_students_only_what_they_may_know(client, lab):
    ada = UserFactory(username="ada", role="teacher")
    course = CourseFactory(code="DL-101")
    course.teachers.add(ada)
    start = timezone.make_aware(dt.datetime.combine(tomorrow(), dt.time(14)))
    reservation_create(
        by=ada,
        title="Secret project",
        starts_at=start,
        ends_at=start + dt.timedelta(hours=1),
        nodes=NodeRequest(names=("gpu01",)),
    )
    reservation_create(
        by=ada,
        title="DL-101 lab",
        starts_at=start,
        ends_at=start + dt.timedelta(hours=1),
        nodes=NodeRequest(names=("gpu02",)),
        course=course,
    )
    student = signed_in(client, "sam", "student")
    course.enrollments.create(user=student)
    html = client.get(f"/lab/reservations/?week={tomorrow().isoformat()}").content.decode()
    assert "Secret project" not in html and "Reserved" in html
    assert "DL-101 lab" in html  # their own course's session
    assert "Book nodes" not in html and "My reservations" not in html
    client.logout()
    signed_in(client, "grace", "teacher")
    html = client.get(f"/lab/reservations/?week={tomorrow().isoformat()}").content.decode()
    assert "Secret project" in html and "ada" in html


def test_the_timeline_spans_a_dst_week_by_real_hours(client, lab, settings):
    settings.TIME_ZONE = "Europe/Berlin"
    signed_in(client, "ada", "teacher")
    # The week of the last Sunday of October 2030 has 169 hours; Sunday starts at 6*24/169 of it.
    html = client.get("/lab/reservations/?week=2030-10-23").content.decode()
    assert "Week of 2030-10-21" in html
    assert f'left: {round(100 * 144 / 169, 3)}%">Sun 27' in html


def test_the_timeline_places_days_and_bookings_in_portuguese_too(client, lab):
    # CSS reads "left: 14.286%"; the Brazilian number format ("14,286") put every day and block at the week's start.
    ada = signed_in(client, "ada", "teacher")
    ada.language = "pt-br"
    ada.save(update_fields=["language"])
    client.post("/lab/reservations/new/", form(node_count="1", start="10:30", end="13:15"))
    html = client.get(f"/lab/reservations/?week={tomorrow().isoformat()}").content.decode()
    assert '<html lang="pt-br">' in html
    styles = re.findall(r'style="(left: [^"]*)"', html[html.index('data-testid="timeline"') :])
    positions = [float(value) for style in styles for value in re.findall(r"(?:left|width): ([^%;]*)%", style)]
    assert len(positions) >= 7 * 2 + 2 and any(value != int(value) for value in positions)


def test_admin_approves_from_the_approvals_page(client, lab):
    ada = UserFactory(username="ada", role="teacher")
    Quota.objects.create(user=ada, reservation_approval_nodes=2)
    start = timezone.make_aware(dt.datetime.combine(tomorrow(), dt.time(14)))
    [r] = reservation_create(
        by=ada, title="Big run", starts_at=start, ends_at=start + dt.timedelta(hours=1), nodes=NodeRequest(count=5)
    )
    signed_in(client, "root", "admin")
    page = client.get("/lab/reservations/approvals/").content.decode()
    assert "Big run" in page
    assert client.post(f"/lab/reservations/{r.pk}/decide/", {"decision": "maybe"}).status_code == 302
    assert Reservation.objects.get().status == "pending"
    response = client.post(f"/lab/reservations/{r.pk}/decide/", {"decision": "approve"}, follow=True)
    assert "Approved by root" in response.content.decode()
    assert Reservation.objects.get().status == "approved"
    assert ada.notices.filter(text__contains="was approved").exists()


def test_students_and_teachers_may_not_decide(client, lab):
    ada = UserFactory(username="ada", role="teacher")
    Quota.objects.create(user=ada, reservation_approval_nodes=2)
    start = timezone.make_aware(dt.datetime.combine(tomorrow(), dt.time(14)))
    [r] = reservation_create(
        by=ada, title="Big run", starts_at=start, ends_at=start + dt.timedelta(hours=1), nodes=NodeRequest(count=5)
    )
    client.login(username="ada", password=PASSWORD)
    assert client.post(f"/lab/reservations/{r.pk}/decide/", {"decision": "approve"}).status_code == 403
    assert Reservation.objects.get().status == "pending"


def test_every_node_row_has_the_days_lines_and_the_now_line_in_the_readers_language(client, lab):
    ada = signed_in(client, "ada", "teacher")
    ada.language = "pt-br"
    ada.save(update_fields=["language"])
    html = client.get("/lab/reservations/").content.decode()  # this week: the "now" line shows
    timeline = html[html.index('data-testid="timeline"') : html.index('data-testid="week-table"')]
    rows = timeline.split('class="tl-row" data-node=')[1:]
    assert len(rows) == len(lab)
    for row in rows:
        assert len(re.findall(r'<span class="tl-grid" style="left: \d+(?:\.\d+)?%"></span>', row)) == 7
        assert re.search(r'<span class="tl-now" style="left: \d+(?:\.\d+)?%" title="Agora"></span>', row)


def test_rows_and_the_table_are_built_in_the_readers_language_with_each_nodes_status(client, lab):
    # The rows and the table's rows are built in Python (labs/templatetags/timeline.py), not the template language.
    ada = signed_in(client, "ada", "teacher")
    ada.language = "pt-br"
    ada.save(update_fields=["language"])
    client.post("/lab/reservations/new/", form(mode="named", nodes=["gpu02", "gpu03"], title="Aula <b>"))
    reservation = Reservation.objects.get()
    lab[4].status, lab[5].status = "cordoned", "down"
    for node in lab[4:]:
        node.save(update_fields=["status"])
    html = client.get(f"/lab/reservations/?week={tomorrow().isoformat()}").content.decode()
    timeline = html[html.index('data-testid="timeline"') : html.index('data-testid="week-table"')]
    rows = dict(re.findall(r'<div class="tl-row" data-node="(gpu\d\d)">(.*?)</div></div>', timeline))
    assert sorted(rows) == [node.name for node in lab]
    assert '<div class="tl-node">gpu05 <span class="badge status-cordoned">Isolado</span>' in rows["gpu05"]
    assert '<div class="tl-node">gpu06 <span class="badge status-down">Fora do ar</span>' in rows["gpu06"]
    assert "badge" not in rows["gpu01"] and "badge" not in rows["gpu02"]
    assert [name for name, row in rows.items() if f'data-reservation="{reservation.pk}"' in row] == ["gpu02", "gpu03"]
    table = html[html.index('data-testid="week-table"') :]
    table = table[: table.index("</details>")]
    start = timezone.localtime(reservation.starts_at)
    assert (
        f'<tr data-reservation="{reservation.pk}"><td>{start:%d/%m/%Y %H:%M}–16:00</td>'
        f'<td><a href="/lab/reservations/{reservation.pk}/">Aula &lt;b&gt;</a> — ada (suas)</td>'
        "<td>2: gpu02, gpu03</td><td>Aprovada</td></tr>"
    ) in table


def test_a_booking_on_three_nodes_is_the_same_block_on_each_row(client, lab):
    # The blocks are built in Python (labs/templatetags/timeline.py): one link and one tooltip per booking.
    ada = signed_in(client, "ada", "teacher")
    ada.language = "pt-br"
    ada.save(update_fields=["language"])
    client.post("/lab/reservations/new/", form(node_count="3", title="Visão computacional <3"))
    reservation = Reservation.objects.get()
    html = client.get(f"/lab/reservations/?week={tomorrow().isoformat()}&highlight={reservation.pk}").content.decode()
    blocks = re.findall(
        rf'<a href="([^"]+)" class="([^"]+)" style="[^"]+" data-reservation="{reservation.pk}"'
        r' title="([^"]+)">([^<]+)</a>',
        html,
    )
    assert len(blocks) == 3 and len(set(blocks)) == 1
    href, classes, tooltip, text = blocks[0]
    assert href == f"/lab/reservations/{reservation.pk}/"
    assert classes == "tl-block res-approved mine highlight"
    assert text == "Visão computacional &lt;3"
    assert tooltip.startswith("Visão computacional &lt;3 — ada, ") and tooltip.endswith("(Aprovada)")
    client.logout()
    signed_in(client, "sam", "student")  # not theirs, not their course's: a plain block that opens nothing
    html = client.get(f"/lab/reservations/?week={tomorrow().isoformat()}").content.decode()
    assert (
        len(
            re.findall(
                rf'<span class="tl-block res-approved" style="[^"]+" data-reservation="{reservation.pk}"'
                r' title="Reserved, [^"]+ \(Approved\)">Reserved</span>',
                html,
            )
        )
        == 3
    )
    assert f'href="/lab/reservations/{reservation.pk}/"' not in html
    client.logout()
    signed_in(client, "root", "admin")  # an admin opens anyone's: the same link, without "mine"
    html = client.get(f"/lab/reservations/?week={tomorrow().isoformat()}").content.decode()
    assert html.count(f'<a href="/lab/reservations/{reservation.pk}/" class="tl-block res-approved" style=') == 3


@pytest.mark.parametrize("role", ["teacher", "admin", "student"])
def test_the_week_reads_the_same_few_queries_however_much_is_booked(client, lab, role, django_assert_max_num_queries):
    # Every teacher's browsing loads this page: its reads must not grow with the bookings (one per row, per owner).
    ada = UserFactory(username="ada", role="teacher")
    course = CourseFactory(code="DL-101")
    course.teachers.add(ada)
    signed_in(client, "viewer", role)
    start = timezone.make_aware(dt.datetime.combine(tomorrow(), dt.time(8)))
    url = f"/lab/reservations/?week={tomorrow().isoformat()}"

    def book(n, owner):
        at = start + dt.timedelta(hours=n)
        reservation_create(
            by=owner, title=f"Session {n}", starts_at=at, ends_at=at + dt.timedelta(minutes=50),
            nodes=NodeRequest(names=(f"gpu{n % 6 + 1:02d}", f"gpu{(n + 1) % 6 + 1:02d}")), course=course,
        )  # fmt: skip

    book(0, ada)
    with django_assert_max_num_queries(9) as few:  # session, person, bookings, nodes, banners (2), ...
        assert client.get(url).status_code == 200
    for n in range(1, 12):
        teacher = UserFactory(username=f"teacher{n}", role="teacher")
        course.teachers.add(teacher)
        book(n, teacher)
    with django_assert_max_num_queries(len(few.captured_queries)):
        html = client.get(url).content.decode()
    # What each role is shown is unchanged: staff see every title, a student outside the course only "Reserved".
    if role == "student":
        assert "Session 5" not in html and html.count(">Reserved</span>") == 24
    else:
        assert all(f"Session {n}</" in html for n in range(12))
