"""The embedded path under test: the same settings as tests/settings.py, but on SQLite, as `scripts/run.sh` runs.

`scripts/test.sh` runs the reservation, job and notebook service tests a second time with these settings, so the
SQLite branches that the run command takes (the overlap check after insert, the scheduling pass without an advisory
lock, BEGIN IMMEDIATE and the write-lock wait) are exercised too. Tests that need PostgreSQL itself (its exclusion
constraint) carry the `postgresql_only` marker and are skipped here.
"""

import os
import tempfile

from tests.settings import *  # noqa: F403

TESTS_ON_SQLITE = True
_name = os.environ.get("PORTAL_TEST_DB") or f"test_portal_{os.getpid()}"
DATABASES["default"] = {  # noqa: F405
    "ENGINE": "django.db.backends.sqlite3",
    "NAME": os.path.join(tempfile.gettempdir(), f"{_name}.sqlite3"),
    # As portal/settings/data.py sets for the embedded run: wait for the write lock, take it at BEGIN, WAL.
    "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE", "init_command": "PRAGMA journal_mode=WAL;"},
    # A file, not :memory:, so the threads of the race tests share one database as the run command's processes do.
    "TEST": {"NAME": os.path.join(tempfile.gettempdir(), f"{_name}-test.sqlite3")},
    "CONN_MAX_AGE": 0,
    "CONN_HEALTH_CHECKS": False,
    "ATOMIC_REQUESTS": False,
    "AUTOCOMMIT": True,
    "TIME_ZONE": None,
    "USER": "",
    "PASSWORD": "",
    "HOST": "",
    "PORT": "",
}
