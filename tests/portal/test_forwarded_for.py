"""X-Forwarded-For is believed only from the proxies FORWARDED_ALLOW_IPS names, end to end: the portal started as
scripts/run.sh starts it (scripts/serve.sh: uvicorn on loopback, DEBUG, SQLite, no Redis), and the shipped configs.

The security probe's finding: uvicorn's default believes X-Forwarded-For from 127.0.0.1, so run.sh's server gave
each forged address a fresh budget: 25 password guesses at POST /api/v1/token/ got 25 x 401 and no 429, and a locked
(username, address) pair was escaped by writing another address.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml
from websockets.asyncio.client import connect

from bench.kit import free_port, setup_database, stop_all, wait_up
from tests.deploy.render import find, render

ROOT = Path(__file__).resolve().parent.parent.parent

USERS = """
import json
from accounts.models import User
ada = User.objects.create(username="ada")
ada.set_password("the-right-password-42")
ada.save()
print(json.dumps({"ok": True}))
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The portal as run.sh serves it, on a port of its own, with a throwaway SQLite database."""
    workdir = tmp_path_factory.mktemp("run-sh")
    drop = ("DATABASE_", "DJANGO_", "REDIS_", "CELERY_", "FORWARDED_", "NUM_PROXIES", "TOKEN_", "AXES_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    port = free_port()
    env.update(
        DJANGO_SETTINGS_MODULE="portal.settings",
        DEBUG="true",
        INVENTORY_BACKEND="local",
        PORTAL_VAR_DIR=str(workdir),
        HOST="127.0.0.1",
        PORT=str(port),
        # Counted per day: however slowly this machine sends the tries, they all fall in one window.
        TOKEN_THROTTLE_RATE="20/day",
        PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '')}",
    )
    setup_database(env, USERS, extra_env={})
    log = open(workdir / "web.log", "w")  # noqa: SIM115
    server = subprocess.Popen(  # noqa: S603 - our own script
        [str(ROOT / "scripts" / "serve.sh"), "--log-level", "warning"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_up(f"http://127.0.0.1:{port}/healthz", server)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_all({"web": server}, {"web": log}, workdir, lambda text: print(text, file=sys.stderr))


def client_from(source: str) -> httpx.Client:
    """A client whose connections come from `source` (all of 127.0.0.0/8 is this machine): a peer of its own."""
    return httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=60)


def ask_for_token(client: httpx.Client, url: str, username: str, password: str, forged: str) -> httpx.Response:
    body = {"username": username, "password": password}
    return client.post(f"{url}/api/v1/token/", json=body, headers={"X-Forwarded-For": forged})


def test_made_up_addresses_neither_escape_the_lock_nor_the_throttle(served):
    """The probe's client, on this machine's 127.0.0.1 (which uvicorn's default believes): a new X-Forwarded-For on
    every try. TOKEN_THROTTLE_RATE allows 20 tries per address; AXES_FAILURE_LIMIT locks a pair at 5 failures."""
    with client_from("127.0.0.1") as attacker:
        guesses = [ask_for_token(attacker, served, "ada", f"guess-{n}", f"203.0.113.{n}") for n in range(5)]
        right = ask_for_token(attacker, served, "ada", "the-right-password-42", "198.51.100.77")
        # Another username each try from here on, so that only the throttle can answer 429.
        sprayed = [ask_for_token(attacker, served, f"nobody-{n}", "guess", f"192.0.2.{n}") for n in range(19)]
    assert [a.status_code for a in guesses] == [401] * 4 + [429]
    assert guesses[-1].json()["code"] == "locked_out"
    assert right.status_code == 429 and right.json()["code"] == "locked_out" and "token" not in right.json()
    # 6 tries so far: 14 more get an answer, then the address has had its 20.
    assert [a.status_code for a in sprayed] == [401] * 14 + [429] * 5
    assert sprayed[-1].json()["code"] == "throttled" and int(sprayed[-1].headers["Retry-After"]) > 0
    # The lock and the throttle are that address's: from another one the person gets a token at once.
    with client_from("127.0.0.4") as elsewhere:
        assert ask_for_token(elsewhere, served, "ada", "the-right-password-42", "203.0.113.1").status_code == 200


# --- the shipped configurations name no proxy by default, and never '*' --------------------------------------------


def test_run_sh_and_the_image_start_the_server_through_serve_sh():
    run_sh = (ROOT / "scripts" / "run.sh").read_text()
    assert "scripts/serve.sh" in run_sh and "-m uvicorn" not in run_sh
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r'^CMD \["scripts/serve\.sh"\]$', dockerfile, flags=re.M)
    assert re.search(r'^\s+FORWARDED_ALLOW_IPS="" \\$', dockerfile, flags=re.M)
    serve = (ROOT / "scripts" / "serve.sh").read_text()
    assert "--no-proxy-headers" in serve and '--forwarded-allow-ips "$FORWARDED_ALLOW_IPS"' in serve


def test_compose_names_no_proxy_unless_the_admin_does():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    assert compose["x-portal-env"]["FORWARDED_ALLOW_IPS"] == "${FORWARDED_ALLOW_IPS:-}"
    assert "FORWARDED_ALLOW_IPS" not in compose["services"]["web"]["environment"] or (
        compose["services"]["web"]["environment"]["FORWARDED_ALLOW_IPS"] == "${FORWARDED_ALLOW_IPS:-}"
    )
    assert "NUM_PROXIES" not in compose["x-portal-env"]
    example = (ROOT / ".env.example").read_text()
    assert re.search(r"^FORWARDED_ALLOW_IPS=$", example, flags=re.M)


@pytest.mark.parametrize("overlay", ["deploy/overlays/demo", "deploy/overlays/production"])
def test_the_cluster_believes_the_ingress_controllers_addresses_only(overlay):
    docs = render(overlay)
    config = find(docs, "ConfigMap", "gpu-lab-portal")["data"]
    values = yaml.safe_load((ROOT / overlay / "values.yaml").read_text())["data"]
    assert config["FORWARDED_ALLOW_IPS"] == values["ingressCIDR"] != "*"
    assert "NUM_PROXIES" not in config


# --- the live grid's WebSockets without permessage-deflate (scripts/serve.sh) --------------------------------------


def test_the_live_grid_declines_per_message_deflate_by_default(served):
    """Browsers offer permessage-deflate; compressing each update once per viewer was half the fan-out's CPU, so the
    server declines it (WS_PER_MESSAGE_DEFLATE=true turns it on) and the grid works all the same."""
    with client_from("127.0.0.9") as client:
        token = ask_for_token(client, served, "ada", "the-right-password-42", "").json()["token"]

    async def first_message():
        async with connect(
            served.replace("http://", "ws://") + "/ws/gpus/",
            origin=served,
            compression="deflate",
            additional_headers={"Authorization": f"Token {token}"},
            open_timeout=60,
        ) as socket:
            return socket.response.headers.get("Sec-WebSocket-Extensions"), json.loads(await socket.recv())

    extensions, message = asyncio.run(first_message())
    assert extensions is None
    assert message["type"] == "snapshot" and isinstance(message["gpus"], list)


def test_serve_sh_refuses_a_deflate_setting_it_does_not_know():
    result = subprocess.run(  # noqa: S603 - our own script
        [str(ROOT / "scripts" / "serve.sh")],
        env={**os.environ, "WS_PER_MESSAGE_DEFLATE": "yes please"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "WS_PER_MESSAGE_DEFLATE must be true or false, not 'yes please'." in result.stderr
