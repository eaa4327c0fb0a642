"""The portal as the hub's OpenID Connect provider: what JupyterHub (oauthenticator's GenericOAuthenticator) sends
and gets back, and what a person sees on the way.

The hub sends PKCE (S256) by default, the client secret in the form body, and asks for "openid profile"."""

import base64
import hashlib
import json
import os
import secrets
import stat
from io import StringIO
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command
from django.test import Client, override_settings
from jwcrypto import jwk, jwt
from oauth2_provider.models import AccessToken, Application, Grant

from accounts.models import User
from portal.oauth.services import hub_client_sync
from portal.settings.oidc_key import oidc_rsa_private_key
from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db

HUB_CALLBACK = f"{settings.NOTEBOOKS_HUB_PUBLIC_URL}/hub/oauth_callback"
ISSUER = "http://testserver/o"


@pytest.fixture(autouse=True)
def hub_client():
    return hub_client_sync()


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


def authorize_url(challenge: str | None, **overrides) -> str:
    """The URL the hub sends a browser to, as oauthenticator 17.4 builds it."""
    params = {
        "response_type": "code",
        "client_id": settings.HUB_OAUTH_CLIENT_ID,
        "redirect_uri": HUB_CALLBACK,
        "scope": "openid profile",
        "state": "hub-state-123",
    }
    if challenge is not None:
        params.update(code_challenge=challenge, code_challenge_method="S256")
    params.update(overrides)
    return "/o/authorize/?" + urlencode(params)


def query_of(location: str) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlsplit(location).query).items()}


def exchange(code: str, verifier: str | None, *, secret: str | None = None):
    """The hub's server-to-server POST to the token endpoint (form body, client secret in it)."""
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": HUB_CALLBACK,
        "client_id": settings.HUB_OAUTH_CLIENT_ID,
        "client_secret": settings.HUB_OAUTH_CLIENT_SECRET if secret is None else secret,
    }
    if verifier is not None:
        data["code_verifier"] = verifier
    return Client().post("/o/token/", urlencode(data), content_type="application/x-www-form-urlencoded")


def userinfo(access_token: str):
    return Client().get("/o/userinfo/", HTTP_AUTHORIZATION=f"Bearer {access_token}")


def sign_in(client: Client, user) -> Client:
    assert client.login(username=user.username, password=PASSWORD)
    return client


def code_for(client: Client) -> tuple[str, str]:
    """A signed-in browser through /o/authorize/: the code the hub receives, and the hub's PKCE verifier."""
    verifier, challenge = pkce_pair()
    response = client.get(authorize_url(challenge))
    assert response.status_code == 302, response.content
    return query_of(response["Location"])["code"], verifier


def hub_login(client: Client, *, secret: str | None = None):
    code, verifier = code_for(client)
    return exchange(code, verifier, secret=secret)


# --- The one login --------------------------------------------------------------------------------


def test_signed_in_student_goes_straight_back_to_the_hub_with_a_code(client):
    sign_in(client, UserFactory(role="student"))
    verifier, challenge = pkce_pair()

    response = client.get(authorize_url(challenge))

    assert response.status_code == 302  # no consent page
    location = response["Location"]
    assert location.startswith(HUB_CALLBACK + "?")
    params = query_of(location)
    assert params["code"]
    assert params["state"] == "hub-state-123"
    assert params["iss"] == ISSUER  # RFC 9207: the same issuer the discovery document names


def test_the_hub_exchanges_the_code_and_reads_who_signed_in(client):
    student = UserFactory(username="Ada.Lovelace", first_name="Ada", last_name="Lovelace", email="ada@lab.example")
    sign_in(client, student)

    response = hub_login(client)

    assert response.status_code == 200, response.content
    tokens = response.json()
    assert tokens["token_type"] == "Bearer"
    assert tokens["expires_in"] == 3600
    assert set(tokens["scope"].split()) == {"openid", "profile"}
    assert tokens["refresh_token"]

    info = userinfo(tokens["access_token"])
    assert info.status_code == 200
    assert info.json() == {
        "sub": str(student.pk),
        "preferred_username": f"u{student.pk}",  # the hub's user: from the account's id, not its name
        "name": "Ada Lovelace",
        "groups": ["student"],
        "locale": "en",  # the person's language at the portal: the hub starts JupyterLab in it
    }  # no email: the hub does not ask for it

    # The ID token is signed with the key the JWKS document publishes, for the hub, about the student.
    keys = jwk.JWKSet.from_json(Client().get("/o/.well-known/jwks.json").content)
    id_token = jwt.JWT(jwt=tokens["id_token"], key=keys, expected_type="JWS")
    claims = json.loads(id_token.claims)
    assert json.loads(id_token.header)["alg"] == "RS256"
    assert claims["aud"] == settings.HUB_OAUTH_CLIENT_ID
    assert claims["iss"] == ISSUER
    assert claims["sub"] == str(student.pk)
    assert claims["preferred_username"] == f"u{student.pk}" and claims["name"] == "Ada Lovelace"


