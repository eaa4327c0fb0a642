"""The settings (portal/settings/): values read by the typed helpers of accounts/env.py, which stop the settings'
import on a value they cannot read, and values that are wrong only together, which are system checks (tag
"settings") that stop every process at its start: manage.py commands run them, and the ASGI and WSGI apps and
Celery's workers and beat refuse to load on an error (portal.checks.refuse_to_start_misconfigured)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core import checks
from django.core.exceptions import ImproperlyConfigured

from accounts.env import envbool, envchoice, envint, envintlist, envlist, envmatch, envmonthdays, envrate
from portal.checks import refuse_to_start_misconfigured
from tests.test_deploy import PRODUCTION_ENV

ROOT = Path(__file__).resolve().parent.parent.parent


def test_helpers_read_values(monkeypatch):
    monkeypatch.setenv("X_BOOL", "yes")
    monkeypatch.setenv("X_INT", "42")
    monkeypatch.setenv("X_LIST", "a, b,,c")
    assert envbool("X_BOOL", False) is True
    assert envint("X_INT", 1) == 42
    assert envlist("X_LIST", []) == ["a", "b", "c"]
    assert envint("X_UNSET", 7) == 7


@pytest.mark.parametrize(
    "call,value",
    [
        (lambda: envbool("X", False), "maybe"),
        (lambda: envint("X", 1), "ten"),
        (lambda: envint("X", 1, minimum=5), "3"),
        (lambda: envchoice("X", "local", ("local", "kubernetes")), "k8s"),
    ],
)
def test_bad_values_stop_the_start(monkeypatch, call, value):
    monkeypatch.setenv("X", value)
    with pytest.raises(ImproperlyConfigured, match="X must"):
        call()


def test_the_helpers_for_rates_patterns_and_lists_of_numbers(monkeypatch):
    monkeypatch.setenv("X_RATE", " 5/hour ")
    monkeypatch.setenv("X_LABEL", "lab-2")
    monkeypatch.setenv("X_CODES", "13, 31")
    assert envrate("X_RATE", "20/min") == "5/hour"
    assert envmatch("X_LABEL", "default", r"[a-z0-9-]+", "must be a label.") == "lab-2"
    assert envintlist("X_CODES", ["1"], what="Xid numbers") == [13, 31]
    assert envintlist("X_UNSET", ["1", "2"]) == [1, 2]
    monkeypatch.setenv("X_LABEL", "lab 2")
    with pytest.raises(ImproperlyConfigured, match="^X_LABEL must be a label.$"):
        envmatch("X_LABEL", "default", r"[a-z0-9-]+", "must be a label.")
    monkeypatch.setenv("X_CODES", "13,thirty-one")
    with pytest.raises(ImproperlyConfigured, match="^X_CODES must be a comma-separated list of Xid numbers.$"):
        envintlist("X_CODES", ["1"], what="Xid numbers")


def _settings_in_subprocess(env: dict[str, str], *, start: bool = False) -> subprocess.CompletedProcess:
    """Import the settings (start=False) or start the WSGI app: Django set up, then the start checks."""
    base = {k: v for k, v in os.environ.items() if k not in ("JOBS_BACKEND", "HUB_SPAWNER", "SINGLE_MACHINE_LAB")}
    base.pop("DJANGO_SETTINGS_MODULE", None)
    code = "import portal.settings as s; print(s.JOBS_BACKEND, s.HUB_SPAWNER)"
    if start:
        code = "import portal.wsgi; from django.conf import settings as s; print(s.JOBS_BACKEND, s.HUB_SPAWNER)"
    return subprocess.run(  # noqa: S603
        [sys.executable, "-c", code], cwd=ROOT, env={**base, **env}, capture_output=True, text=True, timeout=60
    )


def test_development_runs_jobs_and_notebooks_locally_by_default():
    result = _settings_in_subprocess({"DEBUG": "true"}, start=True)  # and the start checks pass
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["local", "local"]


@pytest.mark.parametrize("name", ["JOBS_BACKEND", "HUB_SPAWNER"])
def test_outside_debug_local_execution_needs_a_declared_single_machine_lab(name):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    env = {
        "DEBUG": "false",
        "SECRET_KEY": "k" * 50,
        "NOTEBOOKS_HUB_TOKEN": "t" * 20,
        "HUB_OAUTH_CLIENT_SECRET": "s" * 20,
        "OIDC_RSA_PRIVATE_KEY": key.decode(),
        name: "local",
    }
    result = _settings_in_subprocess(env, start=True)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and f"{name}=local runs students' code" in result.stderr
    assert "(jobs.E003)" in result.stderr
    result = _settings_in_subprocess({**env, "SINGLE_MACHINE_LAB": "true"}, start=True)
    assert result.returncode == 0, result.stderr
    assert "local" in result.stdout.split()


# --- DATABASE_POOL: one psycopg pool per process instead of a connection per request thread (ASGI)

POSTGRES = "postgres://postgres@127.0.0.1:5432/postgres"


def _database_settings(env: dict[str, str]) -> subprocess.CompletedProcess:
    """Start the WSGI app (the start checks included) and print what the pool settings came to."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("DATABASE_") and k != "DJANGO_SETTINGS_MODULE"}
    code = (
        "import json, portal.wsgi; from django.conf import settings as s; d = s.DATABASES['default'];"
        " print(json.dumps({'max_age': d['CONN_MAX_AGE'], 'pool': d.get('OPTIONS', {}).get('pool')}))"
    )
    return subprocess.run(  # noqa: S603
        [sys.executable, "-c", code], cwd=ROOT, env={**base, **env}, capture_output=True, text=True, timeout=60
    )


