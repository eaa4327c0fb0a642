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
        "HUB_CONNECT_URL": "http://hub.lab.example:8081",
    }
    result = subprocess.run([tool, "config", "-q"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_compose_runs_students_code_on_the_cluster_only():
    import yaml

    tool = shutil.which("docker-compose")
    if tool is None:
        pytest.fail("docker-compose is missing: scripts/test.sh installs it (Debian package docker-compose)")
    env = {
        **os.environ,
        "SECRET_KEY": "x" * 50,
        "POSTGRES_PASSWORD": "pw",
        "JUPYTERHUB_PORTAL_TOKEN": "t",
        "OAUTH_CLIENT_SECRET": "s",
        "HUB_CONNECT_URL": "http://hub.lab.example:8081",
        # Whatever .env says, compose does not run jobs or notebooks in its containers.
        "JOBS_BACKEND": "local",
        "HUB_SPAWNER": "local",
    }
    result = subprocess.run([tool, "config"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    services = yaml.safe_load(result.stdout)["services"]
    for name in ("web", "worker", "beat", "migrate", "telemetry"):
        environment = services[name]["environment"]
        assert (environment["JOBS_BACKEND"], environment["HUB_SPAWNER"]) == ("kubernetes", "kubernetes"), name
        assert "SINGLE_MACHINE_LAB" not in environment
    assert services["jupyterhub"]["environment"]["HUB_SPAWNER"] == "kubernetes"
    without = {k: v for k, v in env.items() if k != "HUB_CONNECT_URL"}
    result = subprocess.run([tool, "config", "-q"], cwd=ROOT, env=without, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "HUB_CONNECT_URL" in result.stderr


@pytest.mark.parametrize("name", ["JOBS_BACKEND", "HUB_SPAWNER"])
def test_production_refuses_to_run_students_code_on_the_portals_machine(name):
    result = manage("check", env={**PRODUCTION_ENV, name: "local"})
    assert result.returncode != 0
    assert f"{name}=local runs students' code on this machine" in result.stderr
    assert "SINGLE_MACHINE_LAB=true" in result.stderr


def test_production_runs_students_code_on_the_cluster_by_default():
    code = "from django.conf import settings; print(settings.JOBS_BACKEND, settings.HUB_SPAWNER)"
    result = manage("shell", "-c", code, env=PRODUCTION_ENV)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "kubernetes kubernetes"


def test_a_declared_single_machine_lab_passes_the_deploy_check_with_its_sandbox():
    env = {**PRODUCTION_ENV, "JOBS_BACKEND": "local", "HUB_SPAWNER": "local", "SINGLE_MACHINE_LAB": "true"}
    result = manage("check", "--deploy", "--fail-level", "WARNING", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    # Without bubblewrap it does not: local jobs and notebooks would not run (never unsandboxed).
    result = manage("check", "--deploy", env={**env, "PATH": "/nonexistent"})
    assert result.returncode != 0
    assert "jobs.E002" in result.stderr and "bwrap is not installed" in result.stderr


def test_the_deploy_check_flags_a_development_setup_that_runs_code_locally():
    env = {**PRODUCTION_ENV, "DEBUG": "true", "JOBS_BACKEND": "local", "HUB_SPAWNER": "kubernetes"}
    result = manage("check", "--deploy", env=env)
    assert result.returncode != 0
    assert "jobs.E001" in result.stderr and "JOBS_BACKEND = local" in result.stderr
    result = manage("check", "--deploy", env={**env, "JOBS_BACKEND": "kubernetes"})
    assert "jobs.E001" not in result.stdout + result.stderr
