"""People and their sign-in: the user model, passwords, the sign-in hardening (throttles and lockout), API tokens,
course rosters and their invitations, and the per-person rate limits. The university's sign-in is in signin.py."""

from __future__ import annotations

import datetime as dt

from django.core.exceptions import ImproperlyConfigured

from accounts.env import envint, envnetworks, envrate, envstr

# --- People and auth -------------------------------------------------------------------

AUTH_USER_MODEL = "accounts.User"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# The proxies in front of the portal whose X-Forwarded-For (and uvicorn's X-Forwarded-Proto) are believed:
# comma-separated addresses or networks (FORWARDED_ALLOW_IPS, read by scripts/serve.sh's uvicorn too); empty, the
# default: none, the peer's address is the client's. accounts.addresses.client_ip is the one reading: the token
# endpoint's and the login's throttles, django-axes' lockout, the logs.
FORWARDED_ALLOW_IPS = envnetworks("FORWARDED_ALLOW_IPS")
if envint("NUM_PROXIES", 0, minimum=0) != 0:
    # NUM_PROXIES believed the last N entries whoever sent them (a client reaching the portal past the proxy wrote
    # its own); the proxies are named now.
    raise ImproperlyConfigured(
        "NUM_PROXIES is gone: name the proxies in front of the portal in FORWARDED_ALLOW_IPS (their addresses or "
        "networks), and leave NUM_PROXIES unset."
    )

# --- Sign-in hardening (README: "Sign-in hardening") ------------------------------------------------------------
# Two layers. Per address, DRF throttles slow every sign-in door: LOGIN_THROTTLE_RATE for POST /login/,
# TOKEN_THROTTLE_RATE for POST /api/v1/token/ (all tries, right or wrong). Per (username, address), django-axes
# locks after AXES_FAILURE_LIMIT failures for AXES_COOLOFF_MIN minutes, counted from the failure that locked it:
# tries during the lockout neither count nor extend it, so an attacker cannot keep a known person locked out
# forever, the person can still sign in from any other address at once, and from that one after the window.
# A right password resets that pair's count. Admins lift a lock in the admin console (Axes → Access attempts).
AXES_FAILURE_LIMIT = envint("AXES_FAILURE_LIMIT", 5, minimum=1, maximum=1000)
AXES_COOLOFF_MIN = envint("AXES_COOLOFF_MIN", 15, minimum=1, maximum=24 * 60)
AXES_COOLOFF_TIME = dt.timedelta(minutes=AXES_COOLOFF_MIN)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_CLIENT_IP_CALLABLE = "accounts.addresses.client_ip_address"  # the one reading of X-Forwarded-For
AXES_IPWARE_META_PRECEDENCE_ORDER = ["REMOTE_ADDR"]  # never a header, should the callable above ever be bypassed
AXES_LOCKOUT_CALLABLE = "portal.web.lockout.lockout_response"
AXES_WHITELIST_CALLABLE = "portal.web.lockout.not_a_password_sign_in"
AXES_USERNAME_CALLABLE = "portal.web.lockout.lockout_username"
AXES_DISABLE_ACCESS_LOG = True  # no row per successful sign-in; failures are what the lockout needs
AXES_SENSITIVE_PARAMETERS = ["password"]
AXES_VERBOSE = False
# DRF rates: a number, '/', s|min|hour|day (api.py gives them to DRF's throttles).
LOGIN_THROTTLE_RATE = envrate("LOGIN_THROTTLE_RATE", "30/min")
TOKEN_THROTTLE_RATE = envrate("TOKEN_THROTTLE_RATE", "20/min")

# API tokens are valid this many days by default and at most (0 = until revoked; a token may ask for fewer days);
# a new password revokes them.
API_TOKEN_TTL_DAYS = envint("API_TOKEN_TTL_DAYS", 90, minimum=0, maximum=3650)
# Live (not revoked, not expired) API tokens one person may hold at once; one more is refused.
API_TOKENS_MAX = envint("API_TOKENS_MAX", 20, minimum=1, maximum=1000)
# Open streams (the /ws/gpus/ WebSocket, followed job logs) look at their credential again this often (seconds): a
# sign-out everywhere, a new password, a revoked token or a switched-off account ends them within it.
CREDENTIAL_RECHECK_S = envint("CREDENTIAL_RECHECK_S", 5, minimum=1, maximum=300)

