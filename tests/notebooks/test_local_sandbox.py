"""A hostile notebook through the hub's local spawner (real JupyterLab): its kernel reads none of the portal's or the
hub's secrets and reaches neither PostgreSQL nor Redis; the proxy and the hub API still work (the relays); it runs as
its person's own uid, with a passwd entry, no user namespaces, and the server's environment (the hub API token)
never reaches bwrap. Offline: who a local server runs as, and its sandbox's identity."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import sys
import types
import uuid
from pathlib import Path

import pytest
import requests
from django.conf import settings
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from labs.notebooks.localhub import LocalHub
from tests.notebooks.test_hub_config import Api, options, ready

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "deploy" / "jupyterhub"))
from portal_hub import spawners  # noqa: E402
from portal_hub.options import OptionsRefused, verify  # noqa: E402

HOST_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}

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
import ctypes, getpass, pwd
report("user-namespace", ctypes.CDLL(None, use_errno=True).unshare(0x10000000) == 0 or None)
print("identity:", getpass.getuser(), os.getuid(), pwd.getpwuid(os.getuid()).pw_dir == os.path.expanduser("~"))
import resource
print("memory-limit:", resource.getrlimit(resource.RLIMIT_DATA)[0])
"""


def sandboxes_of(relay: Path) -> dict[int, dict[str, str]]:
    """The environment of every bwrap (root, outside the sandbox) that runs a notebook server's relay."""
    found = {}
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if not argv[0].endswith(b"bwrap") or str(relay).encode() not in argv:
                continue
            data = (entry / "environ").read_bytes().decode()
        except OSError:
            continue
        found[int(entry.name)] = dict(item.split("=", 1) for item in data.split("\0") if "=" in item)
    return found


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
        opts = options(61, own.token, user_id=7)
        assert portal("POST", "/users/gina/servers/nb61", json=opts).status_code in (201, 202)
        model = portal.wait(lambda: ready(portal, "gina", "nb61"), timeout=90, what="JupyterLab to be ready")
        token = admin("POST", "/users/gina/tokens", json={"note": "test"}).json()["token"]
        files = [
            str(settings.BASE_DIR / "portal" / "settings" / "base.py"),
            str(settings.VAR_DIR / "oidc_rsa_private.pem"),
            str(own.data_dir / "jupyterhub.sqlite"),
            str(own.data_dir / "jupyterhub_cookie_secret"),
        ]
        code = f"CANARIES = {[canary, own.token, own.admin_token]!r}\nHUB_PID = {own.pid}\nFILES = {files!r}\n"
        output = asyncio.run(_execute(f"{own.public_url}{model['url']}", token, code + HOSTILE))
        results = dict(line.split(": ", 1) for line in output.splitlines() if ": " in line)
        assert results.pop("memory-limit") == str(8 * 1024**3)  # the profile's 8 GB (options' mem_gb)
        assert results.pop("identity") == f"gina {settings.JOBS_LOCAL_UID_BASE + 7} True"  # portal user 7's uid
        names = ("proc-environ", "signal-the-hub", "portal-and-hub-files", "tcp-5432", "tcp-6379", "unix-sockets")
        assert results == {name: "blocked" for name in (*names, "environment", "runs-as-root", "user-namespace")}, (
            output
        )
        # bwrap, which runs as root, got the portal's fixed environment: not the server's (the hub API token).
        outside = sandboxes_of(spawners.RELAY)
        assert outside and all(env == HOST_ENV for env in outside.values()), outside
        assert canary not in output and own.token not in output and database_url not in output
        # What the kernel wrote stays in the student's home, which is all it may write.
        assert (Path(own.data_dir) / "homes" / "gina").is_dir()


# --- Offline: who a local server runs as, and what its sandbox looks like from inside ---------------------------------


