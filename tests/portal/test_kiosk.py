"""The kiosk page (/kiosk/): a lab machine's seat signs a person in, starts their Desktop profile and signs out.

No hub runs here (the pass is left unexecuted, as in tests/notebooks/test_pages.py): sessions are made in each
state; tests/browser/test_kiosk.py drives the whole path against the local hub.
"""

from __future__ import annotations

import pytest

from labs.models import NotebookSession, NotebookStatus
from tests.notebooks.test_pages import make_profile, make_session, signed_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def desktop():
    return make_profile("desktop", name="Desktop", roles=("student", "teacher"))


def test_the_seat_sends_the_anonymous_to_sign_in_and_back(client):
    response = client.get("/kiosk/")
    assert response.status_code == 302 and response["Location"] == "/login/?next=/kiosk/"


def test_start_queues_the_desktop_profile_once(client, desktop):
    sam = signed_in(client, "sam", "student")
    page = client.get("/kiosk/").content.decode()
    assert "Start my desktop" in page and 'http-equiv="refresh"' not in page
    assert client.post("/kiosk/").status_code == 302
    assert client.post("/kiosk/").status_code == 302  # a second press starts nothing more
    (session,) = NotebookSession.objects.filter(user=sam)
    assert session.profile == desktop and session.status == NotebookStatus.QUEUED
    page = client.get("/kiosk/").content.decode()
    assert "Your desktop is waiting for a GPU." in page and 'http-equiv="refresh" content="3"' in page
    assert "Start my desktop" not in page


def test_a_ready_desktop_is_linked_at_its_desktop_path(client, desktop):
    sam = signed_in(client, "sam", "student")
    make_session(sam, desktop, NotebookStatus.READY)
    page = client.get("/kiosk/").content.decode()
    # The hub knows a person by their account's id (accounts.selectors.hub_username), never by their user name.
    assert f'href="http://127.0.0.1:8001/user/u{sam.pk}/nb/desktop/"' in page and "Open my desktop" in page
    assert 'http-equiv="refresh"' not in page


def test_a_person_without_the_profile_is_told_why(client):
    signed_in(client, "sam", "student")
    response = client.post("/kiosk/")
    assert response.status_code == 400
    assert "There is no profile “desktop” for you." in response.content.decode()
    assert not NotebookSession.objects.exists()


def test_a_profile_for_other_roles_is_not_started(client):
    make_profile("desktop", name="Desktop", roles=("teacher",))
    signed_in(client, "sam", "student")
    assert client.post("/kiosk/").status_code == 400
    assert not NotebookSession.objects.exists()


def test_sign_out_stops_the_desktop_and_signs_out_leaving_other_notebooks(client, desktop):
    sam = signed_in(client, "sam", "student")
    mine = make_session(sam, desktop, NotebookStatus.READY)
    other_notebook = make_session(sam, make_profile("pytorch", name="PyTorch"), NotebookStatus.READY)
    someone_else = make_session(signed_in(client, "eve", "student"), desktop, NotebookStatus.READY)
    client.login(username="sam", password="correct-horse-battery")
    response = client.post("/kiosk/sign-out/")
    assert response.status_code == 302 and response["Location"] == "/login/?next=/kiosk/"
    assert NotebookSession.objects.get(pk=mine.pk).status == NotebookStatus.STOPPING
    assert NotebookSession.objects.get(pk=other_notebook.pk).status == NotebookStatus.READY
    assert NotebookSession.objects.get(pk=someone_else.pk).status == NotebookStatus.READY
    assert client.get("/kiosk/")["Location"] == "/login/?next=/kiosk/"  # signed out


def test_sign_out_of_a_queued_desktop_takes_it_out_of_the_queue(client, desktop):
    sam = signed_in(client, "sam", "student")
    queued = make_session(sam, desktop)
    client.post("/kiosk/sign-out/")
    assert NotebookSession.objects.get(pk=queued.pk).status == NotebookStatus.STOPPED


def test_sign_out_is_post_only(client):
    assert client.get("/kiosk/sign-out/").status_code == 405
    assert client.post("/kiosk/sign-out/").status_code == 302  # nobody signed in: nothing to stop
