"""LDAP is optional: without LDAP_SERVER_URI the portal never imports python-ldap or django-auth-ldap (the `ldap`
extra), so a lab without LDAP needs neither them nor their C build. The password sign-in, the token endpoint and the
periodic tasks run in a process where both are made unimportable (and every try to import them is written down)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from tests.factories import PASSWORD, UserFactory

ROOT = Path(__file__).resolve().parent.parent.parent

# Found before the installed packages (PYTHONPATH comes first): any import of them records itself and fails.
BLOCKER = """import os
with open(os.environ["LDAP_IMPORT_TRIES"], "a") as tries:
    tries.write(__name__ + "\\n")
raise ImportError(f"{__name__} is not installed (hidden by the test: LDAP is an optional extra)")
"""

SIGN_IN = """
import json
import portal.wsgi  # Django set up and the start checks passed, as a web server starts
from django.test import Client
client = Client()
page = client.get("/login/")
login = client.post("/login/", {"username": "ada", "password": PASSWORD})
token = Client().post("/api/v1/token/", {"username": "ada", "password": PASSWORD}, content_type="application/json")
print(json.dumps({
    "page": page.status_code, "password_form": 'name="password"' in page.content.decode(),
    "login": [login.status_code, login.get("Location")], "signed_in": "_auth_user_id" in client.session,
    "token": [token.status_code, sorted(token.json())],
}))
"""


@pytest.fixture
def without_python_ldap(tmp_path):
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    for name in ("ldap", "django_auth_ldap"):
        (hidden / f"{name}.py").write_text(BLOCKER)
    tries = tmp_path / "ldap-import-tries.txt"
    db = settings.DATABASES["default"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LDAP_")}
    env.update(
        DJANGO_SETTINGS_MODULE="tests.settings",  # the test hasher, so the factory's password works
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        PYTHONPATH=f"{hidden}{os.pathsep}{ROOT}",
        LDAP_IMPORT_TRIES=str(tries),
    )

    def run(*command: str) -> subprocess.CompletedProcess:
        return subprocess.run(  # noqa: S603
            command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180
        )

    run.tries = tries
    return run


def test_the_blocker_hides_python_ldap(without_python_ldap):
    result = without_python_ldap(sys.executable, "-c", "import ldap")
    assert result.returncode != 0 and "hidden by the test" in result.stderr
    assert without_python_ldap.tries.read_text() == "ldap\n"


@pytest.mark.django_db(transaction=True)
def test_password_sign_in_and_the_token_endpoint_work_without_python_ldap(without_python_ldap):
    UserFactory(username="ada")

    result = without_python_ldap(sys.executable, "-c", f"PASSWORD = {PASSWORD!r}\n{SIGN_IN}")

    assert result.returncode == 0, result.stderr[-3000:]
    answers = json.loads(result.stdout.strip().splitlines()[-1])
    assert answers["page"] == 200 and answers["password_form"]
    assert answers["login"] == [302, "/"] and answers["signed_in"]
    assert answers["token"][0] == 200 and "token" in answers["token"][1]
    assert not without_python_ldap.tries.exists()  # nothing even tried


@pytest.mark.django_db(transaction=True)
def test_the_periodic_tasks_and_the_sign_in_sync_run_without_python_ldap(without_python_ldap):
    result = without_python_ldap(sys.executable, "manage.py", "run_periodic", "--once")

    assert result.returncode == 0, result.stderr[-3000:]
    assert "reservations-tick:" in result.stdout and "signin-sync" not in result.stdout
    sync = without_python_ldap(sys.executable, "manage.py", "signin_sync", "--json")
    assert sync.returncode == 0, sync.stderr[-3000:]
    assert json.loads(sync.stdout.strip().splitlines()[-1]) == {"synced": 0, "gone": 0, "failed": 0}
    assert "LDAP_SERVER_URI is not set: nothing to sync." in sync.stderr
    assert not without_python_ldap.tries.exists()


def test_the_ldap_backend_is_listed_only_with_ldap_configured(without_python_ldap):
    code = "import json, portal.settings as s; print(json.dumps(s.AUTHENTICATION_BACKENDS))"
    backends = json.loads(without_python_ldap(sys.executable, "-c", code).stdout)
    assert "accounts.signin.ldap.PortalLDAPBackend" not in backends
    configured = subprocess.run(  # noqa: S603
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, "LDAP_SERVER_URI": "ldaps://ldap.example", "DJANGO_SETTINGS_MODULE": "portal.settings"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert json.loads(configured.stdout) == [
        "portal.web.lockout.PasswordLockoutBackend",
        "accounts.signin.backends.LocalPasswordBackend",
        "accounts.signin.ldap.PortalLDAPBackend",
        "accounts.signin.oidc.PortalOIDCBackend",
    ]
