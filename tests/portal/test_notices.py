"""Notices: what the portal tells a person (e.g. "your notebook will be stopped") shows on their dashboard."""

import pytest

from accounts.models import Notice
from accounts.services import notice_send
from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db


def test_a_notice_shows_on_the_dashboard_until_dismissed(client):
    sam = UserFactory(username="sam")
    told = notice_send(user=sam, text="Your notebook on gpu03 will be stopped at 14:00.", ref="n:1", level="warning")
    assert told == 1 and notice_send(user=sam, text="again", ref="n:1") == 0  # once per ref
    client.login(username="sam", password=PASSWORD)
    page = client.get("/").content.decode()
    assert "Your notebook on gpu03 will be stopped at 14:00." in page
    notice = Notice.objects.get()
    assert client.post(f"/notices/{notice.pk}/dismiss/").status_code == 302
    assert "will be stopped" not in client.get("/").content.decode()


def test_nobody_dismisses_another_persons_notice(client):
    sam = UserFactory(username="sam")
    notice_send(user=sam, text="For Sam only.")
    UserFactory(username="eve")
    client.login(username="eve", password=PASSWORD)
    assert "For Sam only." not in client.get("/").content.decode()
    assert client.post(f"/notices/{Notice.objects.get().pk}/dismiss/").status_code == 404  # not hers to see
    assert Notice.objects.get().read_at is None


@pytest.mark.parametrize("role,status", [("anonymous", 302), ("student", 404), ("teacher", 404), ("admin", 404)])
def test_dismiss_is_post_only_and_needs_sign_in(browser_client, role, status):
    """A notice that is not yours (here: none at all) is not found, as everywhere."""
    client = browser_client(role)
    response = client.post("/notices/1/dismiss/")
    assert response.status_code == status
    if role == "anonymous":
        assert "/login/" in response["Location"]
    else:
        assert client.get("/notices/1/dismiss/").status_code == 405


def test_teachers_see_their_reservations_and_admins_the_approvals_on_the_dashboard(client):
    UserFactory(username="ada", role="teacher")
    client.login(username="ada", password=PASSWORD)
    page = client.get("/").content.decode()
    assert "Your reservations" in page and "Nothing booked." in page
