import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from portal.env import envbool, envchoice, envint, envlist

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


def _settings_in_subprocess(env: dict[str, str]) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("JOBS_BACKEND", "HUB_SPAWNER", "SINGLE_MACHINE_LAB")}
    code = "import portal.settings as s; print(s.JOBS_BACKEND, s.HUB_SPAWNER)"
    return subprocess.run(  # noqa: S603
        [sys.executable, "-c", code], cwd=ROOT, env={**base, **env}, capture_output=True, text=True, timeout=60
    )


def test_development_runs_jobs_and_notebooks_locally_by_default():
    result = _settings_in_subprocess({"DEBUG": "true"})
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
    result = _settings_in_subprocess(env)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and f"{name}=local runs students' code" in result.stderr
    result = _settings_in_subprocess({**env, "SINGLE_MACHINE_LAB": "true"})
    assert result.returncode == 0, result.stderr
    assert "local" in result.stdout.split()
