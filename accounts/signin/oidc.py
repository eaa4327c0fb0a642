"""OpenID Connect sign-in (mozilla-django-oidc): the one module that talks to the university's IdP.

The library runs the authorization code flow with PKCE (S256) and a nonce, and checks the ID token's signature
against the IdP's keys. Here: the endpoints come from the issuer's discovery document (cached), the ID token's
issuer, audience, expiry and subject are checked too, and people are matched by (issuer, OIDC_USER_CLAIM) — never
by e-mail — through ExternalIdentity. Whatever goes wrong raises SigninError with a sentence for the person.
"""

from __future__ import annotations

import logging

import jwt
import requests
from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import SuspiciousOperation
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from accounts.models import ExternalIdentity, User
from accounts.selectors import user_signed_in
from accounts.signin.services import external_identity_sign_in

logger = logging.getLogger("portal.signin")


class SigninError(Exception):
    """The sign-in did not work; `sentence` says why to the person, `status` is the page's status code."""

    def __init__(self, sentence: str, *, status: int = 400, reason: str = ""):
        super().__init__(reason or sentence)
        self.sentence = sentence
        self.status = status


def idp_unreachable() -> SigninError:
    sentence = f"The sign-in of {settings.OIDC_PROVIDER_NAME} is not answering right now. Try again in a few minutes"
    if settings.LDAP_SERVER_URI:
        sentence += f", or sign in with your {settings.LDAP_PROVIDER_NAME} password."
    elif settings.LOCAL_LOGIN != "off":
        sentence += "; lab staff can still sign in with their password."
    else:
        sentence += "."
    return SigninError(sentence, status=503)


def oidc_enabled() -> bool:
    return bool(settings.OIDC_PROVIDER_URL)


def provider_metadata() -> dict:
    """The issuer's discovery document, cached OIDC_DISCOVERY_CACHE_S; SigninError(503) when the IdP does not answer."""
    url = settings.OIDC_PROVIDER_URL
    if not url.endswith("/.well-known/openid-configuration"):
        url += "/.well-known/openid-configuration"
    key = f"signin:oidc-discovery:{url}"
    metadata = cache.get(key)
    if metadata is not None:
        return metadata
    try:
        response = requests.get(url, timeout=settings.OIDC_TIMEOUT)
        response.raise_for_status()
        metadata = response.json()
    except (requests.RequestException, ValueError) as exc:
        logger.warning("OIDC discovery at %s failed: %s", url, exc)
        raise idp_unreachable() from exc
    needed = ("issuer", "authorization_endpoint", "token_endpoint", "jwks_uri")
    if not isinstance(metadata, dict) or not all(isinstance(metadata.get(name), str) for name in needed):
        logger.warning("OIDC discovery at %s lacks %s", url, ", ".join(needed))
        raise idp_unreachable()
    if settings.OIDC_DISCOVERY_CACHE_S:
        cache.set(key, metadata, settings.OIDC_DISCOVERY_CACHE_S)
    return metadata


def refused(reason: str) -> SigninError:
    logger.warning("OIDC sign-in refused: %s", reason)
    return SigninError(
        f"{settings.OIDC_PROVIDER_NAME} sent an answer the portal cannot trust, so you are not signed in. "
        "Start again from the sign-in page; if it happens again, tell the lab staff.",
        reason=reason,
    )


