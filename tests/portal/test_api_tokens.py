"""API tokens expire, die with the password, and can be revoked from the account page.

Finding 8 of the security review: tokens never expired, survived a password change, and /api/v1/token/ handed
out the same permanent token.
"""

import datetime as dt

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from rest_framework.authtoken.models import Token

from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "a-new-long-pass-4090"


def me(api, key):
    return api.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {key}")


def token_for_password(api, username, password=PASSWORD):
    return api.post("/api/v1/token/", {"username": username, "password": password}, format="json")


def age(key, days):
    Token.objects.filter(key=key).update(created=timezone.now() - dt.timedelta(days=days))


# --- Expiry ---------------------------------------------------------------------------------------


def test_an_expired_token_is_401_with_a_sentence_saying_to_get_a_new_one(api, settings):
    settings.API_TOKEN_TTL_DAYS = 30
    UserFactory(username="ada")
    key = token_for_password(api, "ada").json()["token"]
    assert me(api, key).status_code == 200

    age(key, days=31)

    response = me(api, key)
    assert response.status_code == 401
    body = response.json()
    assert body["code"] == "authentication_failed"
    assert "expired" in body["detail"] and "Get a new one" in body["detail"]
    assert response["WWW-Authenticate"] == "Token"


def test_the_token_endpoint_replaces_an_expired_token_and_says_when_the_new_one_expires(api, settings):
    settings.API_TOKEN_TTL_DAYS = 30
    UserFactory(username="ada")
    old = token_for_password(api, "ada").json()["token"]
    age(old, days=31)

    response = token_for_password(api, "ada")

    assert response.status_code == 200
    body = response.json()
    assert body["token"] != old
    expires_at = dt.datetime.fromisoformat(body["expires_at"])
    assert dt.timedelta(days=29, hours=23) < expires_at - timezone.now() <= dt.timedelta(days=30)
    assert me(api, body["token"]).status_code == 200
    assert me(api, old).status_code == 401


def test_the_same_token_comes_back_until_it_expires(api):
    UserFactory(username="ada")
    first, second = token_for_password(api, "ada").json(), token_for_password(api, "ada").json()
    assert first["token"] == second["token"]
    # Tokens expire by default (API_TOKEN_TTL_DAYS=90).
    expires_at = dt.datetime.fromisoformat(first["expires_at"])
    assert dt.timedelta(days=89) < expires_at - timezone.now() <= dt.timedelta(days=90)


def test_with_no_expiry_configured_a_token_lasts_until_revoked(api, settings):
    settings.API_TOKEN_TTL_DAYS = 0
    UserFactory(username="ada")
    body = token_for_password(api, "ada").json()
    assert body["expires_at"] is None
    age(body["token"], days=3650)
    assert me(api, body["token"]).status_code == 200


# --- A new password revokes the token -------------------------------------------------------------


