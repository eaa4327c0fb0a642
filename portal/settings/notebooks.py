"""Notebooks through JupyterHub (labs/notebooks): the hub's API and token, queueing and culling, profile ceilings,
where notebooks run, and the portal as the OAuth 2 / OpenID Connect provider the hub signs people in through."""

from __future__ import annotations

from pathlib import Path

from accounts.env import envchoice, envint, envlist, envstr
from portal.settings.base import DEBUG, VAR_DIR
from portal.settings.oidc_key import oidc_rsa_private_key

# --- Notebooks (JupyterHub)
# The portal is the front door: it queues, places and starts notebooks through the hub's REST API with its
# service token, and people open them through the hub's proxy after one login at the portal (OAuth 2 / OIDC).
NOTEBOOKS_HUB_API_URL = envstr("NOTEBOOKS_HUB_API_URL", "http://127.0.0.1:8081/hub/api").rstrip("/")
# The hub's proxy as browsers reach it: notebook links point here.
NOTEBOOKS_HUB_PUBLIC_URL = envstr("NOTEBOOKS_HUB_PUBLIC_URL", "http://127.0.0.1:8001").rstrip("/")
# The portal's JupyterHub service token: a development one with DEBUG; outside DEBUG it must be set (labs.E001).
NOTEBOOKS_HUB_TOKEN = envstr("NOTEBOOKS_HUB_TOKEN", "") or ("insecure-development-hub-token" if DEBUG else "")
# A hub call that takes longer than this counts as "the hub is not answering" (the request stays queued).
NOTEBOOKS_HUB_TIMEOUT_S = envint("NOTEBOOKS_HUB_TIMEOUT_S", 5, minimum=1, maximum=120)
# Spawns in flight at once; keep it below the hub's concurrent_spawn_limit so no 429 ever reaches anyone.
NOTEBOOKS_MAX_STARTING = envint("NOTEBOOKS_MAX_STARTING", 20, minimum=1)
# A spawn that is not ready after this long is given up, its server stopped and its quota released.
NOTEBOOKS_START_TIMEOUT_S = envint("NOTEBOOKS_START_TIMEOUT_S", 300, minimum=10)
# How often sessions are followed (ready, gone, idle, session length, weekly quota) and the queue moved.
NOTEBOOKS_TICK_S = envint("NOTEBOOKS_TICK_S", 5, minimum=1)
# Idle: no activity reported by the hub AND GPU utilisation below the threshold, both for this long.
NOTEBOOKS_IDLE_MIN = envint("NOTEBOOKS_IDLE_MIN", 60, minimum=1)
NOTEBOOKS_IDLE_GPU_PCT = envint("NOTEBOOKS_IDLE_GPU_PCT", 5, minimum=0, maximum=100)
# People are warned this long before an idle stop or the end of the session, and may extend.
NOTEBOOKS_WARN_MIN = envint("NOTEBOOKS_WARN_MIN", 10, minimum=1)
# What one "Extend" adds, and how long a session may last when its profile does not say.
NOTEBOOKS_EXTEND_MIN = envint("NOTEBOOKS_EXTEND_MIN", 60, minimum=5)
NOTEBOOKS_DEFAULT_SESSION_H = envint("NOTEBOOKS_DEFAULT_SESSION_H", 4, minimum=1)
# Weekly GPU-hours: a warning at this share of the quota; at 100 % the session ends after the grace period.
NOTEBOOKS_QUOTA_WARN_PCT = envint("NOTEBOOKS_QUOTA_WARN_PCT", 80, minimum=1, maximum=100)
NOTEBOOKS_QUOTA_GRACE_MIN = envint("NOTEBOOKS_QUOTA_GRACE_MIN", 15, minimum=0)
# Ceilings of every notebook profile, whoever writes it (teachers, admins, the console): what one notebook may ask
# for. A profile above them is not saved, and one saved before they were lowered does not start.
NOTEBOOKS_MAX_CPU = envint("NOTEBOOKS_MAX_CPU", 8, minimum=1, maximum=64)
NOTEBOOKS_MAX_MEMORY_GB = envint("NOTEBOOKS_MAX_MEMORY_GB", 32, minimum=1, maximum=256)
NOTEBOOKS_MAX_SESSION_H = envint("NOTEBOOKS_MAX_SESSION_H", 12, minimum=1, maximum=72)

