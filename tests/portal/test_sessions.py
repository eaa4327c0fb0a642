"""Sessions: a new session key at every sign-in, and "sign out everywhere" from the account page, which ends every
session of the person (browsers, the admin console) and revokes what the portal's OAuth provider gave the hub."""

from urllib.parse import urlencode

import pytest
from django.conf import settings
from django.contrib.sessions.models import Session
from django.test import Client
from oauth2_provider.models import AccessToken, RefreshToken

from accounts.services import token_issue
from tests.factories import PASSWORD, UserFactory
from tests.portal.test_oauth import hub_login, userinfo

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _hub_client():
    from portal.oauth.services import hub_client_sync

    return hub_client_sync()


def anonymous_session(client: Client) -> str:
    session = client.session
    session["seen"] = True  # an anonymous visitor with a session (say, a fixated one)
    session.save()
    client.cookies[settings.SESSION_COOKIE_NAME] = session.session_key
    return session.session_key


@pytest.mark.parametrize("path,expected", [("/login/", "/"), ("/admin/login/?next=/admin/", "/admin/")])
def test_signing_in_rotates_the_session_key(path, expected):
    UserFactory(username="ada", role="admin")
    client = Client()
    before = anonymous_session(client)
    response = client.post(path, {"username": "ada", "password": PASSWORD, "next": expected})
    assert response.status_code == 302 and response["Location"] == expected
    after = client.cookies[settings.SESSION_COOKIE_NAME].value
    assert after != before
    assert not Session.objects.filter(session_key=before).exists()  # the old key opens nothing
    fixated = Client()
    fixated.cookies[settings.SESSION_COOKIE_NAME] = before
    assert fixated.get("/account/").status_code == 302


def signed_in(user) -> Client:
    client = Client()
    assert client.post("/login/", {"username": user.username, "password": PASSWORD}).status_code == 302
    return client


@pytest.mark.parametrize("role", ["student", "teacher", "admin", "assistant"])
def test_sign_out_everywhere_ends_every_session_and_the_hubs_tokens_after_a_confirmation(role, user_of_role):
    ada = user_of_role(role)
    laptop, phone, bob = signed_in(ada), signed_in(ada), signed_in(UserFactory(username="bob"))
    hub = hub_login(laptop).json()  # the hub signed ada in through the portal
    bobs_hub = hub_login(bob).json()
    api_key = token_issue(user=ada)

    asked = laptop.get("/account/sign-out-everywhere/")
    assert asked.status_code == 200 and "Sign out everywhere?" in asked.content.decode()
    unconfirmed = laptop.post("/account/sign-out-everywhere/")
    assert unconfirmed.status_code == 400 and "Tick the box to confirm" in unconfirmed.content.decode()
    assert phone.get("/account/").status_code == 200  # nothing happened yet

    done = laptop.post("/account/sign-out-everywhere/", {"confirm": "yes"}, follow=True)
    assert done.redirect_chain[-1][0] == "/login/"
    assert "You were signed out everywhere" in done.content.decode()

    for client in (laptop, phone):
        response = client.get("/account/")
        assert response.status_code == 302 and response["Location"].startswith("/login/")
    assert userinfo(hub["access_token"]).status_code == 401
    assert not AccessToken.objects.filter(user=ada).exists()
    assert not RefreshToken.objects.filter(user=ada, revoked__isnull=True).exists()
    refreshed = Client().post(
        "/o/token/",
        urlencode(
            {
                "grant_type": "refresh_token",
                "refresh_token": hub["refresh_token"],
                "client_id": settings.HUB_OAUTH_CLIENT_ID,
                "client_secret": settings.HUB_OAUTH_CLIENT_SECRET,
            }
        ),
        content_type="application/x-www-form-urlencoded",
    )
    assert refreshed.status_code == 400  # the hub cannot renew its sign-in either

    # Bob is untouched; ada's API token too (the page says so); ada signs in again and can do it again.
    assert bob.get("/account/").status_code == 200 and userinfo(bobs_hub["access_token"]).status_code == 200
    assert Client().get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {api_key}").status_code == 200
    again = signed_in(ada)
    assert again.get("/account/").status_code == 200
    again.post("/account/sign-out-everywhere/", {"confirm": "yes"})
    assert again.get("/account/").status_code == 302


def test_sign_out_everywhere_needs_a_signed_in_person_and_the_csrf_token():
    ada = UserFactory(username="ada")
    anonymous = Client().post("/account/sign-out-everywhere/", {"confirm": "yes"})
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/login/")
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(ada)
    assert strict.post("/account/sign-out-everywhere/", {"confirm": "yes"}).status_code == 403
    assert strict.get("/account/").status_code == 200


@pytest.mark.parametrize("role", ["student", "teacher", "admin", "assistant"])
def test_sign_out_everywhere_ends_the_api_tokens_a_browser_session_made(role, user_of_role):
    """A stolen session mints a token on the account page; signing out everywhere ends it with the session, while
    the tokens the person made with the password (and an operator's) keep working."""
    ada = user_of_role(role)
    stolen, laptop = signed_in(ada), signed_in(ada)
    thiefs_key = stolen.post("/account/", {"name": "mine now"}).context["new_key"]
    scripts_key = (
        Client()
        .post("/api/v1/token/", {"username": ada.username, "password": PASSWORD}, content_type="application/json")
        .json()["token"]
    )
    operators_key = token_issue(user=ada)
    bobs_key = signed_in(UserFactory(username="bob")).post("/account/", {"name": "bob's"}).context["new_key"]

    def me(key):
        return Client().get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {key}")

    assert me(thiefs_key).status_code == 200
    done = laptop.post("/account/sign-out-everywhere/", {"confirm": "yes"}, follow=True)
    assert "1 API token made on your account page stopped working too." in done.content.decode()

    refused = me(thiefs_key)
    assert refused.status_code == 401
    assert refused.json()["detail"].startswith("This API token was revoked on ")
    assert me(scripts_key).status_code == 200 and me(operators_key).status_code == 200
    assert me(bobs_key).status_code == 200
    assert stolen.get("/account/").status_code == 302  # and the session itself is over


def test_a_token_made_in_a_session_of_an_earlier_generation_is_refused_even_unrevoked(user_of_role):
    """The generation a session-made token records is checked too: a sign-out everywhere that left such a token
    unrevoked (say, made in the instant between) still ends it."""
    from accounts.models import ApiToken
    from accounts.services import sessions_end_everywhere

    ada = user_of_role("student")
    key = signed_in(ada).post("/account/", {"name": "between"}).context["new_key"]
    sessions_end_everywhere(user=ada)
    ApiToken.objects.filter(user=ada).update(revoked_at=None)
    refused = Client().get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {key}")
    assert refused.status_code == 401
    assert "made in a browser session that was signed out everywhere" in refused.json()["detail"]
