"""Bad input to the API gets a 4xx with the error body of the contract, and changes nothing."""

import pytest

from accounts.models import ApiToken
from tests.factories import PASSWORD, UserFactory


@pytest.fixture
def user(db):
    return UserFactory(username="ada")


def test_token_for_right_password(api, user):
    response = api.post("/api/v1/token/", {"username": "ada", "password": PASSWORD}, format="json")
    assert response.status_code == 200
    token = response.json()["token"]
    me = api.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {token}")
    assert me.status_code == 200 and me.json()["username"] == "ada"


# ("ADA " is ada: names are one whatever their case, and the field is trimmed: tests/portal/test_usernames.py.)
@pytest.mark.parametrize("username,password", [("ada", "wrong"), ("nobody", PASSWORD), ("ADA2", PASSWORD)])
def test_wrong_password_and_unknown_user_get_the_same_401(api, user, username, password):
    response = api.post("/api/v1/token/", {"username": username, "password": password}, format="json")
    assert response.status_code == 401
    assert response.json() == {"detail": "Wrong username or password.", "code": "authentication_failed"}
    assert not ApiToken.objects.exists()


def test_malformed_json_is_400(api, user):
    response = api.post("/api/v1/token/", '{"username": "ada", "password":', content_type="application/json")
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "parse_error" and "JSON" in body["detail"]


def test_non_json_body_is_415(api, user):
    response = api.post("/api/v1/token/", "username=ada", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415
    assert response.json()["code"] == "unsupported_media_type"


@pytest.mark.parametrize(
    "payload,fields",
    [
        ({}, {"username", "password"}),
        ({"username": "ada"}, {"password"}),
        ({"username": ["ada"], "password": PASSWORD}, {"username"}),
        ({"username": {"a": 1}, "password": 5}, {"username"}),
        ({"username": "a" * 500, "password": PASSWORD}, {"username"}),
    ],
)
def test_missing_fields_and_wrong_types_name_the_fields(api, user, payload, fields):
    response = api.post("/api/v1/token/", payload, format="json")
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid"
    assert set(body["fields"]) == fields
    assert all(name in body["detail"] for name in fields)


def test_json_that_is_not_an_object_is_400(api, user):
    response = api.post("/api/v1/token/", "[1, 2, 3]", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid"


def test_bad_token_is_401(api, user):
    response = api.get("/api/v1/me/", HTTP_AUTHORIZATION="Token not-a-real-token")
    assert response.status_code == 401
    assert response.json()["code"] == "authentication_failed"
    assert response["WWW-Authenticate"] == "Token"


def test_session_write_without_csrf_is_refused(client, user):
    # Browser sessions need the CSRF token for writes; the error says so in JSON.
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    assert strict.login(username="ada", password=PASSWORD)
    response = strict.post("/api/v1/me/", {}, content_type="application/json")
    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"
    assert "CSRF" in response.json()["detail"]
