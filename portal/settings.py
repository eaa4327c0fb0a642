"""Settings for GPU Lab Portal.

One module, read from the environment. With no environment at all it gives the embedded
setup (SQLite, in-memory channel layer, tasks run in-process, local backends) so that a
fresh clone runs. DATABASE_URL, REDIS_URL and the *_BACKEND settings switch to
PostgreSQL, Redis and the cluster.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from accounts.addresses import parse_proxies
from accounts.env import envbool, envchoice, envint, envlist, envmonthdays, envstr
from portal.oauth.keys import oidc_rsa_private_key

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(envstr("PORTAL_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = envbool("DEBUG", default=True)

SECRET_KEY = envstr("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")
    SECRET_KEY = "insecure-development-key-do-not-use-in-production"  # noqa: S105

ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "axes",  # sign-in lockout: AccessAttempt rows (admin console → Axes) per (username, address)
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "accounts",
    "portal.web",
    "portal.oauth",  # before the toolkit: its authorization page is the portal's
    "oauth2_provider",
    "labs",
    "jobs",
    "bench",  # the benchmarks (management commands only), apart from the product
]

MIDDLEWARE = [
    "portal.web.middleware.MalformedInputMiddleware",  # first: NUL characters never reach anything else
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",  # Content-Security-Policy on every answer (CONTENT_SECURITY_POLICY below)
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "axes.middleware.AxesMiddleware",  # a locked-out sign-in gets portal.web.lockout.lockout_response (429)
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "portal.urls"
CSRF_FAILURE_VIEW = "portal.web.errors.csrf_failure"  # JSON under /api/, the 403 page elsewhere
WSGI_APPLICATION = "portal.wsgi.application"
ASGI_APPLICATION = "portal.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "portal.web.context.portal",
            ],
        },
    },
]

# --- Data stores -----------------------------------------------------------------------

# Under ASGI every request runs its sync code in a thread of its own, so a persistent connection (CONN_MAX_AGE)
# is one connection per request thread that nobody reuses: under load PostgreSQL runs out of connections.
# DATABASE_POOL=true (PostgreSQL only) shares a psycopg pool per process instead: each request borrows one of at
# most DATABASE_POOL_MAX_SIZE connections, waiting up to DATABASE_POOL_TIMEOUT_S for one; size it so that
# processes x max size stays below PostgreSQL's max_connections (100 by default) with room for the rest.
DATABASE_POOL = envbool("DATABASE_POOL", default=False)
DATABASES = {
    "default": dj_database_url.parse(
        envstr("DATABASE_URL", f"sqlite:///{VAR_DIR / 'portal.sqlite3'}"),
        conn_max_age=envint("DATABASE_CONN_MAX_AGE", 0 if DATABASE_POOL else 60, minimum=0),
        conn_health_checks=True,
    )
}
if DATABASE_POOL:
    if not DATABASES["default"]["ENGINE"].endswith("postgresql"):
        raise ImproperlyConfigured("DATABASE_POOL=true needs PostgreSQL (a postgres:// DATABASE_URL).")
    if DATABASES["default"]["CONN_MAX_AGE"] != 0:
        raise ImproperlyConfigured(
            "DATABASE_POOL=true keeps connections in the pool: leave DATABASE_CONN_MAX_AGE unset or 0."
        )
    _pool_min = envint("DATABASE_POOL_MIN_SIZE", 2, minimum=0, maximum=500)
    _pool_max = envint("DATABASE_POOL_MAX_SIZE", 10, minimum=1, maximum=500)
    if _pool_max < _pool_min:
        raise ImproperlyConfigured(
            f"DATABASE_POOL_MAX_SIZE ({_pool_max}) must be at least DATABASE_POOL_MIN_SIZE ({_pool_min})."
        )
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": _pool_min,
        "max_size": _pool_max,
        "timeout": envint("DATABASE_POOL_TIMEOUT_S", 10, minimum=1, maximum=300),
    }
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # The embedded setup has two writers (the web server and the periodic tasks): wait for the
    # write lock instead of failing, and take it at BEGIN so a transaction never has to upgrade.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL;",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = envstr("REDIS_URL", "")

if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                # Explicit pool options: idle consumers must not be dropped by a socket timeout,
                # and the default capacity (100) silently drops messages under bursts.
                "hosts": [{"address": REDIS_URL, "socket_timeout": None, "max_connections": 1000}],
                "capacity": envint("CHANNEL_LAYER_CAPACITY", 5000, minimum=100),
                "expiry": 30,
            },
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# --- Celery ----------------------------------------------------------------------------

CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
# Without a broker, tasks run in-process through the same code path as on a worker.
CELERY_TASK_ALWAYS_EAGER = envbool("CELERY_TASK_ALWAYS_EAGER", default=not REDIS_URL)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = envint("CELERY_TASK_TIME_LIMIT", 300, minimum=10)
CELERY_TASK_SOFT_TIME_LIMIT = envint("CELERY_TASK_SOFT_TIME_LIMIT", 240, minimum=5)
# A worker killed outright (the OOM killer, a node crash) leaves its task unacknowledged in Redis; the next worker to
# start (or a running one's sweep) gives it back after this many seconds. It must exceed the longest task with its
# countdown (the task limits are 300 s), or a slow task would run twice.
BROKER_VISIBILITY_TIMEOUT_S = envint("CELERY_VISIBILITY_TIMEOUT_S", 3600, minimum=1)
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": BROKER_VISIBILITY_TIMEOUT_S}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = "UTC"

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
try:
    FORWARDED_ALLOW_IPS = parse_proxies(envstr("FORWARDED_ALLOW_IPS", "") or "")
except ValueError as exc:
    raise ImproperlyConfigured(f"FORWARDED_ALLOW_IPS: {exc}") from None
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
_RATE = re.compile(r"^\d+/[smhd]\w*$")


def _rate(name: str, default: str) -> str:
    value = envstr(name, default).strip()
    if not _RATE.match(value):
        raise ImproperlyConfigured(f"{name} must be a rate such as 20/min (a number, '/', s|min|hour|day): {value!r}")
    return value


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
LOGIN_THROTTLE_RATE = _rate("LOGIN_THROTTLE_RATE", "30/min")
TOKEN_THROTTLE_RATE = _rate("TOKEN_THROTTLE_RATE", "20/min")

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
# Their e-mail goes through the EMAIL_* settings below (with the budgets' alerts).

REST_FRAMEWORK = {
    # Token first: its WWW-Authenticate header makes anonymous API calls a 401, not a 403.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "portal.api.auth.ExpiringTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # DRF's JSON parser, refusing deep nesting, NUL characters and lone surrogates with a 400 parse_error.
    "DEFAULT_PARSER_CLASSES": ["portal.api.parsers.SafeJSONParser"],
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "EXCEPTION_HANDLER": "portal.api.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    "COERCE_DECIMAL_TO_STRING": False,
    "DEFAULT_THROTTLE_RATES": {"token": TOKEN_THROTTLE_RATE, "login": LOGIN_THROTTLE_RATE},
}
# DRF's own throttles (AnonRateThrottle, ...) key on REMOTE_ADDR, never on the header; ours read client_ip.
REST_FRAMEWORK["NUM_PROXIES"] = 0

SPECTACULAR_SETTINGS = {
    "TITLE": "GPU Lab Portal API",
    "DESCRIPTION": "The v1 contract of GPU Lab Portal: people, nodes, reservations, jobs, notebooks, usage.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "COMPONENT_SPLIT_REQUEST": True,
    # The contract's error answers and the links between operations (portal/api/schema.py).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "portal.api.schema.document_errors_and_links",
    ],
    "ENUM_NAME_OVERRIDES": {
        "NodeStatusEnum": "labs.models.NodeStatus",
        "ReservationStatusEnum": "labs.models.ReservationStatus",
        "CourseRoleEnum": "accounts.models.CourseRole",  # a roster's student or teaching assistant
        "CoursePartEnum": ["student", "assistant", "teacher"],  # /me/'s part in each course
    },
}

# --- The lab ---------------------------------------------------------------------------

LANGUAGE_CODE = "en-us"
# The lab's time zone: times are entered and shown in it, and stored in UTC.
TIME_ZONE = envstr("LAB_TIME_ZONE", "Europe/Berlin")
USE_I18N = False
USE_TZ = True

LAB_NAME = envstr("LAB_NAME", "GPU Lab")
INVENTORY_BACKEND = envchoice("INVENTORY_BACKEND", "local", ("local", "kubernetes"))
INVENTORY_FILE = envstr("INVENTORY_FILE", "")
INVENTORY_SYNC_INTERVAL_S = envint("INVENTORY_SYNC_INTERVAL_S", 60, minimum=5)
KUBERNETES_IN_CLUSTER = envbool("KUBERNETES_IN_CLUSTER", default=False)
KUBERNETES_API_URL = envstr("KUBERNETES_API_URL", "")
KUBERNETES_TOKEN = envstr("KUBERNETES_TOKEN", "")
KUBERNETES_VERIFY_TLS = envbool("KUBERNETES_VERIFY_TLS", default=True)
KUBERNETES_TIMEOUT_S = envint("KUBERNETES_TIMEOUT_S", 10, minimum=1)
KUBERNETES_GPU_RESOURCE = envstr("KUBERNETES_GPU_RESOURCE", "nvidia.com/gpu")

# Reservations: people on reserved nodes are told this long before the window; a reservation
# whose nodes nobody used this long after its start goes back to the pool (0 = never).
RESERVATION_WARN_LEAD_MIN = envint("RESERVATION_WARN_LEAD_MIN", 15, minimum=0)
RESERVATION_NO_SHOW_MIN = envint("RESERVATION_NO_SHOW_MIN", 30, minimum=0)
RESERVATION_TICK_S = envint("RESERVATION_TICK_S", 60, minimum=5)

CELERY_BEAT_SCHEDULE = {
    "reservations-tick": {"task": "labs.tasks.reservations_tick", "schedule": float(RESERVATION_TICK_S)},
}
if INVENTORY_BACKEND == "kubernetes":
    CELERY_BEAT_SCHEDULE["inventory-sync"] = {
        "task": "labs.tasks.inventory_sync",
        "schedule": float(INVENTORY_SYNC_INTERVAL_S),
    }

# --- Training jobs
# Where jobs run: subprocesses on this machine (local: the run command, the demo, tests) or batch/v1 Jobs.
# Outside DEBUG the cluster, unless SINGLE_MACHINE_LAB (see "Where user code runs" below).
JOBS_BACKEND = envchoice("JOBS_BACKEND", "local" if DEBUG else "kubernetes", ("local", "kubernetes"))
# Local jobs run sandboxed (jobs/backends/sandbox.py: bubblewrap, no network, none of the portal's files), with each
# rank's log capped at JOBS_LOG_MAX_BYTES and at most JOBS_LOCAL_MAX_PROCESSES processes of their user.
# When the portal runs as root, each person's jobs (and local notebooks) run as a uid of their own:
# JOBS_LOCAL_UID_BASE + their portal user id, below JOBS_LOCAL_UID_BASE + JOBS_LOCAL_UID_COUNT (keep that range free
# of the machine's users and subuid ranges); 0 as the base, or a job without an owner, runs as JOBS_LOCAL_UID/GID.
JOBS_LOCAL_UID = envint("JOBS_LOCAL_UID", 65534, minimum=1)
JOBS_LOCAL_GID = envint("JOBS_LOCAL_GID", 65534, minimum=1)
JOBS_LOCAL_UID_BASE = envint("JOBS_LOCAL_UID_BASE", 1_000_000_000, minimum=0)
JOBS_LOCAL_UID_COUNT = envint("JOBS_LOCAL_UID_COUNT", 1_000_000, minimum=1)
if JOBS_LOCAL_UID_BASE + JOBS_LOCAL_UID_COUNT > 2**32 - 2:
    raise ImproperlyConfigured("JOBS_LOCAL_UID_BASE + JOBS_LOCAL_UID_COUNT must stay below 4294967294 (uid_t).")
JOBS_LOCAL_MAX_PROCESSES = envint("JOBS_LOCAL_MAX_PROCESSES", 4096, minimum=16)
# What a local job's work dir and checkpoints may hold on disk together (a quantity: "20Gi", "500Mi"; 0: no limit):
# past it the job is stopped (disk_quota_exceeded). Its /tmp (memory) is as large.
JOBS_DISK_QUOTA = envstr("JOBS_DISK_QUOTA", "20Gi")
if not re.fullmatch(r"\d+(\.\d+)?([KMGTP]i?)?", JOBS_DISK_QUOTA):
    raise ImproperlyConfigured(f"JOBS_DISK_QUOTA must be a quantity such as 20Gi or 500Mi, got {JOBS_DISK_QUOTA!r}.")
# Finished attempts' work dirs and the checkpoints of jobs that are over are removed after this many days (the
# reconciler); their logs stay.
JOBS_LOCAL_KEEP_DAYS = envint("JOBS_LOCAL_KEEP_DAYS", 7, minimum=1)
JOBS_LOG_MAX_BYTES = envint("JOBS_LOG_MAX_BYTES", 64 * 1024 * 1024, minimum=1024)
# One answer of the logs API (and the job page) holds at most this much of a log; more is paged by byte offsets.
# From Kubernetes the portal also reads no further than JOBS_LOG_MAX_BYTES into a pod's log per request.
JOBS_LOG_RESPONSE_MAX_BYTES = envint("JOBS_LOG_RESPONSE_MAX_BYTES", 1024 * 1024, minimum=1024)
# Following a log (?follow=1, jobs/log_follow.py): a read every POLL_MS, the job's state every STATE_MS, and a stream
# ends after MAX_S at the latest (the client resumes with ?since=).
JOBS_LOG_FOLLOW_POLL_S = envint("JOBS_LOG_FOLLOW_POLL_MS", 500, minimum=50, maximum=10_000) / 1000
JOBS_LOG_FOLLOW_STATE_S = envint("JOBS_LOG_FOLLOW_STATE_MS", 2000, minimum=100, maximum=60_000) / 1000
JOBS_LOG_FOLLOW_MAX_S = envint("JOBS_LOG_FOLLOW_MAX_S", 3600, minimum=1, maximum=24 * 3600)
JOBS_NAMESPACE = envstr("JOBS_NAMESPACE", "gpu-lab-jobs")
# Local backend: one directory per job attempt (pid, exit status, log) and per job (checkpoints).
JOBS_LOCAL_DIR = Path(envstr("JOBS_LOCAL_DIR", str(VAR_DIR / "jobs")))
# SIGTERM, then this long to write a checkpoint, then SIGKILL: for preemption and cancel alike.
JOBS_STOP_GRACE_S = envint("JOBS_STOP_GRACE_S", 120, minimum=0, maximum=3600)
JOBS_PREEMPT_GRACE_S = JOBS_STOP_GRACE_S
# Work younger than this is not preempted for fair share or priority (Slurm's PreemptExemptTime).
JOBS_PREEMPT_EXEMPT_S = envint("JOBS_PREEMPT_EXEMPT_S", 600, minimum=0)
# Usage counts half after this long in the fair-share factor (Slurm's default: 7 days).
JOBS_FAIRSHARE_HALF_LIFE_S = envint("JOBS_FAIRSHARE_HALF_LIFE_S", 7 * 24 * 3600, minimum=3600)
JOBS_SCHEDULE_INTERVAL_S = envint("JOBS_SCHEDULE_INTERVAL_S", 30, minimum=5)
# Kubernetes Job details: finished Jobs are garbage-collected after the TTL; the portal retries by attempt.
JOBS_TTL_AFTER_FINISHED_S = envint("JOBS_TTL_AFTER_FINISHED_S", 24 * 3600, minimum=0)
JOBS_BACKOFF_LIMIT = envint("JOBS_BACKOFF_LIMIT", 0, minimum=0, maximum=10)
JOBS_RUN_AS_USER = envint("JOBS_RUN_AS_USER", 1000, minimum=1)
JOBS_RUN_AS_GROUP = envint("JOBS_RUN_AS_GROUP", 1000, minimum=1)
JOBS_CPU_PER_GPU = envstr("JOBS_CPU_PER_GPU", "4")
JOBS_MEMORY_PER_GPU = envstr("JOBS_MEMORY_PER_GPU", "24Gi")
JOBS_SHM_SIZE = envstr("JOBS_SHM_SIZE", "8Gi")
# Taint keys of the GPU nodes that job pods tolerate (operator Exists).
JOBS_TOLERATIONS = envlist("JOBS_TOLERATIONS", ["nvidia.com/gpu"])
# Each job's writable checkpoint claim (empty class: the cluster's default); datasets are existing read-only claims.
JOBS_CHECKPOINT_STORAGE_CLASS = envstr("JOBS_CHECKPOINT_STORAGE_CLASS", "")
JOBS_CHECKPOINT_SIZE = envstr("JOBS_CHECKPOINT_SIZE", "20Gi")
# The node pool's network for multi-node jobs (torchrun rendezvous, NCCL); empty means NCCL picks.
JOBS_MASTER_PORT = envint("JOBS_MASTER_PORT", 29500, minimum=1024, maximum=65535)
JOBS_NCCL_SOCKET_IFNAME = envstr("JOBS_NCCL_SOCKET_IFNAME", "")
JOBS_NCCL_IB_HCA = envstr("JOBS_NCCL_IB_HCA", "")
# Images every job and notebook profile may use besides the admin console's allow-list (an exact reference, or a
# pattern with *): one allow-list for both (labs/images.py).
JOBS_IMAGE_ALLOW = envlist(
    "JOBS_IMAGE_ALLOW", ["pytorch/pytorch:*", "nvcr.io/nvidia/pytorch:*", "python:3.12-slim", "quay.io/jupyter/*"]
)
# Bounds on a job's max_runtime_s (the policy plans with it; the backend kills the job when it is reached).
JOBS_MIN_RUNTIME_S = envint("JOBS_MIN_RUNTIME_S", 60, minimum=1)
JOBS_MAX_RUNTIME_S = envint("JOBS_MAX_RUNTIME_S", 7 * 24 * 3600, minimum=60)
# How often running jobs' status is read from the backend (start, finish, stop).
JOBS_FOLLOW_INTERVAL_S = envint("JOBS_FOLLOW_INTERVAL_S", 5, minimum=1)
CELERY_BEAT_SCHEDULE["jobs-schedule"] = {
    "task": "jobs.tasks.schedule_pass",
    "schedule": float(JOBS_SCHEDULE_INTERVAL_S),
}
CELERY_BEAT_SCHEDULE["jobs-follow"] = {"task": "jobs.tasks.follow", "schedule": float(JOBS_FOLLOW_INTERVAL_S)}
# An attempt whose Job (or process) vanished under it is queued again as the next attempt, as a preemption is, while
# the job is preemptible and below this many attempts; otherwise it fails with the reason (0: always fail).
JOBS_LOST_MAX_ATTEMPTS = envint("JOBS_LOST_MAX_ATTEMPTS", 5, minimum=0, maximum=100)

# --- Reconciler (labs/reconcile.py): the ledger, jobs and notebooks against what the backends run
# Which portal this is: its Kubernetes Jobs carry it as a label, and it stops only what carries its own.
PORTAL_INSTANCE_ID = envstr("PORTAL_INSTANCE_ID", "default")
if not re.fullmatch(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?", PORTAL_INSTANCE_ID):
    raise ImproperlyConfigured("PORTAL_INSTANCE_ID must be a Kubernetes label value (letters, digits, -_.).")
# How often beat runs a reconcile pass, and how long something the portal does not know (a Job, a hub server) or a
# starting attempt the cluster never shows is left alone before it is stopped or given up.
RECONCILE_INTERVAL_S = envint("RECONCILE_INTERVAL_S", 60, minimum=5)
RECONCILE_GRACE_S = envint("RECONCILE_GRACE_S", 300, minimum=0)
CELERY_BEAT_SCHEDULE["reconcile"] = {"task": "labs.tasks.reconcile", "schedule": float(RECONCILE_INTERVAL_S)}

# --- OAuth provider (the hub's one login)
# The portal is the OpenID Connect provider the notebook hub logs people in through (portal/oauth): authorization
# code with PKCE (S256) and a client secret, no consent page for the hub, ID tokens signed with RS256. The hub's
# client is written by `manage.py hub_oauth_client` from HUB_OAUTH_CLIENT_ID/SECRET (the Notebooks block).
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

# --- University sign-in (accounts/signin): OpenID Connect, LDAP, and what their groups give people
# OpenID Connect (mozilla-django-oidc, authorization code + PKCE S256 + nonce): the university's issuer, e.g.
# https://keycloak.uni.example/realms/uni or https://login.microsoftonline.com/<tenant>/v2.0; the portal reads its
# discovery document (<issuer>/.well-known/openid-configuration). Empty: no "Sign in with ..." button.
# (OIDC_ISSUER, above, is the portal's own issuer as the hub's provider: another thing.)
OIDC_PROVIDER_URL = envstr("OIDC_PROVIDER_URL", "").rstrip("/")
OIDC_PROVIDER_NAME = envstr("OIDC_PROVIDER_NAME", "your university")  # the button: "Sign in with <name>"
OIDC_RP_CLIENT_ID = envstr("OIDC_RP_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET = envstr("OIDC_RP_CLIENT_SECRET", "")
if OIDC_PROVIDER_URL and not (OIDC_RP_CLIENT_ID and OIDC_RP_CLIENT_SECRET):
    raise ImproperlyConfigured(
        "OIDC_PROVIDER_URL needs OIDC_RP_CLIENT_ID and OIDC_RP_CLIENT_SECRET (the portal's client)."
    )
OIDC_RP_SCOPES = envstr("OIDC_RP_SCOPES", "openid profile email")
if OIDC_PROVIDER_URL and "openid" not in OIDC_RP_SCOPES.split():
    raise ImproperlyConfigured("OIDC_RP_SCOPES must include openid.")
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

# LDAP (django-auth-ldap) for departments without OIDC: people sign in with the password form.
LDAP_SERVER_URI = envstr("LDAP_SERVER_URI", "")  # e.g. ldaps://ldap.dept.example
LDAP_PROVIDER_NAME = envstr("LDAP_PROVIDER_NAME", "department")
LDAP_BIND_DN = envstr("LDAP_BIND_DN", "")
LDAP_BIND_PASSWORD = envstr("LDAP_BIND_PASSWORD", "")
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
if LDAP_SERVER_URI and not (LDAP_USER_SEARCH_BASE and LDAP_GROUP_SEARCH_BASE):
    raise ImproperlyConfigured("LDAP_SERVER_URI needs LDAP_USER_SEARCH_BASE and LDAP_GROUP_SEARCH_BASE.")
# The nightly sync (LDAP): everyone who ever signed in through LDAP gets their groups applied again, so a person
# who left a course's group loses it without signing in. At SIGNIN_SYNC_HOUR:15 in Celery's zone (UTC).
SIGNIN_SYNC_HOUR = envint("SIGNIN_SYNC_HOUR", 3, minimum=0, maximum=23)
if LDAP_SERVER_URI:
    from celery.schedules import crontab

    CELERY_BEAT_SCHEDULE["signin-sync"] = {
        "task": "accounts.tasks.signin_sync",
        "schedule": crontab(hour=SIGNIN_SYNC_HOUR, minute=15),
    }

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

# Each answers only when configured (the LDAP one with LDAP_SERVER_URI, the OIDC one on its callback).
AUTHENTICATION_BACKENDS = [
    # First: a locked (username, address) is refused before any password check (password sign-ins only: the form,
    # the token endpoint, the admin console; LDAP's passwords too). Single sign-on is not its business.
    "portal.web.lockout.PasswordLockoutBackend",
    "accounts.signin.backends.LocalPasswordBackend",
    "accounts.signin.ldap.PortalLDAPBackend",
    "accounts.signin.oidc.PortalOIDCBackend",
]

# --- Rate limits (accounts/ratelimit.py)
# Per person and action, in a sliding window of RATE_LIMIT_WINDOW_S, counted in the cache (Redis with REDIS_URL):
# beyond it the API answers 429 `rate_limited` with Retry-After and the pages say when to try again. 0 turns one
# off. A class start (every student pressing Start once or twice) stays far below them. When the cache does not
# answer, requests go through (and the log says so) rather than fail.
RATE_LIMIT_WINDOW_S = envint("RATE_LIMIT_WINDOW_S", 60, minimum=1, maximum=24 * 3600)
RATE_LIMIT_JOB_SUBMIT = envint("RATE_LIMIT_JOB_SUBMIT", 30, minimum=0)
RATE_LIMIT_NOTEBOOK_START = envint("RATE_LIMIT_NOTEBOOK_START", 20, minimum=0)
RATE_LIMIT_RESERVATION_CREATE = envint("RATE_LIMIT_RESERVATION_CREATE", 20, minimum=0)
# The cache (an alias of CACHES) that holds the counters, and their key prefix.
RATE_LIMIT_CACHE = envstr("RATE_LIMIT_CACHE", "default")
RATE_LIMIT_KEY_PREFIX = envstr("RATE_LIMIT_KEY_PREFIX", "ratelimit")
if RATE_LIMIT_CACHE not in CACHES:
    raise ImproperlyConfigured(f"RATE_LIMIT_CACHE must name one of the caches ({', '.join(CACHES)}).")

# --- Notebooks (JupyterHub)
# The portal is the front door: it queues, places and starts notebooks through the hub's REST API with its
# service token, and people open them through the hub's proxy after one login at the portal (OAuth 2 / OIDC).
NOTEBOOKS_HUB_API_URL = envstr("NOTEBOOKS_HUB_API_URL", "http://127.0.0.1:8081/hub/api").rstrip("/")
# The hub's proxy as browsers reach it: notebook links point here.
NOTEBOOKS_HUB_PUBLIC_URL = envstr("NOTEBOOKS_HUB_PUBLIC_URL", "http://127.0.0.1:8001").rstrip("/")
NOTEBOOKS_HUB_TOKEN = envstr("NOTEBOOKS_HUB_TOKEN", "")
if not NOTEBOOKS_HUB_TOKEN:
    if not DEBUG:
        raise ImproperlyConfigured("NOTEBOOKS_HUB_TOKEN (the portal's JupyterHub service token) must be set.")
    NOTEBOOKS_HUB_TOKEN = "insecure-development-hub-token"  # noqa: S105
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
CELERY_BEAT_SCHEDULE["notebooks-tick"] = {"task": "labs.tasks.notebooks_tick", "schedule": float(NOTEBOOKS_TICK_S)}
# Ceilings of every notebook profile, whoever writes it (teachers, admins, the console): what one notebook may ask
# for. A profile above them is not saved, and one saved before they were lowered does not start.
NOTEBOOKS_MAX_CPU = envint("NOTEBOOKS_MAX_CPU", 8, minimum=1, maximum=64)
NOTEBOOKS_MAX_MEMORY_GB = envint("NOTEBOOKS_MAX_MEMORY_GB", 32, minimum=1, maximum=256)
NOTEBOOKS_MAX_SESSION_H = envint("NOTEBOOKS_MAX_SESSION_H", 12, minimum=1, maximum=72)

# The hub's OAuth client at the portal (the provider): `manage.py hub_oauth_client` writes it from these.
HUB_OAUTH_CLIENT_ID = envstr("HUB_OAUTH_CLIENT_ID", "jupyterhub")
HUB_OAUTH_CLIENT_SECRET = envstr("HUB_OAUTH_CLIENT_SECRET", "")
if not HUB_OAUTH_CLIENT_SECRET:
    if not DEBUG:
        raise ImproperlyConfigured("HUB_OAUTH_CLIENT_SECRET (the hub's OAuth client secret) must be set.")
    HUB_OAUTH_CLIENT_SECRET = "insecure-development-hub-oauth-secret"  # noqa: S105

# --- Where user code runs
# Students' jobs and notebooks run on the cluster (JOBS_BACKEND=kubernetes, HUB_SPAWNER=kubernetes: the hub's
# spawner, which compose passes to the hub and the portal alike). "local" runs them as processes on this machine,
# always in a bubblewrap sandbox (jobs/backends/sandbox.py): for development (DEBUG) and, declared with
# SINGLE_MACHINE_LAB=true, a lab that is one machine. Anything else outside DEBUG refuses to start.
SINGLE_MACHINE_LAB = envbool("SINGLE_MACHINE_LAB", default=False)
HUB_SPAWNER = envchoice("HUB_SPAWNER", "local" if DEBUG else "kubernetes", ("local", "echo", "kubernetes"))
for _name, _value in (("JOBS_BACKEND", JOBS_BACKEND), ("HUB_SPAWNER", HUB_SPAWNER)):
    if _value == "local" and not DEBUG and not SINGLE_MACHINE_LAB:
        raise ImproperlyConfigured(
            f"{_name}=local runs students' code on this machine: outside DEBUG use kubernetes, or declare a lab "
            "that is one machine with SINGLE_MACHINE_LAB=true (local jobs and notebooks, always sandboxed)."
        )

# --- Static files ----------------------------------------------------------------------

STATIC_URL = "static/"
STATIC_ROOT = Path(envstr("STATIC_ROOT", str(VAR_DIR / "static")))
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}
WHITENOISE_USE_FINDERS = DEBUG

# --- Security --------------------------------------------------------------------------

SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if envbool("BEHIND_TLS_PROXY", False) else None
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", default=not DEBUG)
# Probes and scrapers talk plain HTTP inside the cluster.
# ... and so does the hub, server to server, for its OAuth token and userinfo calls (PORTAL_INTERNAL_URL).
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$", r"^o/(token|userinfo|revoke_token)/$"]
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=not DEBUG)
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", default=not DEBUG)
SESSION_COOKIE_SECURE = envbool("SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = envbool("CSRF_COOKIE_SECURE", default=not DEBUG)
SESSION_COOKIE_AGE = envint("SESSION_COOKIE_AGE", 60 * 60 * 12, minimum=300)
X_FRAME_OPTIONS = "DENY"
SECURE_REFERRER_POLICY = "same-origin"

# Content-Security-Policy (django-csp): scripts only from the portal's own files, never inline (every page's
# behaviour lives in static/js/; confirmations are data-confirm attributes read by static/js/portal.js). Style
# attributes stay allowed (style-src-attr: the bars' and the timeline's computed widths), <style> and stylesheets
# only from 'self'. WebSockets (/ws/gpus/) are 'self'. The API docs pages add their CDN (portal/urls.py).
# CSP_REPORT_ONLY=true sends the same policy as Content-Security-Policy-Report-Only (to try a change first).
_CSP_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "script-src-attr": ["'none'"],
        "style-src": ["'self'"],
        "style-src-attr": ["'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}
CSP_REPORT_ONLY = envbool("CSP_REPORT_ONLY", False)
if CSP_REPORT_ONLY:
    CONTENT_SECURITY_POLICY_REPORT_ONLY = _CSP_POLICY
    CONTENT_SECURITY_POLICY = None
else:
    CONTENT_SECURITY_POLICY = _CSP_POLICY

# Bearer token /metrics asks for; without it /metrics is open only in DEBUG (elsewhere 403, and check --deploy warns).
METRICS_TOKEN = envstr("METRICS_TOKEN", "")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": envstr("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

# --- Telemetry -------------------------------------------------------------------------
# Where live GPU samples come from: a simulator of the lab's RTX 4090s (the default: run command, demo,
# tests), a scrape of each node's dcgm-exporter, a Prometheus server that scrapes them, or the NVML
# agents' pushes (manage.py gpu_agent on each node, with a node token).
TELEMETRY_SOURCE = envchoice("TELEMETRY_SOURCE", "simulator", ("simulator", "dcgm", "prometheus", "agent"))
# Who runs the collector: the web server's process (embedded: the in-memory channel layer is per process),
# a process of its own (manage.py telemetry_collect, publishing through Redis), or nobody.
TELEMETRY_COLLECTOR = envchoice(
    "TELEMETRY_COLLECTOR", "process" if REDIS_URL else "embedded", ("embedded", "process", "off")
)
if TELEMETRY_COLLECTOR == "process" and not REDIS_URL:
    raise ImproperlyConfigured("TELEMETRY_COLLECTOR=process needs REDIS_URL: the web servers hear it through Redis.")
TELEMETRY_INTERVAL_MS = envint("TELEMETRY_INTERVAL_MS", 1000, minimum=100, maximum=60_000)
TELEMETRY_STALE_AFTER_S = envint("TELEMETRY_STALE_AFTER_S", 30, minimum=2)
TELEMETRY_HISTORY_DAYS = envint("TELEMETRY_HISTORY_DAYS", 14, minimum=1)
TELEMETRY_DCGM_URL = envstr("TELEMETRY_DCGM_URL", "http://{node}:9400/metrics")
if "{node}" not in TELEMETRY_DCGM_URL:
    raise ImproperlyConfigured("TELEMETRY_DCGM_URL must contain {node}, e.g. http://{node}:9400/metrics")
TELEMETRY_PROMETHEUS_URL = envstr("TELEMETRY_PROMETHEUS_URL", "")
if TELEMETRY_SOURCE == "prometheus" and not TELEMETRY_PROMETHEUS_URL:
    raise ImproperlyConfigured("TELEMETRY_SOURCE=prometheus needs TELEMETRY_PROMETHEUS_URL.")
TELEMETRY_PROMETHEUS_NODE_LABELS = envlist(
    "TELEMETRY_PROMETHEUS_NODE_LABELS", ["Hostname", "kubernetes_node", "node", "instance"]
)
TELEMETRY_SCRAPE_TIMEOUT_MS = envint("TELEMETRY_SCRAPE_TIMEOUT_MS", 800, minimum=50)
TELEMETRY_SIMULATOR_FAULTS = envlist("TELEMETRY_SIMULATOR_FAULTS", [])  # e.g. gpu07:temp,gpu13:xid
TELEMETRY_TEMP_ALERT_C = envint("TELEMETRY_TEMP_ALERT_C", 87, minimum=40, maximum=130)
TELEMETRY_TEMP_ALERT_AFTER_S = envint("TELEMETRY_TEMP_ALERT_AFTER_S", 10, minimum=0)
try:
    # Xid codes that are usually the application's doing, not the GPU's: no alert.
    TELEMETRY_XID_IGNORED = [int(code) for code in envlist("TELEMETRY_XID_IGNORED", ["13", "31", "43", "45"])]
except ValueError:
    raise ImproperlyConfigured("TELEMETRY_XID_IGNORED must be a comma-separated list of Xid numbers.") from None
# Updates waiting for one slow WebSocket client before it gets a fresh snapshot instead of the backlog.
TELEMETRY_CLIENT_QUEUE = envint("TELEMETRY_CLIENT_QUEUE", 30, minimum=2)
TELEMETRY_VIEWER_REFRESH_S = envint("TELEMETRY_VIEWER_REFRESH_S", 300, minimum=5)
# A client's {"type": "resync"} gets a snapshot at most once per this many seconds per connection (0: every time);
# one asked for sooner comes in place of the first update after the interval, however many were asked meanwhile.
TELEMETRY_RESYNC_MIN_S = envint("TELEMETRY_RESYNC_MIN_S", 5, minimum=0, maximum=3600)
TELEMETRY_AGENT_MAX_GPUS = envint("TELEMETRY_AGENT_MAX_GPUS", 16, minimum=1)
# --- Usage and efficiency (labs/usage) --------------------------------------------------------------------------------
# A minute of a holder's GPU under this utilisation (percent) counts as idle GPU time.
USAGE_IDLE_UTIL_PCT = envint("USAGE_IDLE_UTIL_PCT", 5, minimum=0, maximum=100)
# How often beat refreshes the efficiency rows of running holders and of holders ended without one (seconds).
USAGE_EFFICIENCY_REFRESH_S = envint("USAGE_EFFICIENCY_REFRESH_S", 600, minimum=30)
# Holders ended within this many days are (re)computed by the refresh; the telemetry history must reach that far
# back plus the longest holder, so it is kept at least USAGE_EFFICIENCY_DAYS + 7 days whatever TELEMETRY_HISTORY_DAYS.
USAGE_EFFICIENCY_DAYS = envint("USAGE_EFFICIENCY_DAYS", 2, minimum=1, maximum=60)
TELEMETRY_HISTORY_DAYS = max(TELEMETRY_HISTORY_DAYS, USAGE_EFFICIENCY_DAYS + 7)
# The lab's terms for the `term` bucket of usage reports: the month-day each term starts, in the lab's zone, read
# as sorted (month, day) pairs.
USAGE_TERM_STARTS = envmonthdays("USAGE_TERM_STARTS", ["02-01", "08-01"])
CELERY_BEAT_SCHEDULE["usage-efficiency-refresh"] = {
    "task": "labs.tasks.usage_efficiency_refresh",
    "schedule": float(USAGE_EFFICIENCY_REFRESH_S),
}
# Celery queues whose lengths /metrics reports.
PORTAL_METRICS_QUEUES = envlist("PORTAL_METRICS_QUEUES", ["celery"])

# --- Budgets, alerts and e-mail (labs/budgets) -----------------------------------------------------------------------
# Budgets' prices and costs are in this currency (an ISO code or symbol, shown as is).
USAGE_CURRENCY = envstr("USAGE_CURRENCY", "EUR")
# Alert at these percentages of a budget (a budget may set its own); each once per budget and period.
BUDGET_ALERT_THRESHOLDS = envstr("BUDGET_ALERT_THRESHOLDS", "50,80,100")
try:
    from labs.budgets.validation import parse_thresholds as _parse_thresholds

    _parse_thresholds(BUDGET_ALERT_THRESHOLDS)
except ValueError as _why:
    raise ImproperlyConfigured(f"BUDGET_ALERT_THRESHOLDS: {_why}") from None
BUDGETS_CHECK_INTERVAL_S = envint("BUDGETS_CHECK_INTERVAL_S", 300, minimum=10)
BUDGETS_CHECK_ON_END = envbool("BUDGETS_CHECK_ON_END", default=True)  # also check right after work ends
CELERY_BEAT_SCHEDULE["budgets-check"] = {
    "task": "labs.tasks.budgets_check",
    "schedule": float(BUDGETS_CHECK_INTERVAL_S),
}
# The weekly usage summary (teachers: their courses; admins: the lab) goes out from this hour on Monday (lab time);
# beat looks every USAGE_REPORT_CHECK_S whether someone is due it.
USAGE_REPORT_HOUR = envint("USAGE_REPORT_HOUR", 7, minimum=0, maximum=23)
USAGE_REPORT_CHECK_S = envint("USAGE_REPORT_CHECK_S", 3600, minimum=60)
CELERY_BEAT_SCHEDULE["usage-weekly-report"] = {
    "task": "labs.tasks.usage_weekly_report",
    "schedule": float(USAGE_REPORT_CHECK_S),
}
# E-mail (budget alerts, weekly summaries, roster invitations): the console (printed by the process) in the
# embedded run; SMTP when EMAIL_HOST is set.
EMAIL_HOST = envstr("EMAIL_HOST", "")
EMAIL_BACKEND = envstr(
    "EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend" if EMAIL_HOST else "django.core.mail.backends.console.EmailBackend",
)
EMAIL_PORT = envint("EMAIL_PORT", 587 if EMAIL_HOST else 25, minimum=1, maximum=65535)
EMAIL_HOST_USER = envstr("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = envstr("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = envbool("EMAIL_USE_TLS", default=bool(EMAIL_HOST))
EMAIL_USE_SSL = envbool("EMAIL_USE_SSL", default=False)
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured("Set EMAIL_USE_TLS or EMAIL_USE_SSL, not both.")
EMAIL_TIMEOUT = envint("EMAIL_TIMEOUT_S", 10, minimum=1, maximum=300)
DEFAULT_FROM_EMAIL = envstr("DEFAULT_FROM_EMAIL", f"{LAB_NAME} <gpu-lab@localhost>")

# --- The lab's cluster (deploy/README.md: Canal, Rook-Ceph, HAMi, storage tiers, multi-node training) ---------------
# The NetworkPolicy self-check (portal/netcheck.py): the canary's port every policy refuses to web, and the one they
# admit (deploy/components/netpolicy-check), as host:port; empty: the check is off (the embedded run).
try:
    from portal.netcheck import parse_address as _parse_address

    NETPOLICY_CANARY = envstr("NETPOLICY_CANARY", "").strip()
    NETPOLICY_CANARY_CONTROL = envstr("NETPOLICY_CANARY_CONTROL", "").strip()
    _parse_address(NETPOLICY_CANARY, name="NETPOLICY_CANARY")
    _parse_address(NETPOLICY_CANARY_CONTROL, name="NETPOLICY_CANARY_CONTROL")
except ValueError as _why:
    raise ImproperlyConfigured(str(_why)) from None
NETPOLICY_CHECK_TIMEOUT_MS = envint("NETPOLICY_CHECK_TIMEOUT_MS", 1000, minimum=100, maximum=4000)
# Jobs on the lab's cluster (jobs/backends/resources.py). GPU sharing: none (whole GPUs only), timeslice (the
# device plugin's replicas), hami (gpumem/gpucores caps; with its scheduler) or mps; a job may then ask for a part
# of one GPU. JOBS_GPU_MEMORY_MB is one GPU's memory (an RTX 4090's), which a part of it is taken of.
JOBS_GPU_SHARING = envchoice("JOBS_GPU_SHARING", "none", ("none", "timeslice", "hami", "mps"))
JOBS_GPU_REPLICAS = envint("JOBS_GPU_REPLICAS", 4, minimum=1, maximum=64)
JOBS_GPU_MEMORY_MB = envint("JOBS_GPU_MEMORY_MB", 24564, minimum=1024)
JOBS_SCHEDULER_NAME = envstr("JOBS_SCHEDULER_NAME", "")
# Storage tiers: scratch on the node (empty class: an emptyDir on the node's disk), bulk on a shared class; the
# most each role may ask for ("role:scratch=SIZE,bulk=SIZE;..."; a role not listed may ask for neither).
JOBS_SCRATCH_STORAGE_CLASS = envstr("JOBS_SCRATCH_STORAGE_CLASS", "")
JOBS_BULK_STORAGE_CLASS = envstr("JOBS_BULK_STORAGE_CLASS", "")
try:
    from jobs.backends.resources import parse_storage_limits as _parse_storage_limits

    JOBS_STORAGE_LIMITS = _parse_storage_limits(
        envstr(
            "JOBS_STORAGE_LIMITS",
            "student:scratch=50Gi,bulk=100Gi;teacher:scratch=200Gi,bulk=1Ti;admin:scratch=500Gi,bulk=2Ti",
        )
    )
except ValueError as _why:
    raise ImproperlyConfigured(f"JOBS_STORAGE_LIMITS: {_why}") from None
# Multi-node training on the lab's network: NCCL_IB_DISABLE ("" leaves NCCL's default; "1" on Ethernet only), an
# RDMA device resource each pod asks for (e.g. rdma/rdma_shared_device_a; it adds IPC_LOCK), IPC_LOCK alone, and
# the host's network for multi-node pods (outside every NetworkPolicy: deploy/README.md).
JOBS_NCCL_IB_DISABLE = envchoice("JOBS_NCCL_IB_DISABLE", "", ("", "0", "1"))
JOBS_RDMA_RESOURCE = envstr("JOBS_RDMA_RESOURCE", "")
JOBS_IPC_LOCK = envbool("JOBS_IPC_LOCK", default=False)
JOBS_HOST_NETWORK = envbool("JOBS_HOST_NETWORK", default=False)
# The kiosk page (/kiosk/, portal/web/kiosk.py): the slug of the notebook profile a lab machine's seat starts.
KIOSK_PROFILE = envstr("KIOSK_PROFILE", "desktop").strip()