# The hub's spawner, which compose passes to the hub and the portal alike: local outside DEBUG only in a lab that is
# one machine (see "Where user code runs" in lab.py).
# --- Course work (labs/coursework): material and assignments handed out into notebook homes, snapshots collected
# Where the notebook homes are as the portal's workers see them, one folder per hub user (u<id>): the local
# spawner's (the hub's data dir/homes), or the cluster's home volumes mounted into the workers; empty: material
# is not copied (students pull it with the nbgitpuller link shown on the course page).
NOTEBOOKS_HOMES_DIR = envstr("NOTEBOOKS_HOMES_DIR", str(VAR_DIR / "hub" / "homes"))
# The portal's store of handouts and submissions (snapshots are written once and never changed).
COURSEWORK_DIR = Path(envstr("COURSEWORK_DIR", str(VAR_DIR / "coursework")))
# Caps on an uploaded course folder (the zip itself and what it unpacks to) and on one snapshot.
COURSEWORK_UPLOAD_MAX_MB = envint("COURSEWORK_UPLOAD_MAX_MB", 100, minimum=1)
COURSEWORK_MAX_FILES = envint("COURSEWORK_MAX_FILES", 2000, minimum=1)
COURSEWORK_SNAPSHOT_MAX_MB = envint("COURSEWORK_SNAPSHOT_MAX_MB", 200, minimum=1)
COURSEWORK_FILE_MAX_MB = envint("COURSEWORK_FILE_MAX_MB", 50, minimum=1)
# Folders under which a git repository may be named by path or file:// (empty: only https:// and git://).
COURSEWORK_GIT_LOCAL_ROOTS = envlist("COURSEWORK_GIT_LOCAL_ROOTS", [])
COURSEWORK_GIT_TIMEOUT_S = envint("COURSEWORK_GIT_TIMEOUT_S", 120, minimum=5)
COURSEWORK_TICK_S = envint("COURSEWORK_TICK_S", 30, minimum=5)
# Warm the lab before class: how long before a course reservation with a notebook profile its image is pre-pulled
# and its placeholder servers (NotebookProfile.placeholders) are started.
NOTEBOOKS_PREWARM_MIN = envint("NOTEBOOKS_PREWARM_MIN", 30, minimum=1)
# Where the pre-puller's Jobs go on the cluster (the hub's HUB_NAMESPACE, where notebook pods run).
NOTEBOOKS_NAMESPACE = envstr("NOTEBOOKS_NAMESPACE", "gpu-lab-notebooks")

HUB_SPAWNER = envchoice("HUB_SPAWNER", "local" if DEBUG else "kubernetes", ("local", "echo", "kubernetes"))

# The hub's OAuth client at the portal (the provider): `manage.py hub_oauth_client` writes it from these. The secret
# is a development one with DEBUG; outside DEBUG it must be set (portal.E005).
HUB_OAUTH_CLIENT_ID = envstr("HUB_OAUTH_CLIENT_ID", "jupyterhub")
HUB_OAUTH_CLIENT_SECRET = envstr("HUB_OAUTH_CLIENT_SECRET", "") or (
    "insecure-development-hub-oauth-secret" if DEBUG else ""
)

# --- OAuth provider (the hub's one login)
# The portal is the OpenID Connect provider the notebook hub logs people in through (portal/oauth): authorization
# code with PKCE (S256) and a client secret, no consent page for the hub, ID tokens signed with RS256. The hub's
# client is written by `manage.py hub_oauth_client` from HUB_OAUTH_CLIENT_ID/SECRET (above).
OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    # PEM from OIDC_RSA_PRIVATE_KEY or OIDC_RSA_PRIVATE_KEY_FILE; in DEBUG, generated once into VAR_DIR.
    "OIDC_RSA_PRIVATE_KEY": oidc_rsa_private_key(debug=DEBUG, var_dir=VAR_DIR),
    # The issuer as browsers reach the portal, e.g. https://portal.lab.example/o (empty: from each request).
    "OIDC_ISS_ENDPOINT": envstr("OIDC_ISSUER", "").rstrip("/"),
    "OAUTH2_VALIDATOR_CLASS": "portal.oauth.validators.PortalOAuth2Validator",
    "SCOPES": {
        "openid": "Sign you in with your portal account",
        "profile": "Your user name, name and role",
        "email": "Your e-mail address",
    },
    "DEFAULT_SCOPES": ["openid"],
    "PKCE_REQUIRED": True,
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    "ACCESS_TOKEN_EXPIRE_SECONDS": envint("OAUTH_ACCESS_TOKEN_EXPIRE_S", 3600, minimum=60, maximum=24 * 3600),
    "ID_TOKEN_EXPIRE_SECONDS": 3600,
    "REFRESH_TOKEN_EXPIRE_SECONDS": 24 * 3600,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    # The hub is the only client and uses the code flow; advertise nothing else.
    "OIDC_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    # Plain-http redirect URIs (a hub on loopback) only in development.
    "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https"] if DEBUG else ["https"],
    # RFC 9700 (OAuth 2.0 Security BCP): no implicit or password grant, S256 only, no tokens in URLs, `iss` in
    # the authorization response, tokens hashed at rest, refresh-token replay revokes the family.
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_MATCHING": True,
    "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
}