def test_the_hub_user_follows_the_account_id_through_a_rename_and_not_a_reused_name():
    """A name is not an identity: the hub user (its servers, its home) follows the account, not the name."""
    ada = UserFactory(username="ada")
    first = userinfo(hub_login(sign_in(Client(), ada)).json()["access_token"]).json()
    assert first["preferred_username"] == f"u{ada.pk}" and first["name"] == "ada"

    ada.username = "ada-old"  # an admin renames her
    ada.save()
    again = userinfo(hub_login(sign_in(Client(), ada)).json()["access_token"]).json()
    assert again["preferred_username"] == first["preferred_username"] and again["name"] == "ada-old"

    newcomer = UserFactory(username="ada")  # someone else gets the freed name
    theirs = userinfo(hub_login(sign_in(Client(), newcomer)).json()["access_token"]).json()
    assert theirs["preferred_username"] == f"u{newcomer.pk}" != first["preferred_username"]
    assert theirs["name"] == "ada" and theirs["sub"] == str(newcomer.pk)


@pytest.mark.parametrize("role", ["student", "teacher", "admin"])
def test_the_hub_learns_the_role_as_its_group(browser_client, role):
    tokens = hub_login(browser_client(role)).json()
    info = userinfo(tokens["access_token"]).json()

    assert info["groups"] == [role]  # the hub's admin_groups = {"admin"} makes portal admins hub admins
    assert info["preferred_username"] == f"u{User.objects.get(username=f'{role}-x').pk}"


def test_the_locale_claim_is_the_persons_chosen_language(client):
    student = UserFactory(role="student", language="pt-br")
    sign_in(client, student)
    tokens = hub_login(client).json()
    assert userinfo(tokens["access_token"]).json()["locale"] == "pt-BR"


def test_email_comes_with_the_email_scope(client):
    sign_in(client, UserFactory(email="grace@lab.example"))
    verifier, challenge = pkce_pair()
    code = query_of(client.get(authorize_url(challenge, scope="openid profile email"))["Location"])["code"]

    tokens = exchange(code, verifier).json()

    assert userinfo(tokens["access_token"]).json()["email"] == "grace@lab.example"


def test_anonymous_person_signs_in_at_the_portal_and_comes_back(client):
    student = UserFactory(role="student")
    verifier, challenge = pkce_pair()
    url = authorize_url(challenge)

    response = client.get(url)

    assert response.status_code == 302
    assert urlsplit(response["Location"]).path == "/login/"
    assert query_of(response["Location"])["next"] == url

    signed_in = client.post("/login/", {"username": student.username, "password": PASSWORD, "next": url})
    assert signed_in.status_code == 302
    assert signed_in["Location"] == url

    back_to_hub = client.get(signed_in["Location"])
    assert back_to_hub["Location"].startswith(HUB_CALLBACK + "?")
    code = query_of(back_to_hub["Location"])["code"]
    assert exchange(code, verifier).status_code == 200


def test_a_refresh_token_gets_a_new_access_token(client):
    sign_in(client, UserFactory())
    tokens = hub_login(client).json()

    response = Client().post(
        "/o/token/",
        urlencode(
            {
                "grant_type": "refresh_token",
                "refresh_token": tokens["refresh_token"],
                "client_id": settings.HUB_OAUTH_CLIENT_ID,
                "client_secret": settings.HUB_OAUTH_CLIENT_SECRET,
            }
        ),
        content_type="application/x-www-form-urlencoded",
    )

    assert response.status_code == 200, response.content
    assert userinfo(response.json()["access_token"]).status_code == 200
    assert userinfo(tokens["access_token"]).status_code == 401  # the old one was rotated out


