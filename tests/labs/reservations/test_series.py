"""A weekly series cancelled or shortened as a whole: one action, one confirmation (page and API), per role."""

import datetime as dt

import pytest
from rest_framework.test import APIClient

from accounts.models import Notice
from accounts.services import token_issue
from labs.models import Reservation, ReservationStatus
from tests.factories import PASSWORD, UserFactory
from tests.labs.reservations.test_services import book, lab, tomorrow_at  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture
def ada():
    return UserFactory(username="ada", role="teacher")


@pytest.fixture
def series(lab, ada):  # noqa: F811
    """Four weekly sessions on gpu01, the first tomorrow 14:00-16:00."""
    return book(ada, ["gpu01"], title="DL lab", repeat_weekly_until=(tomorrow_at(14) + dt.timedelta(weeks=3)).date())


def api(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)}")
    return client


def statuses(series) -> list[str]:
    return [Reservation.objects.get(pk=r.pk).status for r in series]


def test_the_whole_series_in_one_call(series, ada):
    response = api(ada).delete(f"/api/v1/reservations/{series[1].pk}/?series=all")
    assert response.status_code == 200
    body = response.json()
    assert body["series"] == str(series[0].series)
    assert [r["id"] for r in body["cancelled"]] == [r.pk for r in series]
    assert all(r["status"] == "cancelled" for r in body["cancelled"])
    assert statuses(series) == [ReservationStatus.CANCELLED] * 4
    again = api(ada).delete(f"/api/v1/reservations/{series[1].pk}/?series=all")
    assert again.status_code == 409 and again.json()["code"] == "conflict"


def test_shortened_from_a_session_keeps_the_earlier_ones(series, ada):
    response = api(ada).delete(f"/api/v1/reservations/{series[2].pk}/?series=from")
    assert response.status_code == 200
    assert [r["id"] for r in response.json()["cancelled"]] == [series[2].pk, series[3].pk]
    assert statuses(series) == [ReservationStatus.APPROVED] * 2 + [ReservationStatus.CANCELLED] * 2


def test_bad_scopes_and_single_reservations_are_400(series, ada, lab):  # noqa: F811
    assert api(ada).delete(f"/api/v1/reservations/{series[0].pk}/?series=some").status_code == 400
    single = book(ada, ["gpu02"])[0]
    response = api(ada).delete(f"/api/v1/reservations/{single.pk}/?series=all")
    assert response.status_code == 400 and response.json()["fields"] == {"series": ["Not a weekly series."]}
    assert Reservation.objects.get(pk=single.pk).status == ReservationStatus.APPROVED
    assert statuses(series) == [ReservationStatus.APPROVED] * 4


@pytest.mark.parametrize("role,code", [("student", 403), ("teacher", 403), ("admin", 200)])
def test_who_may_cancel_a_series_through_the_api(series, ada, role, code):
    response = api(UserFactory(username=f"{role}-s", role=role)).delete(
        f"/api/v1/reservations/{series[0].pk}/?series=all"
    )
    assert response.status_code == code
    expected = [ReservationStatus.CANCELLED] * 4 if code == 200 else [ReservationStatus.APPROVED] * 4
    assert statuses(series) == expected
    if role == "admin":  # the owner is told once, not once per session
        assert Notice.objects.filter(user=ada, text__contains="4 sessions of your weekly reservation").count() == 1


def test_anonymous_api_calls_are_401(series):
    assert APIClient().delete(f"/api/v1/reservations/{series[0].pk}/?series=all").status_code == 401


def test_the_cancel_page_offers_the_series_and_cancels_it_at_once(client, series):
    assert client.login(username="ada", password=PASSWORD)
    page = client.get(f"/lab/reservations/{series[1].pk}/cancel/").content.decode()
    assert "This session is part of a weekly series" in page
    assert "this session and the later ones (3 sessions)" in page and "the whole series (4 sessions left)" in page
    unconfirmed = client.post(f"/lab/reservations/{series[1].pk}/cancel/", {"scope": "all"})
    assert unconfirmed.status_code == 400 and statuses(series) == [ReservationStatus.APPROVED] * 4
    done = client.post(f"/lab/reservations/{series[1].pk}/cancel/", {"scope": "all", "confirm": "yes"}, follow=True)
    assert "4 sessions of “DL lab” are cancelled." in done.content.decode()
    assert statuses(series) == [ReservationStatus.CANCELLED] * 4


@pytest.mark.parametrize("role,code", [("student", 403), ("teacher", 403)])
def test_others_may_not_use_the_page(client, series, role, code):
    UserFactory(username=f"{role}-p", role=role)
    assert client.login(username=f"{role}-p", password=PASSWORD)
    response = client.post(f"/lab/reservations/{series[0].pk}/cancel/", {"scope": "all", "confirm": "yes"})
    assert response.status_code == code and statuses(series) == [ReservationStatus.APPROVED] * 4


def test_the_anonymous_are_sent_to_sign_in(client, series):
    response = client.post(f"/lab/reservations/{series[0].pk}/cancel/", {"scope": "all", "confirm": "yes"})
    assert response.status_code == 302 and response["Location"].startswith("/login/")
