"""Work counts under the course it was booked to, or as the person's own ("personal"): never under every course the
person takes. A student of two courses with work booked to each and a notebook of their own."""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import timezone

from labs.models import Budget
from tests.factories import PASSWORD, EnrollmentFactory, UserFactory
from tests.labs.usage.conftest import HOUR, entry

pytestmark = pytest.mark.django_db
WINDOW = {"from": "2026-03-09", "to": "2026-03-11"}


def signed_in(user) -> Client:
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


@pytest.fixture
def two_courses(frozen_now, lab):
    """dana takes DL-101 and CV-201: 2 h booked to DL-101, 1 h to CV-201, 4 h of a whole GPU of her own."""
    frozen_now(lab.now)
    dana = UserFactory(username="dana")
    EnrollmentFactory(user=dana, course=lab.course)
    EnrollmentFactory(user=dana, course=lab.other_course)
    monday = timezone.make_aware(dt.datetime(2026, 3, 9))
    g1, g2, _ = lab.gpus
    entry(dana, g1, monday + 8 * HOUR, monday + 10 * HOUR, course=lab.course)
    entry(dana, g2, monday + 8 * HOUR, monday + 9 * HOUR, course=lab.other_course)
    entry(dana, g1, monday + 20 * HOUR, monday + 24 * HOUR, kind="notebook")  # her own, booked to no course
    return dana


def students(client, code) -> dict[str, float]:
    download = client.get("/usage/csv/course-students/", {"course": code, **WINDOW})
    rows = list(csv.reader(io.StringIO(b"".join(download.streaming_content).decode())))
    return {row[0]: float(row[1]) for row in rows[1:]}


def test_a_students_work_counts_under_the_course_it_was_booked_to_only(lab, two_courses):
    assert students(signed_in(lab.teacher), "DL-101")["dana"] == pytest.approx(2.0)
    assert students(signed_in(lab.other_teacher), "CV-201")["dana"] == pytest.approx(1.0)


def test_the_course_page_and_its_budget_agree(lab, two_courses):
    Budget.objects.create(
        name="DL-101 term",
        course=lab.course,
        gpu_hours=Decimal(100),
        starts_on=dt.date(2026, 2, 1),
        ends_on=dt.date(2026, 7, 31),
    )
    body = signed_in(lab.teacher).get("/usage/courses/", {"course": "DL-101"}).content.decode()  # the term so far
    # dana's 2 h booked to DL-101; never her 4 h notebook of her own.
    assert 'data-testid="total">2.00<' in body
    assert '<td class="num">2.0</td>' in body  # the budget's used GPU-hours: the same work


def test_the_lab_page_shows_personal_work_apart(lab, two_courses):
    admin = UserFactory(username="boss", role="admin")
    client = signed_in(admin)
    download = client.get("/usage/csv/lab-courses/", WINDOW)
    rows = list(csv.reader(io.StringIO(b"".join(download.streaming_content).decode())))
    hours = {row[0]: float(row[1]) for row in rows[1:]}
    assert hours == {"DL-101": pytest.approx(2.0), "CV-201": pytest.approx(1.0), "personal": pytest.approx(4.0)}
    assert "personal" in client.get("/usage/lab/", WINDOW).content.decode()


def test_a_page_download_says_what_and_when_with_human_column_names(lab, two_courses):
    response = signed_in(lab.teacher).get("/usage/csv/course-students/", {"course": "DL-101", **WINDOW})
    assert response["Content-Disposition"] == 'attachment; filename="usage-DL-101-students-2026-03-09_2026-03-11.csv"'
    assert b"".join(response.streaming_content).decode().splitlines()[0] == "Person,GPU-hours,Idle GPU-hours"
    # Without `to`, the window ends now (Wednesday 11 March): the name says so.
    mine = signed_in(two_courses).get("/usage/csv/my-weeks/", {"from": "2026-03-01"})
    assert mine["Content-Disposition"] == 'attachment; filename="usage-dana-weeks-2026-03-01_2026-03-11.csv"'


def test_the_api_csv_keeps_its_field_names(lab, two_courses):
    """API.md's contract: the API's CSV keeps its columns; only the pages' downloads speak to people."""
    client = signed_in(lab.teacher)
    response = client.get("/api/v1/usage/", {"course": "DL-101", **WINDOW}, HTTP_ACCEPT="text/csv")
    header = b"".join(response.streaming_content).decode().splitlines()[0]
    assert "gpu_hours" in header and "GPU-hours" not in header


def test_a_few_gpu_minutes_draw_a_small_bar_on_an_honest_scale(frozen_now, lab):
    from labs.usage.charts import bars

    frozen_now(lab.now)
    svg = str(bars([("2026-03-02", 0.0), ("2026-03-09", 0.009)], title="t"))
    heights = [float(h) for h in re.findall(r'class="bar">.*?height="([0-9.]+)"', svg)]
    assert heights[1] < 5  # of 180 px: the axis reaches at least one GPU-hour
    assert 'data-top="1"' in svg and ">0.5 min<" in svg and ">0.0<" not in svg
    assert re.findall(r'class="tick">.*?>([0-9.]+)</text>', svg) == ["0", "0.2", "0.4", "0.6", "0.8", "1"]
    labels = str(bars([("(no course)", 1.0), ("personal", 2.0)], title="t"))
    assert ">(no course)<" in labels and ">urse)<" not in labels


def test_the_lab_page_folds_its_long_tables(lab, two_courses):
    from tests.factories import NodeFactory

    for n in range(4, 20):  # 19 nodes, each used a little
        gpu = NodeFactory(name=f"gpu{n:02d}").gpus.first()
        entry(two_courses, gpu, lab.now - 2 * HOUR, lab.now - HOUR)
    body = signed_in(UserFactory(username="boss", role="admin")).get("/usage/lab/", WINDOW).content.decode()
    assert 'data-testid="fold-nodes"' in body and "Show the table (18 rows)" in body
    assert "<th>Person</th><th>GPU-hours</th>" in body and "gpu_hours" not in body


def test_a_budget_used_a_little_does_not_read_zero(lab, two_courses):
    Budget.objects.create(
        name="CV-201 term",
        course=lab.other_course,
        gpu_hours=Decimal(250),
        starts_on=dt.date(2026, 3, 10),
        ends_on=dt.date(2026, 7, 31),
    )
    tuesday = timezone.make_aware(dt.datetime(2026, 3, 10, 9))
    entry(two_courses, lab.gpus[2], tuesday, tuesday + dt.timedelta(seconds=33), course=lab.other_course)
    body = signed_in(lab.other_teacher).get("/usage/courses/", {"course": "CV-201"}).content.decode()
    budget = re.search(r"<tr>\s*<td>CV-201 term.*?</tr>", body, re.S).group(0)
    assert '<td class="num">0.01</td>' in budget  # 33 s of a GPU (budgets count to the hundredth), not "0.0"