# --- Rosters and their invitation e-mail (accounts/rosters.py, invitations.py) ---------------------
# A roster file (CSV) is refused above this size or row count: 1 MiB holds some 10,000 students.
ROSTER_MAX_BYTES = envint("ROSTER_MAX_BYTES", 1024 * 1024, minimum=1024, maximum=20 * 1024 * 1024)
ROSTER_MAX_ROWS = envint("ROSTER_MAX_ROWS", 5000, minimum=1, maximum=100000)
# The one-time sign-in link of an invitation works once, for this many hours.
ROSTER_INVITE_TTL_HOURS = envint("ROSTER_INVITE_TTL_HOURS", 72, minimum=1, maximum=24 * 30)
# A roster's request to someone who already has an account (enrolled only when they accept) waits this many hours;
# unanswered by then, it enrols nobody.
ROSTER_CONSENT_TTL_HOURS = envint("ROSTER_CONSENT_TTL_HOURS", 14 * 24, minimum=1, maximum=24 * 90)
# The portal's address as people reach it, for links in e-mail ("https://gpulab.example.edu"); blank: the address
# of the request that imported the roster.
PORTAL_BASE_URL = (envstr("PORTAL_BASE_URL", "") or "").rstrip("/")
# Their e-mail goes through the EMAIL_* settings (mail.py, with the budgets' alerts).

# --- Rate limits (accounts/ratelimit.py)
# Per person and action, in a sliding window of RATE_LIMIT_WINDOW_S, counted in the cache (Redis with REDIS_URL):
# beyond it the API answers 429 `rate_limited` with Retry-After and the pages say when to try again. 0 turns one
# off. A class start (every student pressing Start once or twice) stays far below them. When the cache does not
# answer, requests go through (and the log says so) rather than fail.
RATE_LIMIT_WINDOW_S = envint("RATE_LIMIT_WINDOW_S", 60, minimum=1, maximum=24 * 3600)
RATE_LIMIT_JOB_SUBMIT = envint("RATE_LIMIT_JOB_SUBMIT", 30, minimum=0)
RATE_LIMIT_NOTEBOOK_START = envint("RATE_LIMIT_NOTEBOOK_START", 20, minimum=0)
RATE_LIMIT_RESERVATION_CREATE = envint("RATE_LIMIT_RESERVATION_CREATE", 20, minimum=0)
# The cache (an alias of CACHES, data.py) that holds the counters, and their key prefix; an alias that is not one
# stops the start (accounts.E001, accounts/checks.py).
RATE_LIMIT_CACHE = envstr("RATE_LIMIT_CACHE", "default")
RATE_LIMIT_KEY_PREFIX = envstr("RATE_LIMIT_KEY_PREFIX", "ratelimit")

# --- The audit trail (accounts/audit.py) and requests for more (accounts/more_requests.py)
# Days an audit entry is kept; the hourly sweep (accounts.tasks.audit_prune) removes older ones. 0 keeps them all.
AUDIT_RETENTION_DAYS = envint("AUDIT_RETENTION_DAYS", 730, minimum=0, maximum=36500)
# The most GPU-hours one request for more may ask for (a week of the whole lab is 40 × 168 = 6720), and how far
# ahead its override may last.
REQUESTS_MAX_GPU_HOURS = envint("REQUESTS_MAX_GPU_HOURS", 2000, minimum=1, maximum=100000)
REQUESTS_MAX_DAYS = envint("REQUESTS_MAX_DAYS", 180, minimum=1, maximum=3650)
# How often the sweep that ends overrides (and warns a day before) and prunes the audit trail runs.
REQUESTS_SWEEP_S = envint("REQUESTS_SWEEP_S", 600, minimum=10)
