"""Where data lives: the database (SQLite embedded, PostgreSQL with DATABASE_URL, an optional pool), Redis (cache and
channel layer; Celery's broker in workers.py), or memory when there is no REDIS_URL."""

from __future__ import annotations

import dj_database_url

from accounts.env import envbool, envint, envstr
from portal.settings.base import VAR_DIR

# --- Data stores -----------------------------------------------------------------------

# Under ASGI every request runs its sync code in a thread of its own, so a persistent connection (CONN_MAX_AGE)
# is one connection per request thread that nobody reuses: under load PostgreSQL runs out of connections. So
# connections close at the end of each request or task by default (DATABASE_CONN_MAX_AGE 0, Django's default);
# a Celery worker or the collector may keep theirs (DATABASE_CONN_MAX_AGE=60), the ASGI server refuses to start
# with it on PostgreSQL (portal/asgi.py, portal.checks.asgi_database_problem).
# DATABASE_POOL=true (PostgreSQL only) shares a psycopg pool per process instead: each request borrows one of at
# most DATABASE_POOL_MAX_SIZE connections, waiting up to DATABASE_POOL_TIMEOUT_S for one; size it so that
# processes x max size stays below PostgreSQL's max_connections (100 by default) with room for the rest.
# A pool that cannot work (not PostgreSQL, DATABASE_CONN_MAX_AGE set, max below min) stops the start: the checks
# portal.E002-E004 (portal/checks.py).
DATABASE_POOL = envbool("DATABASE_POOL", default=False)
DATABASES = {
    "default": dj_database_url.parse(
        envstr("DATABASE_URL", f"sqlite:///{VAR_DIR / 'portal.sqlite3'}"),
        conn_max_age=envint("DATABASE_CONN_MAX_AGE", 0, minimum=0),
        conn_health_checks=True,
    )
}
if DATABASE_POOL:
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": envint("DATABASE_POOL_MIN_SIZE", 2, minimum=0, maximum=500),
        "max_size": envint("DATABASE_POOL_MAX_SIZE", 10, minimum=1, maximum=500),
        "timeout": envint("DATABASE_POOL_TIMEOUT_S", 10, minimum=1, maximum=300),
    }
if DATABASES["default"]["ENGINE"].endswith("postgresql"):
    # PostgreSQL's JIT compiles any query its planner costs high, and for this portal that only ever cost time (1.7 s
    # of JIT for 0.15 s of work on a report, bench/USAGE_PLANS.md): off for every connection, so the reports and the
    # fair-share read no longer set it per transaction (labs.ledger.without_jit still does where a DATABASES
    # override leaves it on).
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault("options", "-c jit=off")
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