def test_a_revoked_access_token_reads_nothing(client):
    sign_in(client, UserFactory())
    tokens = hub_login(client).json()

    response = Client().post(
        "/o/revoke_token/",
        urlencode(
            {
                "token": tokens["access_token"],
                "client_id": settings.HUB_OAUTH_CLIENT_ID,
                "client_secret": settings.HUB_OAUTH_CLIENT_SECRET,
            }
        ),
        content_type="application/x-www-form-urlencoded",
    )

    assert response.status_code == 200
    assert userinfo(tokens["access_token"]).status_code == 401


# --- Refusals -------------------------------------------------------------------------------------


def test_wrong_client_secret_gets_401_and_no_token(client):
    sign_in(client, UserFactory())
    code, verifier = code_for(client)

    response = exchange(code, verifier, secret="not-the-secret")

    assert response.status_code == 401
    assert response.json()["error"] == "invalid_client"
    assert "access_token" not in response.json()
    assert not AccessToken.objects.exists()


def test_the_code_needs_the_hubs_pkce_verifier(client):
    sign_in(client, UserFactory())
    code, _ = code_for(client)

    for verifier in (None, pkce_pair()[0]):
        response = exchange(code, verifier)
        assert response.status_code == 400
        assert "access_token" not in response.json()
    assert not AccessToken.objects.exists()


@pytest.mark.parametrize(
    "first_try",
    [
        {"verifier": "wrong"},
        {"verifier": None},
        {"secret": "not-the-secret"},
        {"redirect_uri": "https://evil.example/hub/oauth_callback"},
    ],
    ids=["wrong verifier", "no verifier", "wrong client secret", "another redirect URI"],
)
def test_a_code_is_good_for_one_try_a_refused_exchange_burns_it(client, first_try):
    """Whoever intercepts a code cannot keep guessing: after one refused exchange even the hub's own is refused."""
    sign_in(client, UserFactory())
    code, verifier = code_for(client)
    wrong = {"verifier": verifier, **first_try}
    if wrong["verifier"] == "wrong":
        wrong["verifier"] = pkce_pair()[0]
    if "redirect_uri" in wrong:
        data = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": wrong["redirect_uri"],
            "client_id": settings.HUB_OAUTH_CLIENT_ID,
            "client_secret": settings.HUB_OAUTH_CLIENT_SECRET,
            "code_verifier": verifier,
        }
        refused = Client().post("/o/token/", urlencode(data), content_type="application/x-www-form-urlencoded")
    else:
        refused = exchange(code, wrong["verifier"], secret=wrong.get("secret"))
    assert refused.status_code in (400, 401) and "access_token" not in refused.json()
    assert not Grant.objects.filter(code=code).exists()

    again = exchange(code, verifier)

    assert again.status_code == 400
    assert again.json()["error"] == "invalid_grant" and "access_token" not in again.json()
    assert not AccessToken.objects.exists()


def test_a_right_exchange_still_works_once_and_only_once(client):
    sign_in(client, UserFactory())
    code, verifier = code_for(client)
    assert exchange(code, verifier).status_code == 200
    replay = exchange(code, verifier)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    assert AccessToken.objects.count() == 1


@pytest.mark.parametrize(
    "overrides",
    [{"code_challenge": None}, {"code_challenge_method": "plain"}],
    ids=["without PKCE", "plain PKCE"],
)
def test_authorization_without_s256_pkce_is_refused(client, overrides):
    sign_in(client, UserFactory())
    params = {"code_challenge": pkce_pair()[1], "code_challenge_method": "S256", **overrides}
    params = {key: value for key, value in params.items() if value is not None}

    response = client.get(authorize_url(None, **params))

    # A registered redirect URI, so the hub hears why (RFC 6749 4.1.2.1); no code either way.
    assert response.status_code == 302
    answer = query_of(response["Location"])
    assert answer["error"] == "invalid_request"
    assert "code" not in answer
    assert not Grant.objects.exists()


@pytest.mark.parametrize(
    "overrides",
    [
        {"redirect_uri": "https://evil.example/hub/oauth_callback"},
        {"redirect_uri": HUB_CALLBACK + "/../../steal"},
        {"client_id": "someone-else"},
    ],
    ids=["foreign redirect URI", "altered redirect URI", "unknown client"],
)
def test_refused_sign_in_requests_stay_at_the_portal(client, overrides):
    sign_in(client, UserFactory())

    response = client.get(authorize_url(pkce_pair()[1], **overrides))

    assert response.status_code in (400, 401)
    assert not response.has_header("Location")  # never sent on to an address the hub did not register
    assert "Sign-in refused" in response.content.decode()
    assert not Grant.objects.exists()


