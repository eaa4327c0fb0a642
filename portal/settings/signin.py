"""The university's sign-in (accounts/signin): OpenID Connect, LDAP, what their groups give people, local passwords,
and the authentication backends. Settings that only work together are checked at start (accounts/checks.py)."""

from __future__ import annotations

from accounts.env import envbool, envchoice, envint, envstr

# --- University sign-in (accounts/signin): OpenID Connect, LDAP, and what their groups give people
# OpenID Connect (mozilla-django-oidc, authorization code + PKCE S256 + nonce): the university's issuer, e.g.
# https://keycloak.uni.example/realms/uni or https://login.microsoftonline.com/<tenant>/v2.0; the portal reads its
# discovery document (<issuer>/.well-known/openid-configuration). Empty: no "Sign in with ..." button.
# (OIDC_ISSUER, in notebooks.py, is the portal's own issuer as the hub's provider: another thing.)
OIDC_PROVIDER_URL = envstr("OIDC_PROVIDER_URL", "").rstrip("/")
OIDC_PROVIDER_NAME = envstr("OIDC_PROVIDER_NAME", "your university")  # the button: "Sign in with <name>"
# Both required with OIDC_PROVIDER_URL (accounts.E002).
OIDC_RP_CLIENT_ID = envstr("OIDC_RP_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET = envstr("OIDC_RP_CLIENT_SECRET", "")
OIDC_RP_SCOPES = envstr("OIDC_RP_SCOPES", "openid profile email")  # openid among them (accounts.E003)
OIDC_RP_SIGN_ALGO = envchoice(
    "OIDC_RP_SIGN_ALGO", "rs256", ("rs256", "rs384", "rs512", "es256", "es384", "ps256")
).upper()
# The claim that names a person for good (never the e-mail alone), the one that proposes a user name for a new
# account, and the one that lists their groups (Keycloak: a "groups" mapper; Entra ID: "groups" with
# groupMembershipClaims, or "roles" for app roles).
OIDC_USER_CLAIM = envstr("OIDC_USER_CLAIM", "sub")
OIDC_USERNAME_CLAIM = envstr("OIDC_USERNAME_CLAIM", "preferred_username")
OIDC_GROUPS_CLAIM = envstr("OIDC_GROUPS_CLAIM", "groups")
OIDC_TIMEOUT = envint("OIDC_TIMEOUT_S", 5, minimum=1, maximum=60)  # each call to the IdP; then "not answering"
OIDC_STATE_TTL_S = envint("OIDC_STATE_TTL_S", 600, minimum=30, maximum=3600)  # a sign-in must come back by then
OIDC_DISCOVERY_CACHE_S = envint("OIDC_DISCOVERY_CACHE_S", 3600, minimum=0)
OIDC_LEEWAY_S = envint("OIDC_LEEWAY_S", 60, minimum=0, maximum=600)  # clock skew allowed on exp/iat
OIDC_USE_PKCE = True
OIDC_PKCE_CODE_CHALLENGE_METHOD = "S256"
OIDC_USE_NONCE = True
OIDC_AUTHENTICATION_CALLBACK_URL = "oidc_callback"
OIDC_CREATE_USER = True

# LDAP (django-auth-ldap) for departments without OIDC: people sign in with the password form. Optional: python-ldap
# and django-auth-ldap come with the `ldap` extra (pip install '.[ldap]'), and without LDAP_SERVER_URI the portal
# never imports them.
LDAP_SERVER_URI = envstr("LDAP_SERVER_URI", "")  # e.g. ldaps://ldap.dept.example
LDAP_PROVIDER_NAME = envstr("LDAP_PROVIDER_NAME", "department")
LDAP_BIND_DN = envstr("LDAP_BIND_DN", "")
LDAP_BIND_PASSWORD = envstr("LDAP_BIND_PASSWORD", "")
# Both search bases required with LDAP_SERVER_URI (accounts.E004).
LDAP_USER_SEARCH_BASE = envstr("LDAP_USER_SEARCH_BASE", "")
LDAP_USER_FILTER = envstr("LDAP_USER_FILTER", "(uid=%(user)s)")
LDAP_GROUP_SEARCH_BASE = envstr("LDAP_GROUP_SEARCH_BASE", "")
LDAP_GROUP_FILTER = envstr("LDAP_GROUP_FILTER", "")  # default: by LDAP_GROUP_TYPE's object class
LDAP_GROUP_TYPE = envchoice(  # case does not matter
    "LDAP_GROUP_TYPE",
    "groupofnames",
    (
        "groupofnames",
        "groupofuniquenames",
        "posixgroup",
        "activedirectory",
        "nestedactivedirectory",
        "nestedgroupofnames",
    ),
)
LDAP_START_TLS = envbool("LDAP_START_TLS", default=False)
LDAP_USER_ID_ATTR = envstr("LDAP_USER_ID_ATTR", "")  # a stable id (entryUUID); empty: the entry's DN
LDAP_TIMEOUT_S = envint("LDAP_TIMEOUT_S", 5, minimum=1, maximum=60)
# The nightly sync (LDAP): everyone who ever signed in through LDAP gets their groups applied again, so a person
# who left a course's group loses it without signing in. At SIGNIN_SYNC_HOUR:15 in Celery's zone (UTC), when
# LDAP is configured (the beat schedule: workers.py).
SIGNIN_SYNC_HOUR = envint("SIGNIN_SYNC_HOUR", 3, minimum=0, maximum=23)

# Local passwords: all (everyone, today's behaviour), staff (admins and superusers only: break-glass accounts),
# off (nobody; the university's sign-in only). LDAP passwords are the directory's, not local ones.
LOCAL_LOGIN = envchoice("LOCAL_LOGIN", "all", ("all", "staff", "off"))

# What the groups give (accounts/signin/mapping.py has the format): role by group, e.g.
# "lab-admins=admin,faculty=teacher"; a person in groups of two roles gets the highest (and the log says so).
SIGNIN_ROLE_GROUPS = envstr("SIGNIN_ROLE_GROUPS", "")
SIGNIN_DEFAULT_ROLE = envchoice("SIGNIN_DEFAULT_ROLE", "student", ("student", "teacher"))
# Course groups: regular expressions (whitespace-separated) with the named groups code, part and optionally term.
SIGNIN_COURSE_PATTERNS = envstr(
    "SIGNIN_COURSE_PATTERNS", r"^course-(?P<code>[a-z0-9][a-z0-9._]*)-(?P<term>\d{4}[a-z])-(?P<part>[a-z]+)$"
)

# Each answers only when configured (the OIDC one on its callback). The LDAP one is listed only with LDAP_SERVER_URI,
# so that without LDAP nothing imports python-ldap.
AUTHENTICATION_BACKENDS = [
    # First: a locked (username, address) is refused before any password check (password sign-ins only: the form,
    # the token endpoint, the admin console; LDAP's passwords too). Single sign-on is not its business.
    "portal.web.lockout.PasswordLockoutBackend",
    "accounts.signin.backends.LocalPasswordBackend",
    *(["accounts.signin.ldap.PortalLDAPBackend"] if LDAP_SERVER_URI else []),
    "accounts.signin.oidc.PortalOIDCBackend",
]