def test_without_the_pool_connections_close_after_each_request_unless_a_worker_keeps_them():
    result = _database_settings({"DATABASE_URL": POSTGRES})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"max_age": 0, "pool": None}
    result = _database_settings({"DATABASE_URL": POSTGRES, "DATABASE_CONN_MAX_AGE": "60"})  # a Celery worker's
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"max_age": 60, "pool": None}


def _asgi_start(env: dict[str, str]) -> subprocess.CompletedProcess:
    """Load the ASGI app as uvicorn does (its start checks included)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("DATABASE_") and k != "DJANGO_SETTINGS_MODULE"}
    code = "import portal.asgi; from django.conf import settings as s; print(s.DATABASES['default']['CONN_MAX_AGE'])"
    return subprocess.run(  # noqa: S603
        [sys.executable, "-c", code], cwd=ROOT, env={**base, **env}, capture_output=True, text=True, timeout=60
    )


def test_the_asgi_server_refuses_a_connection_kept_per_request_thread():
    # A hand-started uvicorn with DATABASE_CONN_MAX_AGE=60 once held 87 idle connections and hung at "too many
    # clients": each request runs in a thread of its own and keeps its connection. It stops at the start instead.
    refused = _asgi_start({"DATABASE_URL": POSTGRES, "DATABASE_CONN_MAX_AGE": "60"})
    assert refused.returncode != 0
    assert "ImproperlyConfigured" in refused.stderr
    assert "DATABASE_CONN_MAX_AGE=60 under ASGI keeps a PostgreSQL connection for every" in refused.stderr
    assert "set DATABASE_POOL=true" in refused.stderr
    for env in ({"DATABASE_URL": POSTGRES}, {"DATABASE_URL": POSTGRES, "DATABASE_POOL": "true"}):
        started = _asgi_start(env)
        assert started.returncode == 0, started.stderr
        assert started.stdout.split()[-1] == "0"
    # The embedded SQLite file has no server to run out of connections.
    sqlite = _asgi_start({"DATABASE_CONN_MAX_AGE": "60"})
    assert sqlite.returncode == 0, sqlite.stderr


def test_the_pool_takes_its_sizes_and_no_persistent_connections():
    result = _database_settings(
        {
            "DATABASE_URL": POSTGRES,
            "DATABASE_POOL": "true",
            "DATABASE_POOL_MIN_SIZE": "1",
            "DATABASE_POOL_MAX_SIZE": "16",
            "DATABASE_POOL_TIMEOUT_S": "5",
        }
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"max_age": 0, "pool": {"min_size": 1, "max_size": 16, "timeout": 5}}
    result = _database_settings({"DATABASE_URL": POSTGRES, "DATABASE_POOL": "on"})
    assert json.loads(result.stdout)["pool"] == {"min_size": 2, "max_size": 10, "timeout": 10}


@pytest.mark.parametrize(
    "env,message",
    [
        ({"DATABASE_URL": "sqlite:///x.sqlite3"}, "DATABASE_POOL=true needs PostgreSQL"),
        ({"DATABASE_CONN_MAX_AGE": "60"}, "leave DATABASE_CONN_MAX_AGE unset or 0"),
        ({"DATABASE_POOL_MIN_SIZE": "8", "DATABASE_POOL_MAX_SIZE": "4"}, "DATABASE_POOL_MAX_SIZE (4) must be at least"),
        ({"DATABASE_POOL_MAX_SIZE": "0"}, "DATABASE_POOL_MAX_SIZE must be at least 1"),
        ({"DATABASE_POOL_TIMEOUT_S": "soon"}, "DATABASE_POOL_TIMEOUT_S must be an integer"),
    ],
)
def test_a_pool_that_cannot_work_stops_the_start(env, message):
    result = _database_settings({"DATABASE_URL": POSTGRES, "DATABASE_POOL": "true", **env})
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and message in result.stderr


# 24 threads, each a request as Django runs it under ASGI: its own thread, one query, then the end-of-request close.
THREADS_LIKE_ASGI = """
import os, threading, django, psycopg
django.setup()
from django.db import connection, close_old_connections
barrier = threading.Barrier(24)
def request():
    barrier.wait()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_sleep(0.2)")
    close_old_connections()
