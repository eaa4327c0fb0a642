"""Production readiness: the deploy checks, migrations, and the compose file."""

import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PRODUCTION_ENV = {
    "DEBUG": "false",
    "SECRET_KEY": secrets.token_urlsafe(50),
    "ALLOWED_HOSTS": "portal.lab.example",
    "CSRF_TRUSTED_ORIGINS": "https://portal.lab.example",
    "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/postgres",
    "REDIS_URL": "redis://127.0.0.1:6379/15",
}


def manage(*args, env=None):
    base = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE")}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_clean_with_production_settings():
    result = manage("check", "--deploy", "--fail-level", "WARNING", env=PRODUCTION_ENV)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_without_secret_key_refuses_to_start():
    env = {**PRODUCTION_ENV, "SECRET_KEY": ""}
    result = manage("check", env=env)
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off" in result.stderr


def test_bad_setting_value_refuses_to_start():
    result = manage("check", env={"INVENTORY_BACKEND": "k8s"})
    assert result.returncode != 0
    assert "INVENTORY_BACKEND must be one of local, kubernetes" in result.stderr


def test_migrations_are_complete():
    result = manage("makemigrations", "--check", "--dry-run")
    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_file_is_valid():
    tool = shutil.which("docker-compose")
    if tool is None:
        pytest.fail("docker-compose is missing: scripts/test.sh installs it (Debian package docker-compose)")
    env = {
        **os.environ,
        "SECRET_KEY": "x" * 50,
        "POSTGRES_PASSWORD": "pw",
        "JUPYTERHUB_PORTAL_TOKEN": "t",
        "OAUTH_CLIENT_SECRET": "s",
    }
    result = subprocess.run([tool, "config", "-q"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
