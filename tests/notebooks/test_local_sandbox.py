"""A hostile notebook through the hub's local spawner (real JupyterLab): its kernel reads none of the portal's or the
hub's secrets and reaches neither PostgreSQL nor Redis; the proxy and the hub API still work (the relays)."""

from __future__ import annotations

import asyncio
import json
import secrets
import uuid
from pathlib import Path

import requests
from django.conf import settings
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from labs.notebooks.localhub import LocalHub
from tests.notebooks.test_hub_config import Api, options, ready

HOSTILE = r"""
import glob, os, socket
canaries = [c.encode() for c in CANARIES]

def report(name, leak):
    print(f"{name}: {'LEAKED ' + repr(leak)[:200] if leak else 'blocked'}")

leaks = []
for path in glob.glob("/proc/[0-9]*/environ"):
    try:
        data = open(path, "rb").read()
    except OSError:
        continue
    if any(c in data for c in canaries) or b"DATABASE_URL=" in data:
        leaks.append(path)
report("proc-environ", leaks)
try:
    os.kill(HUB_PID, 0)
    report("signal-the-hub", HUB_PID)
except OSError:
    report("signal-the-hub", None)
got = []
for path in FILES:
    try:
        got.append(open(path, "rb").read(64))
    except OSError:
        pass
report("portal-and-hub-files", got)
for port in (5432, 6379):
    with socket.socket() as sock:
        sock.settimeout(2)
        report(f"tcp-{port}", "connected" if sock.connect_ex(("127.0.0.1", port)) == 0 else None)
reached = []
for path in glob.glob("/var/run/postgresql/*") + glob.glob("/run/postgresql/*") + glob.glob("/run/redis*/*"):
    with socket.socket(socket.AF_UNIX) as sock:
        if sock.connect_ex(path) == 0:
            reached.append(path)
report("unix-sockets", reached or None)
report("environment", [k for k, v in os.environ.items() if any(c in v.encode() for c in canaries)])
report("runs-as-root", os.getuid() == 0 or None)
import resource
print("memory-limit:", resource.getrlimit(resource.RLIMIT_DATA)[0])
"""


async def _execute(base_url: str, token: str, code: str) -> str:
    """Runs code in a new kernel of the server (the jupyter-server REST API and kernel protocol) and returns stdout."""
    headers = {"Authorization": f"token {token}"}
    kernel = requests.post(f"{base_url}api/kernels", headers=headers, json={}, timeout=30)
    assert kernel.status_code == 201, kernel.text
    ws_url = base_url.replace("http://", "ws://") + f"api/kernels/{kernel.json()['id']}/channels"
    conn = await websocket_connect(HTTPRequest(ws_url, headers=headers, request_timeout=30))
    msg_id = uuid.uuid4().hex
    message = {
        "header": {
            "msg_id": msg_id,
            "msg_type": "execute_request",
            "username": "",
            "session": msg_id,
            "version": "5.3",
        },
        "parent_header": {},
        "metadata": {},
        "content": {"code": code, "silent": False, "store_history": False, "allow_stdin": False},
        "channel": "shell",
    }
    await conn.write_message(json.dumps(message))
    out = []
    while True:
        reply = json.loads(await asyncio.wait_for(conn.read_message(), timeout=60))
        if reply.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        if reply["msg_type"] == "stream":
            out.append(reply["content"]["text"])
        elif reply["msg_type"] == "error":
            out.append("\n".join(reply["content"]["traceback"]))
        elif reply["msg_type"] == "status" and reply["content"]["execution_state"] == "idle":
            break
    conn.close()
    return "".join(out)


def test_a_hostile_notebook_reads_no_secret_and_reaches_no_database(tmp_path):
    canary = "canary-" + secrets.token_hex(16)
    database_url = f"postgres://portal:{secrets.token_hex(8)}@127.0.0.1:5432/portal"
    # The hub gets the portal's secrets in its environment, as it does when the run command starts it.
    with LocalHub(spawner="local", portal_url="http://127.0.0.1:9", env={
        "PORTAL_CANARY": canary, "DATABASE_URL": database_url,
    }) as own:  # fmt: skip
        portal, admin = Api(own, own.token), Api(own, own.admin_token)
        assert portal("POST", "/users/gina").status_code == 201
        assert portal("POST", "/users/gina/servers/nb61", json=options(61, own.token)).status_code in (201, 202)
        model = portal.wait(lambda: ready(portal, "gina", "nb61"), timeout=90, what="JupyterLab to be ready")
        token = admin("POST", "/users/gina/tokens", json={"note": "test"}).json()["token"]
        files = [
            str(settings.BASE_DIR / "portal" / "settings.py"),
            str(settings.VAR_DIR / "oidc_rsa_private.pem"),
            str(own.data_dir / "jupyterhub.sqlite"),
            str(own.data_dir / "jupyterhub_cookie_secret"),
        ]
        code = f"CANARIES = {[canary, own.token, own.admin_token]!r}\nHUB_PID = {own.pid}\nFILES = {files!r}\n"
        output = asyncio.run(_execute(f"{own.public_url}{model['url']}", token, code + HOSTILE))
        results = dict(line.split(": ", 1) for line in output.splitlines() if ": " in line)
        assert results.pop("memory-limit") == str(8 * 1024**3)  # the profile's 8 GB (options' mem_gb)
        names = ("proc-environ", "signal-the-hub", "portal-and-hub-files", "tcp-5432", "tcp-6379", "unix-sockets")
        assert results == {name: "blocked" for name in (*names, "environment", "runs-as-root")}, output
        assert canary not in output and own.token not in output and database_url not in output
        # What the kernel wrote stays in the student's home, which is all it may write.
        assert (Path(own.data_dir) / "homes" / "gina").is_dir()
