"""The Desktop profile's image (deploy/desktop): a lint and a dry run of its build, as far as a machine without a
container engine goes. tests/deploy/test_dockerfile.py's rules (pinned base, numeric non-root USER, hadolint's)
apply to it too; here: every COPY source exists in the build context, every package is pinned (pip by version,
Ubuntu's by one archive snapshot or by version), nothing is fetched outside a package manager, the desktop proxy is
installed for the user that runs JupyterLab, and the session menu cannot shut anything down."""

from __future__ import annotations

import configparser
import re
import shlex

import pytest

from tests.deploy.render import ROOT
from tests.deploy.test_dockerfile import instructions, run_steps

CONTEXT = ROOT / "deploy" / "desktop"
DOCKERFILE = "deploy/desktop/Dockerfile"


def test_every_copy_source_exists_in_the_build_context():
    copies = [args for instruction, args in instructions(DOCKERFILE) if instruction in ("COPY", "ADD")]
    assert copies
    for args in copies:
        words = [w for w in shlex.split(args) if not w.startswith("--")]
        assert not words[0].startswith("["), "the JSON form: keep it to the plain form this check reads"
        *sources, _destination = words
        for source in sources:
            assert not re.match(r"^[a-z]+://", source), f"{source}: fetch with a package manager, pinned"
            path = (CONTEXT / source).resolve()
            assert path.is_relative_to(CONTEXT) and path.exists(), f"{source} is not in {CONTEXT}"


def _apt_installs(step: str) -> list[list[str]]:
    commands = [shlex.split(c) for c in re.split(r"&&|;", step)]
    return [c for c in commands if c[:2] == ["apt-get", "install"]]


def test_every_package_is_pinned():
    steps = run_steps(DOCKERFILE)
    pip = [s for s in steps if "pip install" in s]
    apt = [s for s in steps if "apt-get install" in s]
    assert pip and apt
    for step in pip:
        packages = [w for w in shlex.split(step.split("pip install", 1)[1]) if not w.startswith("-")]
        assert packages and all(re.fullmatch(r"[A-Za-z0-9._-]+==[0-9][A-Za-z0-9.]*", p) for p in packages), packages
    for step in apt:
        snapshot = re.search(r"apt-get update --snapshot (\d{8}T\d{6}Z)", step)
        for command in _apt_installs(step):
            packages = [w for w in command[2:] if not w.startswith("-") and w != (snapshot and snapshot[1])]
            if snapshot:
                # One snapshot of the archive pins every version; the install must read the same one.
                assert command[command.index("--snapshot") + 1] == snapshot[1], command
            else:
                assert all("=" in p for p in packages), f"unpinned: {[p for p in packages if '=' not in p]}"
            assert {"dbus-x11", "xfce4", "tigervnc-standalone-server"} <= set(packages)


def test_the_image_builds_on_a_dated_stacks_release_and_runs_jupyterlab_as_its_user():
    found = instructions(DOCKERFILE)
    (base,) = [args for instruction, args in found if instruction == "FROM"]
    assert re.fullmatch(r"quay\.io/jupyter/[a-z-]+-notebook:\d{4}-\d{2}-\d{2}", base), base
    users = [args for instruction, args in found if instruction == "USER"]
    assert users[-1] == "1000"  # jovyan: KubeSpawner's uid (deploy/jupyterhub/jupyterhub_config.py)
    # The proxy is installed after USER 1000, into the stacks' conda environment the server runs from.
    order = [(instruction, args) for instruction, args in found if instruction in ("USER", "RUN")]
    pip_at = next(i for i, (instruction, args) in enumerate(order) if "jupyter-remote-desktop-proxy" in args)
    assert [args for instruction, args in order[:pip_at] if instruction == "USER"][-1] == "1000"


def test_the_desktop_session_cannot_shut_down_or_save_sessions():
    kiosk = configparser.ConfigParser()
    kiosk.optionxform = str
    kiosk.read_string((CONTEXT / "kioskrc").read_text())
    assert kiosk["xfce4-session"]["Shutdown"] == "NONE"
    assert kiosk["xfce4-session"]["SaveSession"] == "NONE"
    destination = next(a for i, a in instructions(DOCKERFILE) if i == "COPY" and "kioskrc" in a).split()[-1]
    assert destination == "/etc/xdg/xfce4/kiosk/kioskrc"


@pytest.mark.parametrize(
    "line,problem",
    [
        ('RUN pip install --no-cache-dir "jupyter-server-proxy"', "unpinned pip"),
        (
            "RUN apt-get update && apt-get install -y --no-install-recommends dbus-x11 xfce4"
            " tigervnc-standalone-server && rm -rf /var/lib/apt/lists/*",
            "unpinned apt",
        ),
    ],
)
def test_the_dry_run_catches_an_unpinned_package(monkeypatch, line, problem):
    steps = run_steps(DOCKERFILE) + [line.removeprefix("RUN ")]
    monkeypatch.setattr("tests.deploy.test_desktop.run_steps", lambda path: steps)
    with pytest.raises(AssertionError):
        test_every_package_is_pinned()
