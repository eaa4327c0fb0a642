"""The invitation e-mail through a real SMTP server on loopback (aiosmtpd, `smtp_server`, tests/mail.py): a roster
import sends it through Django's SMTP backend, and its link signs the new person in, once."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from accounts.models import User
from tests.factories import PASSWORD, CourseFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_a_roster_invites_by_smtp_and_the_link_signs_in_once(
    client, smtp_server, settings, django_capture_on_commit_callbacks
):
    settings.PORTAL_BASE_URL = "https://gpulab.uni.example"
    settings.DEFAULT_FROM_EMAIL = "GPU Lab <gpulab@uni.example>"
    ada = UserFactory(username="ada", role="teacher", first_name="Ada", last_name="Lovelace")
    course = CourseFactory(code="DL-101", name="Deep Learning")
    course.teachers.add(ada)
    assert client.login(username="ada", password=PASSWORD)
    roster = "username,email,first_name,role\nzoe,zoe@uni.example,Zoë,student\nyan,yan@uni.example,Yan,assistant\n"
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/courses/DL-101/roster/import/", {"roster": roster})
    assert response.status_code == 302

    assert len(smtp_server.wait_for(2)) == 2
    by_rcpt = {rcpts[0]: message for rcpts, message in smtp_server.received}
    assert set(by_rcpt) == {"zoe@uni.example", "yan@uni.example"}
    message = by_rcpt["zoe@uni.example"]
    assert message["From"] == "GPU Lab <gpulab@uni.example>" and message["To"] == "zoe@uni.example"
    assert message["Subject"] == "GPU Lab: you are in DL-101"
    body = message.get_content()
    assert "Hello Zoë," in body and "Ada Lovelace added you to DL-101 (Deep Learning)" in body
    assert "Your username is: zoe" in body
    link = re.search(r"https://gpulab\.uni\.example(/invite/[\w-]+/)", body)
    assert link, body
    path = link.group(1)

    visitor = Client()
    assert "Welcome, Zoë" in visitor.get(path).content.decode()
    response = visitor.post(path, {"new_password1": "zoes-new-pass-42", "new_password2": "zoes-new-pass-42"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert "Hello, Zoë" in visitor.get("/").content.decode()
    assert Client().login(username="zoe", password="zoes-new-pass-42")
    assert Client().get(path).status_code == 404  # once
    assert User.objects.get(username="yan").enrollments.get().role == "assistant"


def test_a_roster_of_many_new_people_sends_their_invitations_over_one_connection(
    smtp_server, django_capture_on_commit_callbacks
):
    from accounts.rosters import roster_commit

    ada = UserFactory(username="ada", role="teacher")
    course = CourseFactory(code="DL-101")
    course.teachers.add(ada)
    roster = "username,email\n" + "".join(f"new{n},new{n}@uni.example\n" for n in range(5))
    with django_capture_on_commit_callbacks(execute=True):
        plan = roster_commit(course=course, by=ada, data=roster, link_base="https://gpulab.uni.example")
    assert len(plan.invite) == 5

    assert len(smtp_server.wait_for(5)) == 5
    assert sorted(rcpts[0] for rcpts, _ in smtp_server.received) == [f"new{n}@uni.example" for n in range(5)]
    assert smtp_server.connections == 1
