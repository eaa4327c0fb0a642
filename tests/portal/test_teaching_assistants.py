"""Teaching assistants: what a student who assists a course may see and do, page by page and endpoint by endpoint.

DL-101 is taught by ada and assisted by tina (and tom); bo and cy are its students. CV-201 is taught by eve, with
dan its student. An assistant sees DL-101's students, the usage and notebooks they book to DL-101, and stops such a
notebook; not in CV-201, not another assistant's, never a student's work outside the course
(tests/portal/test_work_visibility.py), and never books nodes, writes profiles or quotas, or changes rosters.
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone
from django.utils.html import escape
from rest_framework.test import APIClient

from accounts.models import CourseRole, Enrollment, Notice
from accounts.permissions import (
    COURSE_NOTEBOOKS_STAFF_ONLY,
    PROFILES_STAFF_ONLY,
    RESERVATIONS_STAFF_ONLY,
    ROSTERS_TEACHERS_ONLY,
)
from accounts.selectors import courses_staffed_by
from accounts.services import token_issue
from labs.models import NotebookSession, NotebookStatus
from tests.factories import PASSWORD, AllocationFactory, CourseFactory, EnrollmentFactory, UserFactory
from tests.notebooks.test_pages import make_profile, make_session

pytestmark = pytest.mark.django_db


@pytest.fixture
def course():
    ada = UserFactory(username="ada", role="teacher")
    eve = UserFactory(username="eve", role="teacher")
    dl, cv = CourseFactory(code="DL-101"), CourseFactory(code="CV-201")
    dl.teachers.add(ada)
    cv.teachers.add(eve)
    people = {name: UserFactory(username=name, role="student") for name in ("tina", "tom", "bo", "cy", "dan")}
    EnrollmentFactory(user=people["tina"], course=dl, role=CourseRole.ASSISTANT)
    EnrollmentFactory(user=people["tom"], course=dl, role=CourseRole.ASSISTANT)
    EnrollmentFactory(user=people["bo"], course=dl)
    EnrollmentFactory(user=people["cy"], course=dl)
    EnrollmentFactory(user=people["dan"], course=cv)
    profile = make_profile()
    sessions = {  # each started under its course's profile: booked to the course
        "bo": make_session(people["bo"], profile, NotebookStatus.READY, course=dl),
        "dan": make_session(people["dan"], profile, NotebookStatus.READY, course=cv),
        "tom": make_session(people["tom"], profile, NotebookStatus.READY, course=dl),
    }
    return {"dl": dl, "cv": cv, "ada": ada, **people, "sessions": sessions}


def as_tina(client):
    assert client.login(username="tina", password=PASSWORD)
    return client


def api_as(username: str) -> APIClient:
    from accounts.models import User

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=User.objects.get(username=username))}")
    return client


def test_courses_staffed_by_holds_taught_and_assisted_courses(course):
    assert list(courses_staffed_by(course["tina"]).values_list("code", flat=True)) == ["DL-101"]
    assert list(courses_staffed_by(course["ada"]).values_list("code", flat=True)) == ["DL-101"]
    assert not courses_staffed_by(course["bo"]).exists()
    assert not courses_staffed_by(None).exists()


def test_the_course_notebooks_page_shows_the_assisted_course_its_students_and_their_usage(client, course, frozen_now):
    # Wednesday noon of this week: the 90 minutes below lie inside the GPU-hours week at any hour the suite runs
    # (at Monday 00:30 they would start in the week before: the monday-0000 clock drill found it).
    today = timezone.localdate()
    now = frozen_now(dt.datetime.combine(today - dt.timedelta(days=today.weekday() - 2), dt.time(12)))
    AllocationFactory(
        user=course["bo"], course=course["dl"], starts_at=now - dt.timedelta(minutes=90), ends_at=now, share=1
    )
    page = as_tina(client).get("/notebooks/course/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-course="DL-101"' in html and 'data-course="CV-201"' not in html
    assert "you assist" in html and "Teaching assistants: tina, tom" in html
    assert f'data-notebook-id="{course["sessions"]["bo"].pk}"' in html
    assert f'data-notebook-id="{course["sessions"]["dan"].pk}"' not in html
    assert f'data-notebook-id="{course["sessions"]["tom"].pk}"' not in html  # another assistant is no student
    assert ">1.5</td>" in html  # bo's GPU-hours this week
    assert "My courses' notebooks</a>" in html  # the menu leads there


def test_an_assistant_stops_a_students_notebook_of_the_course(client, course):
    session = course["sessions"]["bo"]
    as_tina(client)
    page = client.get(f"/notebooks/{session.pk}/stop/")
    assert page.status_code == 200 and "Stop this notebook?" in page.content.decode()
    response = client.post(f"/notebooks/{session.pk}/stop/", {"confirm": "yes"})
    assert response.status_code == 302 and response["Location"] == "/notebooks/course/"
    session.refresh_from_db()
    assert session.status == NotebookStatus.STOPPING and session.reason == "Stopped by tina."
    assert Notice.objects.filter(user=course["bo"], text__contains="was stopped by tina").exists()


@pytest.mark.parametrize("owner", ["dan", "tom"])
def test_not_a_notebook_of_another_course_nor_another_assistants(client, course, owner):
    session = course["sessions"][owner]
    as_tina(client)
    assert client.get(f"/notebooks/{session.pk}/stop/").status_code == 404
    assert client.post(f"/notebooks/{session.pk}/stop/", {"confirm": "yes"}).status_code == 404
    api = api_as("tina")
    assert api.get(f"/api/v1/notebooks/{session.pk}/").status_code == 404
    assert api.delete(f"/api/v1/notebooks/{session.pk}/").status_code == 404
    session.refresh_from_db()
    assert session.status == NotebookStatus.READY


def test_the_api_lists_and_stops_the_students_notebooks(course):
    api = api_as("tina")
    listed = {row["owner"] for row in api.get("/api/v1/notebooks/").json()}
    assert listed == {"bo"}
    assert api.get("/api/v1/notebooks/?mine=true").json() == []
    response = api.delete(f"/api/v1/notebooks/{course['sessions']['bo'].pk}/")
    assert response.status_code == 202 and response.json()["status"] == "stopping"


def test_stop_all_stops_the_students_not_the_assistants(client, course):
    as_tina(client)
    response = client.post("/notebooks/course/DL-101/stop/", {"confirm": "yes"})
    assert response.status_code == 302
    status = dict(NotebookSession.objects.values_list("user__username", "status"))
    assert status == {"bo": NotebookStatus.STOPPING, "dan": NotebookStatus.READY, "tom": NotebookStatus.READY}
    assert client.get("/notebooks/course/CV-201/stop/").status_code == 404


def test_an_assistant_books_no_nodes(client, course):
    as_tina(client)
    for path in ("/lab/reservations/new/",):
        response = client.get(path)
        assert response.status_code == 403 and escape(RESERVATIONS_STAFF_ONLY) in response.content.decode()
    assert client.get("/lab/reservations/").status_code == 200  # the week's timeline stays open to all
    api = api_as("tina")
    window = {"title": "x", "starts_at": "2030-01-07T14:00:00+01:00", "ends_at": "2030-01-07T16:00:00+01:00"}
    response = api.post("/api/v1/reservations/", {**window, "node_count": 1}, format="json")
    assert response.status_code == 403 and response.json()["detail"] == RESERVATIONS_STAFF_ONLY


def test_an_assistant_writes_no_profiles_quotas_or_rosters(client, course):
    as_tina(client)
    response = client.get("/notebooks/profiles/new/")
    assert response.status_code == 403 and escape(PROFILES_STAFF_ONLY) in response.content.decode()
    admin = client.get("/admin/accounts/quota/")
    assert admin.status_code == 302 and "/admin/login/" in admin["Location"]
    for path in ("/courses/DL-101/roster/", "/courses/DL-101/roster.csv"):
        response = client.get(path)
        assert response.status_code == 403 and escape(ROSTERS_TEACHERS_ONLY) in response.content.decode()
    response = api_as("tina").get("/api/v1/courses/DL-101/roster/")
    assert response.status_code == 403 and response.json()["code"] == "permission_denied"


def test_an_assistant_posting_a_roster_of_their_course_gets_403_and_nothing_changes(course):
    """Forbidden, not "no such course": the course is theirs to see, its roster not theirs to change."""
    before = set(Enrollment.objects.values_list("user__username", "course__code", "role"))
    tina = api_as("tina")
    for path in ("/api/v1/courses/DL-101/roster/", "/api/v1/courses/DL-101/roster/preview/"):
        response = tina.post(path, {"csv": "username\nbo\n"}, format="json")
        assert response.status_code == 403, (path, response.json())
        assert response.json()["code"] == "permission_denied" and response.json()["detail"] == ROSTERS_TEACHERS_ONLY
    assert set(Enrollment.objects.values_list("user__username", "course__code", "role")) == before


def test_a_student_gets_none_of_it(client, course):
    assert client.login(username="bo", password=PASSWORD)
    response = client.get("/notebooks/course/")
    assert response.status_code == 403 and escape(COURSE_NOTEBOOKS_STAFF_ONLY) in response.content.decode()
    assert 'href="/notebooks/course/"' not in client.get("/").content.decode()
    assert [row["owner"] for row in api_as("bo").get("/api/v1/notebooks/").json()] == ["bo"]


def test_me_and_the_dashboard_name_the_assistant_part(client, course):
    courses = api_as("tina").get("/api/v1/me/").json()["courses"]
    assert [(c["code"], c["role"]) for c in courses] == [("DL-101", "assistant")]
    html = as_tina(client).get("/").content.decode()
    assert "teaching assistant" in html and 'href="/notebooks/course/"' in html


def test_an_assistant_taken_out_of_the_course_loses_it_at_once(client, course):
    """Taken out of the course, the assistant loses the page at once."""
    Enrollment.objects.filter(user=course["tina"]).delete()
    as_tina(client)
    assert client.get("/notebooks/course/").status_code == 403
    assert client.get(f"/notebooks/{course['sessions']['bo'].pk}/stop/").status_code == 404


def test_the_admin_console_makes_a_teaching_assistant(client, course):
    UserFactory(username="root", role="admin")
    assert client.login(username="root", password=PASSWORD)
    cy = Enrollment.objects.get(user=course["cy"])
    response = client.post(
        "/admin/accounts/enrollment/", {"action": "make_assistants", "_selected_action": [cy.pk]}, follow=True
    )
    assert response.status_code == 200 and "now teaching assistants" in response.content.decode()
    cy.refresh_from_db()
    assert cy.role == CourseRole.ASSISTANT
    # A teacher cannot be a course's assistant: the console says why and changes nothing.
    ada_enrolled = EnrollmentFactory(user=course["ada"], course=course["cv"])
    response = client.post(
        "/admin/accounts/enrollment/",
        {"action": "make_assistants", "_selected_action": [ada_enrolled.pk]},
        follow=True,
    )
    assert "teaching assistants are students" in response.content.decode()
    ada_enrolled.refresh_from_db()
    assert ada_enrolled.role == CourseRole.STUDENT


def test_the_user_page_of_the_console_shows_and_sets_a_teaching_assistants_place(client, course):
    client.force_login(UserFactory(username="root", role="admin"))
    cy = course["cy"]
    place = Enrollment.objects.get(user=cy)
    Enrollment.objects.filter(pk=place.pk).update(source="idp")  # the groups gave it
    page = client.get(f"/admin/accounts/user/{cy.pk}/change/").content.decode()
    assert 'name="enrollments-0-role"' in page

    response = client.post(
        f"/admin/accounts/user/{cy.pk}/change/",
        {
            "username": "cy",
            "role": "student",
            "role_source": "manual",
            "first_name": "",
            "last_name": "",
            "email": cy.email,
            "is_active": "on",
            "last_login_0": "",
            "last_login_1": "",
            "quota-TOTAL_FORMS": "0",
            "quota-INITIAL_FORMS": "0",
            "enrollments-TOTAL_FORMS": "1",
            "enrollments-INITIAL_FORMS": "1",
            "enrollments-0-id": place.pk,
            "enrollments-0-user": cy.pk,
            "enrollments-0-course": course["dl"].pk,
            "enrollments-0-role": "assistant",
            "enrollments-0-source": "idp",
            "external_identities-TOTAL_FORMS": "0",
            "external_identities-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    place.refresh_from_db()
    assert (place.role, place.source) == (CourseRole.ASSISTANT, "manual")  # the admin's now: the groups leave it


def test_the_console_has_no_page_of_clear_text_drf_tokens(client):
    client.force_login(UserFactory(username="root", role="admin"))
    assert client.get("/admin/authtoken/tokenproxy/").status_code == 404
    assert "authtoken" not in client.get("/admin/").content.decode()
