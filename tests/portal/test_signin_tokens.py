"""ID tokens the portal must not trust, from a real provider on loopback that hands out what each test asks for
(tests/fakes/oidc_idp.py, CraftedIdP): each is refused with a page that says so, nobody is signed in and no account
is made."""

from __future__ import annotations

import time

import pytest

from accounts.models import ExternalIdentity, User
from tests.fakes.oidc_idp import CraftedIdP

pytestmark = pytest.mark.django_db


@pytest.fixture
def crafted(settings):
    idp = CraftedIdP(client_id="gpu-portal")
    settings.OIDC_PROVIDER_URL = idp.url
    settings.OIDC_PROVIDER_NAME = "Example University"
    settings.OIDC_RP_CLIENT_ID = "gpu-portal"
    settings.OIDC_RP_CLIENT_SECRET = "portal-secret"
    settings.OIDC_DISCOVERY_CACHE_S = 0
    settings.SIGNIN_ROLE_GROUPS = "lab-teachers=teacher,lab-admins=admin"
    yield idp
    idp.close()


def go(client):
    start = client.get("/login/oidc/")
    assert start.status_code == 302
    import requests

    back = requests.get(start["Location"], allow_redirects=False, timeout=10).headers["Location"]
    return client.get(back.removeprefix("http://testserver"))


def refused(client, response) -> bool:
    return (
        response.status_code == 400
        and "sent an answer the portal cannot trust" in response.content.decode()
        and "_auth_user_id" not in client.session
        and not ExternalIdentity.objects.exists()
        and not User.objects.filter(username="crafted").exists()
    )


def test_a_valid_token_signs_in(client, crafted):
    """The control: the same provider with nothing wrong signs the person in (so the refusals below mean something)."""
    response = go(client)
    assert response.status_code == 302 and client.session["_auth_user_id"]
    assert User.objects.get(username="crafted").external_identities.get().issuer == crafted.url


def test_a_bad_signature_is_refused(client, crafted):
    crafted.sign_with_other_key = True
    assert refused(client, go(client))


def test_a_token_for_another_audience_is_refused(client, crafted, caplog):
    crafted.overrides = {"aud": "someone-elses-app"}
    assert refused(client, go(client))
    assert "InvalidAudienceError" in caplog.text


def test_a_token_from_another_issuer_is_refused(client, crafted, caplog):
    crafted.overrides = {"iss": "https://evil.example"}
    assert refused(client, go(client))
    assert "InvalidIssuerError" in caplog.text


def test_an_expired_token_is_refused(client, crafted, settings, caplog):
    now = int(time.time())
    crafted.overrides = {"iat": now - 7200, "exp": now - 3600}  # an hour past, far beyond the allowed clock skew
    assert refused(client, go(client))
    assert "ExpiredSignatureError" in caplog.text


def test_a_token_without_a_subject_is_refused(client, crafted, caplog):
    crafted.overrides = {"sub": None}
    assert refused(client, go(client))
    assert "MissingRequiredClaimError" in caplog.text


def test_a_token_with_another_nonce_is_refused(client, crafted, caplog):
    """A token minted for an earlier sign-in (its nonce) replayed into this one."""
    crafted.nonce_override = "nonce-of-an-earlier-sign-in"
    assert refused(client, go(client))
    assert "Nonce" in caplog.text


def test_a_token_without_expiry_is_refused(client, crafted):
    crafted.overrides = {"exp": None}
    assert refused(client, go(client))


def test_groups_that_are_not_a_list_are_refused(client, crafted):
    crafted.overrides = {"groups": {"admin": True}}
    assert refused(client, go(client))


def test_a_token_endpoint_that_does_not_answer_gives_the_not_answering_page(client, crafted, settings):
    import threading

    settings.OIDC_TIMEOUT = 1
    crafted.token_gate = threading.Event()
    try:
        response = go(client)
    finally:
        crafted.token_gate.set()
    assert response.status_code == 503
    assert "Example University is not answering right now" in response.content.decode()
    assert "_auth_user_id" not in client.session and not User.objects.filter(username="crafted").exists()
