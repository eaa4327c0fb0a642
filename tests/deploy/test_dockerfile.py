"""The images: a few of hadolint's rules in Python, and the portal image's build steps run as far as this machine
allows (no container engine here): its dependency list, collectstatic, and WhiteNoise serving the result."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib

import pytest

from tests.deploy.render import ROOT

DOCKERFILES = ("Dockerfile", "deploy/jupyterhub/Dockerfile", "deploy/desktop/Dockerfile")


def instructions(path: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    lines, current = [], ""
    for raw in (ROOT / path).read_text().splitlines():
        line = raw.strip()
        if not current and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        current += line[:-1] + " " if line.endswith("\\") else line
        if not line.endswith("\\"):
            lines.append(current)
            current = ""
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


def env_of(path: str) -> dict[str, str]:
    env = {}
    for instruction, args in instructions(path):
        if instruction == "ENV":
            # NAME=value or NAME="value" (an empty one: "")
            env.update((name, value.strip('"')) for name, value in re.findall(r'(\w+)=("[^"]*"|\S+)', args))
    return env


def run_steps(path: str) -> list[str]:
    return [args for instruction, args in instructions(path) if instruction == "RUN"]


@pytest.mark.parametrize("path", DOCKERFILES)
def test_the_base_image_is_pinned_to_a_release(path):
    (base,) = [args for instruction, args in instructions(path) if instruction == "FROM"]
    image, _, tag = base.partition(":")
    # A patch release (3.11.13-slim-bookworm), a dated build (Docker Stacks: 2025-06-30) or a digest.
    release = re.match(r"\d+\.\d+\.\d+-", tag) or re.fullmatch(r"\d{4}-\d{2}-\d{2}", tag)
    assert tag and tag != "latest" and ("@sha256:" in base or release), base


@pytest.mark.parametrize("path", DOCKERFILES)
def test_the_image_runs_as_a_numeric_non_root_user(path):
    users = [args for instruction, args in instructions(path) if instruction == "USER"]
    assert users, "no USER: the image would run as root"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) >= 1000, users[-1]  # numeric: runAsNonRoot can verify it


@pytest.mark.parametrize("path", DOCKERFILES)
def test_hadolint_rules(path):
    found = instructions(path)
    text = " ".join(args for _, args in found)
    assert ":latest" not in text  # DL3007
    for args in run_steps(path):
        if "pip install" in args:
            assert "--no-cache-dir" in args, args  # DL3042
        if "apt-get install" in args:
            assert "--no-install-recommends" in args and "rm -rf /var/lib/apt/lists" in args, args  # DL3015, DL3009
        assert not re.search(r"(^|&&\s*)cd ", args), args  # DL3003: WORKDIR instead
    (command,) = [args for instruction, args in found if instruction == "CMD"]
    assert command.startswith("["), "CMD in exec form, so signals reach the process"  # DL3025
    assert [i for i, _ in found].count("HEALTHCHECK") == 1


def test_the_dependency_step_installs_what_pyproject_pins(tmp_path):
    (step,) = [args for args in run_steps("Dockerfile") if "tomllib" in args]
    command = re.search(r'python -c "(.*?)"\s+> /tmp/requirements.txt', step)
    assert command, step
    (tmp_path / "pyproject.toml").write_bytes((ROOT / "pyproject.toml").read_bytes())
    result = subprocess.run(
        [sys.executable, "-c", command[1]], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    # The dependencies and the `ldap` extra: LDAP sign-in is optional in the portal, but a lab's image supports it.
    pinned = project["dependencies"] + project["optional-dependencies"]["ldap"]
    assert result.stdout.split("\n")[:-1] == pinned
    assert any(line.startswith("python-ldap==") for line in pinned)
    (install,) = [args for args in run_steps("Dockerfile") if args.startswith("pip install")]  # the portal itself
    assert "'.[ldap]'" in install, install


def test_collectstatic_runs_as_the_image_runs_it_and_whitenoise_serves_the_result(tmp_path):
    (step,) = [args for args in run_steps("Dockerfile") if "collectstatic" in args]
    # The step up to the removal of its throw-away key; what follows (mkdir, chown of /app) needs the image.
    commands = step.split(" && ")
    upto = next(i for i, c in enumerate(commands) if c.startswith("rm -f"))
    image_env = env_of("Dockerfile")
    assert image_env["DEBUG"] == "false" and image_env["STATIC_ROOT"] == "/app/staticfiles"
    base = {
        k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DEBUG", "NOTEBOOKS_", "HUB_", "OIDC_"))
    }
    paths = {"STATIC_ROOT": str(tmp_path / "static"), "PORTAL_VAR_DIR": str(tmp_path / "var")}
    path = f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}"
    env = {**base, **image_env, **paths, "PYTHONPATH": str(ROOT), "PATH": path}
    result = subprocess.run(
        ["sh", "-c", " && ".join(commands[: upto + 1])], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    manifest = json.loads((tmp_path / "static" / "staticfiles.json").read_text())["paths"]
    name, hashed = next((k, v) for k, v in manifest.items() if k.endswith(".css"))
    # The image at run time: DEBUG off, no finders; WhiteNoise serves the hashed name from STATIC_ROOT, cacheable.
    check = (
        "import django; django.setup(); from django.test import Client; "
        f"r = Client().get('/static/{hashed}', secure=True); "
        "print(r.status_code, r.headers.get('Cache-Control', ''))"
    )
    from tests.test_deploy import PRODUCTION_ENV

    serve_env = {**env, **PRODUCTION_ENV, "ALLOWED_HOSTS": "testserver", "DJANGO_SETTINGS_MODULE": "portal.settings"}
    served = subprocess.run([sys.executable, "-c", check], cwd=ROOT, env=serve_env, capture_output=True, text=True)
    assert served.returncode == 0, served.stderr[-2000:]
    status, cache = served.stdout.strip().splitlines()[-1].split(" ", 1)
    assert status == "200" and "max-age" in cache, served.stdout