def test_a_switched_off_account_does_not_get_through(client):
    person = UserFactory()
    sign_in(client, person)
    person.is_active = False
    person.save()

    response = client.get(authorize_url(pkce_pair()[1]))

    assert response.status_code == 302
    assert urlsplit(response["Location"]).path == "/login/"
    assert client.login(username=person.username, password=PASSWORD) is False


def test_an_account_switched_off_after_the_redirect_gets_no_token(client):
    person = UserFactory()
    sign_in(client, person)
    code, verifier = code_for(client)
    person.is_active = False
    person.save()

    response = exchange(code, verifier)

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"
    assert not AccessToken.objects.exists()


def test_an_account_switched_off_after_login_reads_nothing_and_refreshes_nothing(client):
    person = UserFactory()
    sign_in(client, person)
    tokens = hub_login(client).json()
    person.is_active = False
    person.save()

    assert userinfo(tokens["access_token"]).status_code == 401
    refresh = Client().post(
        "/o/token/",
        urlencode(
            {
                "grant_type": "refresh_token",
                "refresh_token": tokens["refresh_token"],
                "client_id": settings.HUB_OAUTH_CLIENT_ID,
                "client_secret": settings.HUB_OAUTH_CLIENT_SECRET,
            }
        ),
        content_type="application/x-www-form-urlencoded",
    )
    assert refresh.status_code == 400
    assert "access_token" not in refresh.json()


def test_userinfo_needs_a_bearer_token_not_a_session(client):
    sign_in(client, UserFactory())

    assert client.get("/o/userinfo/").status_code == 401
    assert userinfo("made-up").status_code == 401


def test_only_the_hubs_endpoints_are_mounted(client):
    sign_in(client, UserFactory(role="admin"))

    for path in ("/o/applications/", "/o/authorized_tokens/", "/o/introspect/", "/o/register/", "/o/logout/"):
        assert client.get(path).status_code == 404, path


# --- Discovery ------------------------------------------------------------------------------------


def test_the_discovery_document_names_the_endpoints():
    response = Client().get("/o/.well-known/openid-configuration")

    assert response.status_code == 200
    document = response.json()
    assert document["issuer"] == ISSUER
    assert document["authorization_endpoint"] == f"{ISSUER}/authorize/"
    assert document["token_endpoint"] == f"{ISSUER}/token/"
    assert document["userinfo_endpoint"] == f"{ISSUER}/userinfo/"
    assert document["jwks_uri"] == f"{ISSUER}/.well-known/jwks.json"
    assert document["response_types_supported"] == ["code"]
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert "RS256" in document["id_token_signing_alg_values_supported"]
    assert {"openid", "profile"} <= set(document["scopes_supported"])
    assert {"sub", "preferred_username", "groups"} <= set(document["claims_supported"])


def test_the_jwks_document_publishes_one_rsa_signing_key():
    keys = Client().get("/o/.well-known/jwks.json").json()["keys"]

    assert len(keys) == 1
    assert keys[0]["kty"] == "RSA"
    assert keys[0]["alg"] == "RS256"
    assert "d" not in keys[0]  # the public half only


# --- The hub's client -----------------------------------------------------------------------------


def test_hub_oauth_client_command_is_idempotent_and_updates_the_secret(client):
    out = StringIO()
    call_command("hub_oauth_client", stdout=out)
    call_command("hub_oauth_client", stdout=out)

    assert Application.objects.count() == 1
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[0] == lines[1]
    assert settings.HUB_OAUTH_CLIENT_ID in lines[0]
    assert HUB_CALLBACK in lines[0]

    sign_in(client, UserFactory())
    with override_settings(HUB_OAUTH_CLIENT_SECRET="a-rotated-hub-secret"):  # noqa: S106
        call_command("hub_oauth_client", stdout=StringIO())
        assert Application.objects.count() == 1
        assert hub_login(client, secret="a-rotated-hub-secret").status_code == 200
    assert hub_login(client, secret=settings.HUB_OAUTH_CLIENT_SECRET).status_code == 401

    application = Application.objects.get()
    assert application.client_secret != "a-rotated-hub-secret"  # stored hashed
    assert application.skip_authorization is True
    assert application.client_type == Application.CLIENT_CONFIDENTIAL
    assert application.authorization_grant_type == Application.GRANT_AUTHORIZATION_CODE
    assert application.algorithm == Application.RS256_ALGORITHM
    assert application.redirect_uris == HUB_CALLBACK