def local_spawner(**traits) -> spawners.LocalSpawner:
    user = types.SimpleNamespace(name="Gina", id=3, url="/user/gina/", escaped_name="gina")
    server = types.SimpleNamespace(name="nb1", display_name="nb1", server=None)
    return spawners.LocalSpawner(user=user, orm_spawner=server, home_dir="/srv/hub/homes/gina", **traits)


def test_a_local_server_runs_as_its_persons_uid_from_the_signed_options():
    sandbox = spawners.load_sandbox()
    spawner = local_spawner(tenant_uid_base=1_000_000_000, tenant_uid_count=1000)
    spawner.session_options = verify(options(1, "k" * 16, user_id=42), key="k" * 16, server_name="nb1")
    assert spawner.sandbox_identity(sandbox) == sandbox.Identity(
        uid=1_000_000_042, gid=1_000_000_042, name="gina", home="/srv/hub/homes/gina"
    )
    # Options signed before user_id existed, or a user id past the range: the shared uid, never someone else's.
    spawner.session_options = verify(options(1, "k" * 16), key="k" * 16, server_name="nb1")
    assert spawner.session_options.user_id is None
    assert spawner.sandbox_identity(sandbox).uid == 65534
    spawner.session_options = verify(options(1, "k" * 16, user_id=1000), key="k" * 16, server_name="nb1")
    assert spawner.sandbox_identity(sandbox).uid == 65534
    # Where the portal user id comes from is a setting (c.LocalSpawner.tenant_id): a hub name made of it, say.
    spawner = local_spawner(tenant_uid_base=5000, tenant_id=lambda spawner: spawner.user.id + 100)
    assert spawner.sandbox_identity(sandbox).uid == 5103
    assert local_spawner().sandbox_identity(sandbox).uid == 65534  # base 0: everyone shares sandbox_uid


def test_a_user_id_in_the_options_must_be_a_positive_whole_number():
    with pytest.raises(OptionsRefused, match="user_id must be a whole number"):
        verify(options(1, "k" * 16, user_id="42"), key="k" * 16, server_name="nb1")


IDENTITY = (
    "import getpass, grp, os, pwd, subprocess\n"
    "me = pwd.getpwuid(os.getuid())\n"
    "print(getpass.getuser(), me.pw_name, me.pw_dir, os.path.expanduser('~'), os.environ['USER'],"
    " os.environ['LOGNAME'], grp.getgrgid(os.getgid()).gr_name, os.environ.get('LD_PRELOAD'))\n"
    "print(subprocess.run(['id', '-un'], capture_output=True, text=True).stdout.strip())\n"
)


@pytest.mark.skipif(os.geteuid() != 0, reason="a server's own uid needs a hub run as root")
def test_a_notebook_servers_sandbox_has_a_passwd_entry_home_user_and_logname(tmp_path):
    sandbox = spawners.load_sandbox()
    uid = 2_100_000_000 + os.getpid() % 1_000_000
    home, sockets = tmp_path / "homes" / "gina", tmp_path / "run" / "1-nb1"
    for path in (home, sockets):
        path.mkdir(parents=True)
        spawners.give_to(path, uid, uid)
    identity = sandbox.Identity(uid=uid, gid=uid, name="gina", home=str(home))
    read, write = os.pipe()
    # The hub's environment for the server: its own USER, and what the hub process had (LD_PRELOAD is dropped).
    env = {"PATH": os.defpath, "USER": "Gina", "LD_PRELOAD": "/hub/only.so"}
    server = spawners.start_server(
        sandbox, [sys.executable, "-c", IDENTITY], env=env, identity=identity, sockets=sockets, port=18888,
        hub_port=18889, limits={"nproc": 256}, stdout=write, stderr=write,
    )  # fmt: skip
    os.close(write)
    with os.fdopen(read) as output:
        lines = output.read().splitlines()
    assert server.wait(timeout=30) == 0, lines
    assert lines == [f"gina gina {home} {home} gina gina gina None", "gina"]
