"""Production readiness: the deploy checks, migrations, and the compose file."""

import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _rsa_pem() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


PRODUCTION_ENV = {
    "DEBUG": "false",
    "OIDC_RSA_PRIVATE_KEY": _rsa_pem(),
    "NOTEBOOKS_HUB_TOKEN": secrets.token_hex(32),
    "HUB_OAUTH_CLIENT_SECRET": secrets.token_urlsafe(32),
    "NOTEBOOKS_HUB_PUBLIC_URL": "https://notebooks.lab.example",
    "SECRET_KEY": secrets.token_urlsafe(50),
    "ALLOWED_HOSTS": "portal.lab.example",
    "CSRF_TRUSTED_ORIGINS": "https://portal.lab.example",
    "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/postgres",
    "REDIS_URL": "redis://127.0.0.1:6379/15",
    "METRICS_TOKEN": secrets.token_urlsafe(32),
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


@pytest.mark.parametrize(
    "missing,sentence",
    [
        ("NOTEBOOKS_HUB_TOKEN", "NOTEBOOKS_HUB_TOKEN"),
        ("HUB_OAUTH_CLIENT_SECRET", "HUB_OAUTH_CLIENT_SECRET"),
        ("OIDC_RSA_PRIVATE_KEY", "OIDC_RSA_PRIVATE_KEY"),
    ],
)
def test_production_without_a_notebook_secret_refuses_to_start(missing, sentence):
    result = manage("check", env={**PRODUCTION_ENV, missing: ""})
    assert result.returncode != 0
    assert sentence in result.stderr


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