def test_changing_the_password_on_the_page_revokes_the_token(api, client):
    user = UserFactory(username="ada")
    old = token_for_password(api, "ada").json()["token"]
    client.force_login(user)

    done = client.post(
        "/account/password/",
        {"old_password": PASSWORD, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
        follow=True,
    )

    assert me(api, old).status_code == 401
    assert "your API token revoked with it" in done.content.decode()
    assert token_for_password(api, "ada").status_code == 401  # the old password is gone too
    new = token_for_password(api, "ada", NEW_PASSWORD).json()["token"]
    assert new != old and me(api, new).status_code == 200


def test_a_wrong_old_password_on_the_page_keeps_the_token(api, client):
    user = UserFactory(username="ada")
    key = token_for_password(api, "ada").json()["token"]
    client.force_login(user)
    response = client.post(
        "/account/password/",
        {"old_password": "wrong", "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )
    assert response.status_code == 400
    assert me(api, key).status_code == 200


def test_an_admin_setting_a_password_in_the_console_revokes_the_token(api, client):
    UserFactory(username="ada")
    key = token_for_password(api, "ada").json()["token"]
    client.force_login(UserFactory(username="root", role="admin"))
    target = Token.objects.get(key=key).user

    response = client.post(
        f"/admin/accounts/user/{target.pk}/password/", {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD}
    )

    assert response.status_code == 302
    assert me(api, key).status_code == 401


def test_portal_user_with_a_password_revokes_the_token_and_prints_a_new_one(api, capsys):
    call_command("portal_user", "ada", "--role", "student", "--password", PASSWORD, "--token")
    old = capsys.readouterr().out.strip().splitlines()[-1]
    assert me(api, old).status_code == 200

    call_command("portal_user", "ada", "--role", "student", "--password", NEW_PASSWORD, "--token")
    new = capsys.readouterr().out.strip().splitlines()[-1]

    assert new != old
    assert me(api, old).status_code == 401
    assert me(api, new).status_code == 200


def test_portal_user_without_a_password_keeps_the_token(api, capsys):
    call_command("portal_user", "ada", "--role", "student", "--password", PASSWORD, "--token")
    first = capsys.readouterr().out.strip().splitlines()[-1]
    call_command("portal_user", "ada", "--role", "teacher", "--token")
    assert capsys.readouterr().out.strip().splitlines()[-1] == first
    assert me(api, first).json()["role"] == "teacher"


def test_signing_in_does_not_revoke_the_token(api, client):
    UserFactory(username="ada")
    key = token_for_password(api, "ada").json()["token"]
    assert client.login(username="ada", password=PASSWORD)
    assert me(api, key).status_code == 200


# --- The account page ------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["student", "teacher", "admin"])
def test_each_role_revokes_its_own_token_from_the_account_page_with_a_confirmation(api, client, role):
    user = UserFactory(username=f"{role}-1", role=role)
    other = UserFactory(username="someone-else")
    client.force_login(user)
    client.post("/account/")
    key = Token.objects.get(user=user).key
    other_key = token_for_password(api, "someone-else").json()["token"]

    unconfirmed = client.post("/account/", {"action": "revoke"})
    assert unconfirmed.status_code == 400
    assert "Tick the box to confirm" in unconfirmed.content.decode()
    assert me(api, key).status_code == 200

    done = client.post("/account/", {"action": "revoke", "confirm": "yes"}, follow=True)
    assert "Your API token was revoked" in done.content.decode()
    assert "You have no API token yet." in done.content.decode()
    assert me(api, key).status_code == 401
    assert me(api, other_key).status_code == 200  # only one's own
    assert Token.objects.filter(user=other).exists()

    client.post("/account/", {"action": "new"})
    assert me(api, Token.objects.get(user=user).key).status_code == 200


def test_the_account_page_shows_when_the_token_expires(client, settings):
    settings.API_TOKEN_TTL_DAYS = 30
    user = UserFactory()
    client.force_login(user)
    client.post("/account/")
    token = Token.objects.get(user=user)
    until = timezone.localtime(token.created + dt.timedelta(days=30)).strftime("%Y-%m-%d %H:%M")
    assert f"Valid until {until}" in client.get("/account/").content.decode()

    age(token.key, days=31)
    page = client.get("/account/").content.decode()
    assert "It expired on" in page and "make a new one" in page
    # An expired token is replaced without the confirmation a live one needs.
    client.post("/account/", {"action": "new"})
    assert Token.objects.get(user=user).key != token.key


def test_revoking_needs_a_signed_in_person_and_the_csrf_token(api):
    user = UserFactory(username="ada")
    key = token_for_password(api, "ada").json()["token"]

    anonymous = Client().post("/account/", {"action": "revoke", "confirm": "yes"})
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/login/")

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(user)
    assert strict.post("/account/", {"action": "revoke", "confirm": "yes"}).status_code == 403
    assert me(api, key).status_code == 200


def test_revoking_with_no_token_and_an_unknown_action_change_nothing(client):
    user = UserFactory()
    client.force_login(user)
    nothing = client.post("/account/", {"action": "revoke", "confirm": "yes"}, follow=True)
    assert "You have no API token to revoke." in nothing.content.decode()
    assert client.post("/account/", {"action": "delete-everything"}).status_code == 400
    assert not Token.objects.filter(user=user).exists()