class PortalOIDCBackend(OIDCAuthenticationBackend):
    """The code flow's second half: code -> tokens -> checked claims -> the person's account and groups."""

    def __init__(self, *args, **kwargs):
        # The library reads its endpoints from settings here; ours come from discovery at sign-in time.
        self.UserModel = User

    def _configure(self) -> dict:
        metadata = provider_metadata()
        self.OIDC_OP_TOKEN_ENDPOINT = metadata["token_endpoint"]
        self.OIDC_OP_USER_ENDPOINT = metadata.get("userinfo_endpoint")
        self.OIDC_OP_JWKS_ENDPOINT = metadata["jwks_uri"]
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = settings.OIDC_RP_SIGN_ALGO
        self.OIDC_RP_IDP_SIGN_KEY = None
        return metadata

    def authenticate(self, request, **kwargs):
        # Only the callback view calls without a password; a password sign-in whose address carries ?code=&state=
        # is still a password sign-in, and its code must never be sent to the IdP.
        if "password" in kwargs or "username" in kwargs:
            return None
        if request is None or not oidc_enabled() or "code" not in request.GET or "state" not in request.GET:
            return None  # no OIDC configured, or not the IdP's answer: not ours
        self.metadata = self._configure()
        try:
            return super().authenticate(request, **kwargs)
        except requests.RequestException as exc:
            response = getattr(exc, "response", None)
            if response is not None and 400 <= response.status_code < 500:
                raise refused(
                    f"the token endpoint refused the code: {response.status_code} {response.text[:200]}"
                ) from exc
            logger.warning("OIDC token or userinfo call failed: %s", exc)
            raise idp_unreachable() from exc
        except (SuspiciousOperation, jwt.PyJWTError, KeyError, TypeError) as exc:
            raise refused(f"{type(exc).__name__}: {exc}") from exc

    def get_token(self, payload):
        token_info = super().get_token(payload)
        if not isinstance(token_info, dict) or not isinstance(token_info.get("id_token"), str):
            raise refused("the token answer has no ID token")
        return token_info

    def retrieve_matching_jwk(self, token):
        """The IdP's key for this token: the one with the token's `kid`; without a kid, the only key there is."""
        response = requests.get(self.OIDC_OP_JWKS_ENDPOINT, timeout=settings.OIDC_TIMEOUT)
        response.raise_for_status()
        keys = response.json().get("keys") or []
        header = jwt.get_unverified_header(token)
        candidates = [
            key
            for key in keys
            if isinstance(key, dict)
            and ("kid" not in header or key.get("kid") == header["kid"])
            and key.get("alg", header.get("alg")) == header.get("alg")
            and key.get("use", "sig") == "sig"
        ]
        if len(candidates) != 1:
            raise refused(f"{len(candidates)} of the IdP's keys fit the ID token's header {header}")
        return jwt.PyJWK(candidates[0])

    def _verify_jws(self, payload, key):
        """The signature (the library's check) and the claims the library leaves alone: iss, aud, exp, iat."""
        header = jwt.get_unverified_header(payload)
        if header.get("alg") != self.OIDC_RP_SIGN_ALGO:
            raise refused(f"the ID token is signed with {header.get('alg')!r}, not {self.OIDC_RP_SIGN_ALGO}")
        try:
            claims = jwt.decode(
                payload,
                key,
                algorithms=[self.OIDC_RP_SIGN_ALGO],
                audience=self.OIDC_RP_CLIENT_ID,
                issuer=self.metadata["issuer"],
                leeway=settings.OIDC_LEEWAY_S,
                options={"require": ["iss", "aud", "exp", "iat", "sub"]},
            )
        except jwt.InvalidTokenError as exc:
            raise refused(f"ID token: {type(exc).__name__}: {exc}") from exc
        azp = claims.get("azp")
        if isinstance(claims.get("aud"), list) and len(claims["aud"]) > 1 and azp != self.OIDC_RP_CLIENT_ID:
            raise refused("the ID token is for several audiences and authorised for another party")
        return claims

    def get_or_create_user(self, access_token, id_token, payload):
        claims = dict(payload)
        if self.OIDC_OP_USER_ENDPOINT and access_token:
            userinfo = self.get_userinfo(access_token, id_token, payload)
            if not isinstance(userinfo, dict) or userinfo.get("sub") != payload.get("sub"):
                raise refused("the userinfo answer is about someone else than the ID token")
            # The ID token's claims are signed: they win; userinfo adds what the token left out.
            claims = {**userinfo, **payload}
        subject = claims.get(settings.OIDC_USER_CLAIM)
        if not isinstance(subject, str | int) or not str(subject).strip():
            raise refused(f"the answer has no {settings.OIDC_USER_CLAIM!r} claim to know the person by")
        groups = claims.get(settings.OIDC_GROUPS_CLAIM, [])
        if isinstance(groups, str):
            groups = groups.split()
        if not isinstance(groups, list):
            raise refused(f"the {settings.OIDC_GROUPS_CLAIM!r} claim is not a list")
        username = claims.get(settings.OIDC_USERNAME_CLAIM) or claims.get("email") or str(subject)
        user = external_identity_sign_in(
            kind=ExternalIdentity.Kind.OIDC,
            issuer=self.metadata["issuer"],
            subject=str(subject),
            username=str(username),
            groups=[str(group) for group in groups],
            email=str(claims.get("email") or ""),
            first_name=str(claims.get("given_name") or ""),
            last_name=str(claims.get("family_name") or ""),
        )
        if not user.is_active:
            raise SigninError("Your account at the portal is switched off. Ask the lab staff.", status=403)
        return user

    def get_user(self, user_id):
        return user_signed_in(user_id)
