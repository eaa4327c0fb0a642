"""API tokens: several per person, stored hashed, each with an optional expiry, revocable one by one from the
account page, all revoked by a new password; expired and revoked ones get 401 with a sentence saying why."""

import datetime as dt
import hashlib
import importlib

import pytest
from django.apps import apps
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from accounts.models import ApiToken
from accounts.services import token_authenticate
from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "a-new-long-pass-4090"


def me(api, key):
    return api.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {key}")


def token_for_password(api, username, password=PASSWORD, **extra):
    return api.post("/api/v1/token/", {"username": username, "password": password, **extra}, format="json")


def row(key) -> ApiToken:
    return ApiToken.objects.get(key_hash=hashlib.sha256(key.encode()).hexdigest())


# --- Expiry ---------------------------------------------------------------------------------------


def test_an_expired_token_is_401_with_a_sentence_saying_to_get_a_new_one(api):
    UserFactory(username="ada")
    key = token_for_password(api, "ada", expires_in_days=7).json()["token"]
    assert me(api, key).status_code == 200
    ApiToken.objects.filter(pk=row(key).pk).update(expires_at=timezone.now() - dt.timedelta(seconds=1))

    response = me(api, key)
    assert response.status_code == 401
    body = response.json()
    assert body["code"] == "authentication_failed"
    assert body["detail"].startswith("This API token expired on ") and "Make a new one" in body["detail"]
    assert response["WWW-Authenticate"] == "Token"


def test_the_token_endpoint_takes_an_expiry_within_the_labs_limit(api, settings):
    settings.API_TOKEN_TTL_DAYS = 30
    UserFactory(username="ada")
    body = token_for_password(api, "ada", name="nightly", expires_in_days=7).json()
    assert body["name"] == "nightly" and isinstance(body["id"], int)
    expires_at = dt.datetime.fromisoformat(body["expires_at"])
    assert dt.timedelta(days=6, hours=23) < expires_at - timezone.now() <= dt.timedelta(days=7)

    default = token_for_password(api, "ada").json()  # no expiry asked: the lab's default
    assert dt.timedelta(days=29, hours=23) < dt.datetime.fromisoformat(default["expires_at"]) - timezone.now()

    too_long = token_for_password(api, "ada", expires_in_days=31)
    assert too_long.status_code == 400
    assert too_long.json()["fields"] == {"expires_in_days": ["between 1 and 30 days"]}
    assert token_for_password(api, "ada", expires_in_days=0).status_code == 400
    assert token_for_password(api, "ada", expires_in_days="soon").status_code == 400
    assert ApiToken.objects.count() == 2  # nothing made by the refusals


def test_with_no_expiry_configured_a_token_lasts_until_revoked(api, settings):
    settings.API_TOKEN_TTL_DAYS = 0
    UserFactory(username="ada")
    body = token_for_password(api, "ada").json()
    assert body["expires_at"] is None
    ApiToken.objects.update(created_at=timezone.now() - dt.timedelta(days=3650))
    assert me(api, body["token"]).status_code == 200


# --- Many, hashed, last used ------------------------------------------------------------------------


def test_each_call_makes_a_new_token_stored_only_hashed_and_all_work(api):
    UserFactory(username="ada")
    first, second = token_for_password(api, "ada").json()["token"], token_for_password(api, "ada").json()["token"]
    assert first != second
    assert me(api, first).status_code == 200 and me(api, second).status_code == 200
    stored = list(ApiToken.objects.values_list("key_hash", "prefix"))
    assert all(first not in value and second not in value for pair in stored for value in pair)
    assert row(first).prefix == first[:12]


def test_one_person_holds_at_most_api_tokens_max(api, settings):
    settings.API_TOKENS_MAX = 2
    UserFactory(username="ada")
    assert [token_for_password(api, "ada").status_code for _ in range(2)] == [200, 200]
    refused = token_for_password(api, "ada")
    assert refused.status_code == 400 and "revoke one on your account page" in refused.json()["detail"]
    assert ApiToken.objects.count() == 2


def test_last_used_is_written_at_most_once_a_minute(api):
    UserFactory(username="ada")
    key = token_for_password(api, "ada").json()["token"]
    assert row(key).last_used_at is None
    start = timezone.now()
    token_authenticate(key, now=start)
    token_authenticate(key, now=start + dt.timedelta(seconds=30))
    assert row(key).last_used_at == start
    token_authenticate(key, now=start + dt.timedelta(seconds=61))
    assert row(key).last_used_at == start + dt.timedelta(seconds=61)