def test_hub_oauth_client_command_refuses_a_plain_http_hub_outside_debug():
    https_only = {**settings.OAUTH2_PROVIDER, "ALLOWED_REDIRECT_URI_SCHEMES": ["https"]}
    with override_settings(OAUTH2_PROVIDER=https_only), pytest.raises(CommandError, match="redirect_uris"):
        call_command("hub_oauth_client", stdout=StringIO())
    assert Application.objects.get().redirect_uris == HUB_CALLBACK  # the one from before is left as it was


# --- The signing key ------------------------------------------------------------------------------


def test_development_key_is_made_once_and_kept_private(monkeypatch, tmp_path):
    monkeypatch.delenv("OIDC_RSA_PRIVATE_KEY", raising=False)
    monkeypatch.delenv("OIDC_RSA_PRIVATE_KEY_FILE", raising=False)

    first = oidc_rsa_private_key(debug=True, var_dir=tmp_path / "var")
    again = oidc_rsa_private_key(debug=True, var_dir=tmp_path / "var")

    assert first == again
    assert "PRIVATE KEY" in first
    assert stat.S_IMODE(os.stat(tmp_path / "var" / "oidc_rsa_private.pem").st_mode) == 0o600


def test_production_needs_a_signing_key(monkeypatch, tmp_path):
    monkeypatch.delenv("OIDC_RSA_PRIVATE_KEY", raising=False)
    monkeypatch.delenv("OIDC_RSA_PRIVATE_KEY_FILE", raising=False)
    with pytest.raises(ImproperlyConfigured, match="OIDC_RSA_PRIVATE_KEY"):
        oidc_rsa_private_key(debug=False, var_dir=tmp_path)
    assert not list(tmp_path.iterdir())  # nothing generated

    key_file = tmp_path / "key.pem"
    key_file.write_text(oidc_rsa_private_key(debug=True, var_dir=tmp_path / "dev"))
    monkeypatch.setenv("OIDC_RSA_PRIVATE_KEY_FILE", str(key_file))
    assert oidc_rsa_private_key(debug=False, var_dir=tmp_path) == key_file.read_text()

    monkeypatch.delenv("OIDC_RSA_PRIVATE_KEY_FILE")
    monkeypatch.setenv("OIDC_RSA_PRIVATE_KEY", "not a key")
    with pytest.raises(ImproperlyConfigured, match="PEM private key"):
        oidc_rsa_private_key(debug=False, var_dir=tmp_path)


# --- Finding 11 of the security review: a token in the query string, HS256 in the discovery document --------


@pytest.mark.parametrize("method", ["get", "post"])
def test_userinfo_refuses_an_access_token_in_the_query_string(client, method):
    sign_in(client, UserFactory())
    access_token = hub_login(client).json()["access_token"]

    response = getattr(Client(), method)(f"/o/userinfo/?access_token={access_token}")

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"
    assert "Authorization header" in response.json()["error_description"]
    assert response["WWW-Authenticate"].startswith('Bearer error="invalid_request"')
    assert "sub" not in response.json()
    # Even with the header as well: a token that was put in a URL is not answered.
    both = Client().get(f"/o/userinfo/?access_token={access_token}", HTTP_AUTHORIZATION=f"Bearer {access_token}")
    assert both.status_code == 400
    assert userinfo(access_token).status_code == 200  # the header alone is the way


def test_userinfo_by_post_with_the_header_still_works_without_csrf(client):
    kim = UserFactory(username="kim")
    sign_in(client, kim)
    access_token = hub_login(client).json()["access_token"]
    response = Client(enforce_csrf_checks=True).post("/o/userinfo/", HTTP_AUTHORIZATION=f"Bearer {access_token}")
    assert response.status_code == 200 and response.json()["preferred_username"] == f"u{kim.pk}"


def test_the_discovery_document_advertises_only_the_algorithm_id_tokens_are_signed_with():
    response = Client().get("/o/.well-known/openid-configuration")
    assert response.json()["id_token_signing_alg_values_supported"] == ["RS256"]
    assert response["Access-Control-Allow-Origin"] == "*"