threads = [threading.Thread(target=request) for _ in range(24)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres") as watcher:
    print(watcher.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                          [os.environ["APP"]]).fetchone()[0])
"""


@pytest.mark.postgresql_only
@pytest.mark.parametrize("setting", ["kept", "default", "pool"])
def test_request_threads_leave_no_connections_behind_unless_told_to_keep_them(setting):
    # DATABASE_CONN_MAX_AGE=60: each request thread leaves its connection open (what ran PostgreSQL out under load,
    # and what portal/asgi.py refuses); the default closes it at the end of the request; with the pool the process
    # never holds more than DATABASE_POOL_MAX_SIZE (4). The 24 requests all run each time.
    app = f"pool-check-{os.getpid()}-{setting}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DATABASE_")}
    env.update(DJANGO_SETTINGS_MODULE="portal.settings", DATABASE_URL=f"{POSTGRES}?application_name={app}", APP=app)
    if setting == "kept":
        env.update(DATABASE_CONN_MAX_AGE="60")
    if setting == "pool":
        env.update(DATABASE_POOL="true", DATABASE_POOL_MIN_SIZE="0", DATABASE_POOL_MAX_SIZE="4")
    result = subprocess.run(  # noqa: S603
        [sys.executable, "-c", THREADS_LIKE_ASGI], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    held = int(result.stdout.split()[-1])
    assert {"kept": held > 4, "default": held == 0, "pool": 1 <= held <= 4}[setting], held


@pytest.mark.parametrize("name", ["LOGIN_THROTTLE_RATE", "TOKEN_THROTTLE_RATE"])
def test_a_throttle_rate_that_is_not_a_rate_stops_the_start(name):
    result = _settings_in_subprocess({"DEBUG": "true", name: "twenty a minute"})
    assert result.returncode != 0
    assert f"{name} must be a rate such as 20/min" in result.stderr
    assert _settings_in_subprocess({"DEBUG": "true", name: "5/hour"}).returncode == 0


@pytest.mark.parametrize("value", ["x", "02-30", "13-01", "2-1", "02-29", "", ",", "02-01,08-01x"])
def test_term_starts_that_are_not_month_days_of_every_year_stop_the_start(monkeypatch, value):
    monkeypatch.setenv("USAGE_TERM_STARTS", value)
    with pytest.raises(ImproperlyConfigured, match="USAGE_TERM_STARTS must be a comma-separated list of month-days"):
        envmonthdays("USAGE_TERM_STARTS", ["02-01", "08-01"])


def test_term_starts_are_read_once_as_sorted_month_day_pairs():
    code = "import portal.settings as s; print(s.USAGE_TERM_STARTS)"
    base = {k: v for k, v in os.environ.items() if k != "USAGE_TERM_STARTS"}

    def run(env):
        return subprocess.run(  # noqa: S603
            [sys.executable, "-c", code], cwd=ROOT, env={**base, **env}, capture_output=True, text=True, timeout=60
        )

    assert run({"DEBUG": "true"}).stdout.strip() == "((2, 1), (8, 1))"
    assert run({"DEBUG": "true", "USAGE_TERM_STARTS": "09-15, 01-10"}).stdout.strip() == "((1, 10), (9, 15))"
    refused = run({"DEBUG": "true", "USAGE_TERM_STARTS": "02-30"})
    assert refused.returncode != 0 and "ImproperlyConfigured" in refused.stderr
    assert (
        "USAGE_TERM_STARTS must be a comma-separated list of month-days" in refused.stderr
        and "'02-30'" in refused.stderr
    )


# --- Values wrong only together: the start checks (tag "settings"), one per former raise in the settings module ----

CHECKED = [
    # (settings, the sentence, the check's id)
    ({"SECRET_KEY": ""}, "SECRET_KEY must be set when DEBUG is off.", "portal.E001"),
    (
        {"HUB_OAUTH_CLIENT_SECRET": ""},
        "HUB_OAUTH_CLIENT_SECRET (the hub's OAuth client secret) must be set.",
        "portal.E005",
    ),
    ({"EMAIL_USE_TLS": True, "EMAIL_USE_SSL": True}, "Set EMAIL_USE_TLS or EMAIL_USE_SSL, not both.", "portal.E006"),
    ({"RATE_LIMIT_CACHE": "counters"}, "RATE_LIMIT_CACHE must name one of the caches (default).", "accounts.E001"),
    (
        {"OIDC_PROVIDER_URL": "https://idp.example", "OIDC_RP_CLIENT_ID": "portal", "OIDC_RP_CLIENT_SECRET": ""},
        "OIDC_PROVIDER_URL needs OIDC_RP_CLIENT_ID and OIDC_RP_CLIENT_SECRET (the portal's client).",
        "accounts.E002",
    ),
    (
        {
            "OIDC_PROVIDER_URL": "https://idp.example",
            "OIDC_RP_CLIENT_ID": "c",
            "OIDC_RP_CLIENT_SECRET": "s",
            "OIDC_RP_SCOPES": "profile email",
        },
        "OIDC_RP_SCOPES must include openid.",
        "accounts.E003",
    ),
    (
        {"LDAP_SERVER_URI": "ldaps://ldap.example", "LDAP_USER_SEARCH_BASE": "ou=people,dc=x"},
        "LDAP_SERVER_URI needs LDAP_USER_SEARCH_BASE and LDAP_GROUP_SEARCH_BASE.",
        "accounts.E004",
    ),
    (
        {"NOTEBOOKS_HUB_TOKEN": ""},
        "NOTEBOOKS_HUB_TOKEN (the portal's JupyterHub service token) must be set.",
        "labs.E001",
    ),
    (
        {"TELEMETRY_COLLECTOR": "process", "REDIS_URL": ""},
        "TELEMETRY_COLLECTOR=process needs REDIS_URL: the web servers hear it through Redis.",
        "labs.E002",
    ),
    (
        {"TELEMETRY_SOURCE": "prometheus", "TELEMETRY_PROMETHEUS_URL": ""},
        "TELEMETRY_SOURCE=prometheus needs TELEMETRY_PROMETHEUS_URL.",
        "labs.E003",
    ),
    (
        {"BUDGET_ALERT_THRESHOLDS": "50,eighty"},
        "BUDGET_ALERT_THRESHOLDS: “eighty” is not a whole percentage; use e.g. 50,80,100.",
        "labs.E004",
    ),
    (
        {"DEBUG": False, "JOBS_BACKEND": "local", "HUB_SPAWNER": "kubernetes"},
        "JOBS_BACKEND=local runs students' code on this machine: outside DEBUG use kubernetes, or declare a lab "
        "that is one machine with SINGLE_MACHINE_LAB=true (local jobs and notebooks, always sandboxed).",
        "jobs.E003",
    ),
]
# The pool's three (portal.E002-E004) are tested above through a real start: overriding DATABASES in-process is not.


def _start_errors() -> list[checks.CheckMessage]:
    return [m for m in checks.run_checks(tags=["settings"]) if m.level >= checks.ERROR]


@pytest.fixture
def startable(settings):
    """The test settings as a development start sees them (pytest-django turns DEBUG off during tests)."""
    settings.DEBUG = True
    assert _start_errors() == []
    return settings


@pytest.mark.parametrize("values,sentence,check_id", CHECKED, ids=[case[2] for case in CHECKED])
def test_settings_that_are_wrong_together_stop_the_start_with_their_sentence(startable, values, sentence, check_id):
    for name, value in values.items():
        setattr(startable, name, value)
    assert [(m.id, m.msg) for m in _start_errors()] == [(check_id, sentence)]
    with pytest.raises(ImproperlyConfigured) as refused:
        refuse_to_start_misconfigured()
    assert str(refused.value) == f"{sentence} ({check_id})"


def test_a_declared_single_machine_lab_runs_locally_outside_debug(startable):
    startable.DEBUG, startable.JOBS_BACKEND, startable.HUB_SPAWNER = False, "local", "local"
    assert {m.id for m in _start_errors()} == {"jobs.E003"}
    startable.SINGLE_MACHINE_LAB = True
    assert _start_errors() == []


@pytest.mark.parametrize(
    "name,value,sentence",
    [
        (
            "PORTAL_INSTANCE_ID",
            "lab two",
            "PORTAL_INSTANCE_ID must be a Kubernetes label value (letters, digits, -_.).",
        ),
        ("TELEMETRY_DCGM_URL", "http://gpu01:9400/metrics", "TELEMETRY_DCGM_URL must contain {node}, e.g. http"),
        ("TELEMETRY_XID_IGNORED", "13,x", "TELEMETRY_XID_IGNORED must be a comma-separated list of Xid numbers."),
    ],
)
def test_a_single_value_that_cannot_be_read_stops_the_settings(name, value, sentence):
    result = _settings_in_subprocess({"DEBUG": "true", name: value})
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and sentence in result.stderr


# --- Every kind of process refuses to start: uvicorn (ASGI), Celery's worker and beat (manage.py: tests/test_deploy)

WITHOUT_SECRET_KEY = {**PRODUCTION_ENV, "SECRET_KEY": ""}


def _process(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE")}
    return subprocess.run(  # noqa: S603 - refused at start, it ends by itself; a timeout is the failure
        command, cwd=ROOT, env={**base, **env}, capture_output=True, text=True, timeout=90
    )


def test_the_asgi_app_refuses_to_start_on_a_check_error():
    command = [sys.executable, "-m", "uvicorn", "portal.asgi:application", "--host", "127.0.0.1", "--port", "0"]
    result = _process(command, WITHOUT_SECRET_KEY)
    assert result.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY must be set when DEBUG is off. (portal.E001)" in result.stderr


@pytest.mark.parametrize("program", ["worker", "beat"])
def test_celery_refuses_to_start_on_a_check_error(program, tmp_path):
    command = [sys.executable, "-m", "celery", "-A", "portal", program, "-l", "warning"]
    command += ["--pool", "solo"] if program == "worker" else ["-s", str(tmp_path / "beat-schedule")]
    result = _process(command, WITHOUT_SECRET_KEY)
    assert result.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY must be set when DEBUG is off. (portal.E001)" in result.stderr