def test_unknown_malformed_and_inactive_keys_are_401(api):
    user = UserFactory(username="ada")
    key = token_for_password(api, "ada").json()["token"]
    assert me(api, "glp_not-a-token").json()["detail"] == "Invalid token."
    assert me(api, "x" * 200).status_code == 401
    user.is_active = False
    user.save()
    assert me(api, key).status_code == 401


# --- A new password revokes the tokens --------------------------------------------------------------


def test_changing_the_password_on_the_page_revokes_the_tokens(api, client):
    user = UserFactory(username="ada")
    old = token_for_password(api, "ada").json()["token"]
    client.force_login(user)

    done = client.post(
        "/account/password/",
        {"old_password": PASSWORD, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
        follow=True,
    )

    revoked = me(api, old)
    assert revoked.status_code == 401 and revoked.json()["detail"].startswith("This API token was revoked on ")
    assert "your API tokens revoked with it" in done.content.decode()
    assert token_for_password(api, "ada").status_code == 401  # the old password is gone too
    new = token_for_password(api, "ada", NEW_PASSWORD).json()["token"]
    assert me(api, new).status_code == 200


def test_a_wrong_old_password_on_the_page_keeps_the_tokens(api, client):
    user = UserFactory(username="ada")
    key = token_for_password(api, "ada").json()["token"]
    client.force_login(user)
    response = client.post(
        "/account/password/",
        {"old_password": "wrong", "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )
    assert response.status_code == 400
    assert me(api, key).status_code == 200


def test_an_admin_setting_a_password_in_the_console_revokes_the_tokens(api, client):
    target = UserFactory(username="ada")
    key = token_for_password(api, "ada").json()["token"]
    client.force_login(UserFactory(username="root", role="admin"))
    response = client.post(
        f"/admin/accounts/user/{target.pk}/password/", {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD}
    )
    assert response.status_code == 302
    assert me(api, key).status_code == 401


def test_portal_user_with_a_password_revokes_the_tokens_and_prints_a_new_one(api, capsys):
    call_command("portal_user", "ada", "--role", "student", "--password", PASSWORD, "--token")
    old = capsys.readouterr().out.strip().splitlines()[-1]
    assert me(api, old).status_code == 200

    call_command("portal_user", "ada", "--role", "student", "--password", NEW_PASSWORD, "--token")
    new = capsys.readouterr().out.strip().splitlines()[-1]

    assert new != old
    assert me(api, old).status_code == 401
    assert me(api, new).status_code == 200


def test_portal_user_without_a_password_keeps_the_tokens(api, capsys):
    call_command("portal_user", "ada", "--role", "student", "--password", PASSWORD, "--token")
    first = capsys.readouterr().out.strip().splitlines()[-1]
    call_command("portal_user", "ada", "--role", "teacher")
    assert me(api, first).json()["role"] == "teacher"


def test_signing_in_does_not_revoke_the_tokens(api, client):
    UserFactory(username="ada")
    key = token_for_password(api, "ada").json()["token"]
    assert client.login(username="ada", password=PASSWORD)
    assert me(api, key).status_code == 200


# --- The account page ------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["student", "teacher", "admin", "assistant"])
def test_each_role_lists_makes_and_revokes_one_of_its_tokens_with_a_confirmation(
    api, client, role, settings, user_of_role
):
    settings.API_TOKEN_TTL_DAYS = 90
    user = user_of_role(role)
    UserFactory(username="someone-else")
    client.force_login(user)
    assert "You have no API token." in client.get("/account/").content.decode()

    made = client.post("/account/", {"name": "laptop", "expires_in_days": "30"})
    key = made.context["new_key"]
    keep = client.post("/account/", {"name": "cluster", "expires_in_days": "90"}).context["new_key"]
    other_key = token_for_password(api, "someone-else").json()["token"]
    me(api, key)  # used once: the list says when

    page = client.get("/account/").content.decode()
    laptop = row(key)
    expires = timezone.localtime(laptop.expires_at).strftime("%Y-%m-%d %H:%M")
    used = timezone.localtime(laptop.last_used_at).strftime("%Y-%m-%d %H:%M")
    assert "laptop" in page and "cluster" in page and expires in page and used in page and key not in page

    asked = client.get(f"/account/tokens/{laptop.pk}/revoke/")
    assert asked.status_code == 200 and "Revoke this API token?" in asked.content.decode()
    unconfirmed = client.post(f"/account/tokens/{laptop.pk}/revoke/")
    assert unconfirmed.status_code == 400 and "Tick the box to confirm" in unconfirmed.content.decode()
    assert me(api, key).status_code == 200

    done = client.post(f"/account/tokens/{laptop.pk}/revoke/", {"confirm": "yes"}, follow=True)
    assert "The API token laptop was revoked" in done.content.decode()
    assert me(api, key).status_code == 401
    assert me(api, keep).status_code == 200 and me(api, other_key).status_code == 200  # only that one
    assert client.post(f"/account/tokens/{laptop.pk}/revoke/", {"confirm": "yes"}).status_code == 404  # gone
    theirs = row(other_key).pk
    assert client.get(f"/account/tokens/{theirs}/revoke/").status_code == 404
    assert client.post(f"/account/tokens/{theirs}/revoke/", {"confirm": "yes"}).status_code == 404
    assert me(api, other_key).status_code == 200


def test_the_account_page_refuses_a_lifetime_over_the_limit(client, settings):
    settings.API_TOKEN_TTL_DAYS = 30
    client.force_login(UserFactory())
    refused = client.post("/account/", {"expires_in_days": "365"})
    assert refused.status_code == 400 and "between 1 and 30 days" in refused.content.decode()
    assert client.post("/account/", {"expires_in_days": "soon"}).status_code == 400
    assert not ApiToken.objects.exists()


@pytest.mark.parametrize(
    ("ttl", "raw", "sentence"),
    [
        (30, "²", "Choose how long the token works from the list."),  # a digit to str.isdigit, not to int()
        (30, "-1", "Choose how long the token works from the list."),
        (0, "99999999999", "A token&#x27;s lifetime is between 1 and 3650 days."),  # no limit but the calendar's
        (0, "3651", "A token&#x27;s lifetime is between 1 and 3650 days."),
    ],
)
def test_the_account_page_refuses_a_lifetime_that_is_no_number_of_days_with_a_sentence(
    client, settings, ttl, raw, sentence
):
    settings.API_TOKEN_TTL_DAYS = ttl
    client.force_login(UserFactory())
    refused = client.post("/account/", {"name": "x", "expires_in_days": raw})
    assert refused.status_code == 400 and sentence in refused.content.decode()
    assert not ApiToken.objects.exists()


def test_revoking_needs_a_signed_in_person_and_the_csrf_token(api):
    user = UserFactory(username="ada")
    key = token_for_password(api, "ada").json()["token"]
    pk = row(key).pk

    anonymous = Client().post(f"/account/tokens/{pk}/revoke/", {"confirm": "yes"})
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/login/")

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(user)
    assert strict.post(f"/account/tokens/{pk}/revoke/", {"confirm": "yes"}).status_code == 403
    assert me(api, key).status_code == 200


def test_yesterdays_clear_text_tokens_are_carried_over_hashed(api, settings):
    """The migration: a rest_framework.authtoken Token keeps working as a hashed ApiToken with its expiry."""
    from rest_framework.authtoken.models import Token

    settings.API_TOKEN_TTL_DAYS = 90
    user = UserFactory(username="ada")
    old = Token.objects.create(user=user)
    migration = importlib.import_module("accounts.migrations.0006_api_tokens_and_session_generation")
    migration.carry_over_drf_tokens(apps, None)
    assert not Token.objects.exists()
    carried = row(old.key)
    assert carried.user == user and carried.expires_at == old.created + dt.timedelta(days=90)
    assert me(api, old.key).status_code == 200


def test_operators_tokens_are_not_capped(settings):
    from accounts.services import token_issue

    settings.API_TOKENS_MAX = 1
    user = UserFactory(username="ada")
    keys = {token_issue(user=user) for _ in range(3)}
    assert len(keys) == 3 and ApiToken.objects.filter(user=user, revoked_at__isnull=True).count() == 3
    token_issue(user=user, regenerate=True)
    assert ApiToken.objects.filter(user=user, revoked_at__isnull=True).count() == 1
