"""JupyterHub configuration for the GPU Lab Portal (compose stack, run command and tests).

The portal is the front door: it queues notebook requests, places each on a node/GPU and starts it as the named
server ``nb{session}`` through the hub's REST API with its service token and signed user_options
(portal_hub/options.py). People open notebooks through the hub's proxy, after one login at the portal (the portal is
the OAuth 2 / OpenID Connect provider, GenericOAuthenticator the client). Ordinary users cannot start or stop servers
here themselves: the portal enforces quotas, and the hub refuses any spawn whose options the portal did not sign.

Environment (a required one missing stops the hub with a sentence saying which):
    PORTAL_URL                  the portal as browsers reach it (the authorize URL, where people log in); required
    PORTAL_INTERNAL_URL         the portal as the hub reaches it server to server (token, userinfo); default PORTAL_URL
    OAUTH_CLIENT_ID             the hub's OAuth client at the portal; required
    OAUTH_CLIENT_SECRET         its secret; required
    JUPYTERHUB_PORTAL_TOKEN     the portal's API token, also the key of the options' signature; required (8+ chars)
    HUB_ADMIN_TOKEN             optional: a token for an admin service "hub-admin" (operators, the tests)
    HUB_PUBLIC_URL              the hub's proxy as browsers reach it (the OAuth callback); default http://localhost:8001
    HUB_BIND_URL                where the proxy listens; default http://127.0.0.1:8000 (the compose file: http://:8000)
    HUB_API_IP, HUB_API_PORT    where the hub API listens; default 127.0.0.1 and 8081 (the compose file: 0.0.0.0)
    HUB_PROXY_API_URL           the proxy's own API (hub to proxy); default http://127.0.0.1:<HUB_API_PORT + 1>
    HUB_PROXY_COMMAND           the configurable-http-proxy to run; default the repository's
                                node_modules/.bin/configurable-http-proxy when there is one, else the one on PATH
    HUB_CONNECT_URL             how single-user servers reach the hub API; required with kubernetes (pods are
                                outside the hub's network)
    HUB_DATA_DIR                the hub's database, cookie secret, proxy pid file and local homes;
                                default /srv/jupyterhub/data
    HUB_LOG_LEVEL               DEBUG, INFO (default), WARNING, ERROR
    HUB_CONCURRENT_SPAWN_LIMIT  spawns in flight before the hub answers 429; default 50 (the portal keeps to 20)
    HUB_POLL_INTERVAL_S         how often the hub checks each server is alive; default 30
    HUB_START_TIMEOUT_S         how long a spawner may take to start; default 600 (kubernetes: image pulls), else 60
    HUB_SPAWNER                 "local" (default): real single-user servers on this machine (JupyterLab), each
                                in the portal checkout's bubblewrap sandbox (portal_hub/spawners.py): for the
                                run command, the tests and a lab that is one machine (SINGLE_MACHINE_LAB);
                                "echo": in-process HTTP responders (benchmarks, tests);
                                "kubernetes": KubeSpawner on the lab's cluster
    HUB_ECHO_START_DELAY_S      echo only: seconds each start takes; default 0
    HUB_ECHO_COLD_START_S       echo only: seconds more for the first start of an image on a node (a pull); default 0
    HUB_LOCAL_UID_BASE          local only, a hub running as root: each person's servers run as this + their portal
                                user id (the portal's JOBS_LOCAL_UID_BASE, so their jobs and notebooks share one
                                uid); default 1000000000; 0: everyone as HUB_LOCAL_UID
    HUB_LOCAL_UID_COUNT         how many uids from the base are the portal's (JOBS_LOCAL_UID_COUNT); default 1000000
    HUB_LOCAL_UID, HUB_LOCAL_GID  local only: the user of servers without a uid of their own; default 65534 (nobody)
  With HUB_SPAWNER=kubernetes:
    HUB_NAMESPACE               where notebook pods and home volumes live; default gpu-lab-notebooks
    HUB_GPU_SHARING             timeslice (default), hami, mps or none: how a GPU share becomes a resource
                                request (see portal_hub.options.gpu_resources)
    HUB_GPU_REPLICAS            timeslice, mps: the replicas the NVIDIA device plugin advertises per GPU; default 4
    HUB_SCHEDULER_NAME          the scheduler of notebook pods; empty: the cluster's default (hami: hami-scheduler)
    HUB_HOME_STORAGE_CLASS      storage class of the per-student home volumes; empty: the cluster's default
    HUB_HOME_SIZE               size of a home volume; default 10Gi
    HUB_HOME_ACCESS_MODE        ReadWriteMany (default: one student's notebooks may run on several nodes at once
                                and share the home) or ReadWriteOnce (then they must be placed on one node)
"""

import os
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from portal_hub.options import GPU_SHARING_MODES, NOTEBOOK_LABELS, SPAWNER_KINDS, apply_hook  # noqa: E402

c = get_config()  # noqa: F821  (JupyterHub provides get_config when it loads this file)


def _env(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def _required(name: str, *, min_length: int = 1) -> str:
    value = _env(name)
    if len(value) < min_length:
        needs = f" (at least {min_length} characters)" if min_length > 1 else ""
        raise SystemExit(f"jupyterhub_config.py: set {name}{needs}.")
    return value


def _int(name: str, default: int, *, minimum: int = 0) -> int:
    value = _env(name)
    if not value:
        return default
    if not re.fullmatch(r"\d+", value) or int(value) < minimum:
        raise SystemExit(f"jupyterhub_config.py: {name} must be a whole number of at least {minimum}, got {value!r}.")
    return int(value)


def _seconds(name: str, default: float) -> float:
    value = _env(name)
    if not value:
        return default
    if not re.fullmatch(r"\d+(\.\d+)?", value):
        raise SystemExit(f"jupyterhub_config.py: {name} must be a number of seconds, got {value!r}.")
    return float(value)


def _choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = _env(name, default).lower() or default
    if value not in choices:
        raise SystemExit(f"jupyterhub_config.py: {name} must be one of {', '.join(choices)}, got {value!r}.")
    return value


portal_url = _required("PORTAL_URL").rstrip("/")
portal_internal_url = _env("PORTAL_INTERNAL_URL").rstrip("/") or portal_url
hub_public_url = _env("HUB_PUBLIC_URL", "http://localhost:8001").rstrip("/")
data_dir = Path(_env("HUB_DATA_DIR", "/srv/jupyterhub/data")).resolve()
portal_token = _required("JUPYTERHUB_PORTAL_TOKEN", min_length=8)
spawner_kind = _choice("HUB_SPAWNER", "local", SPAWNER_KINDS)
log_level = _choice("HUB_LOG_LEVEL", "info", ("debug", "info", "warning", "error")).upper()

# --- Network and state ---------------------------------------------------------------------------------------------

c.JupyterHub.log_level = log_level
c.JupyterHub.bind_url = _env("HUB_BIND_URL", "http://127.0.0.1:8000")  # the proxy: what browsers reach
c.JupyterHub.hub_ip = _env("HUB_API_IP", "127.0.0.1")  # the hub API: the portal and single-user servers only
api_port = _int("HUB_API_PORT", 8081, minimum=1)
c.JupyterHub.hub_port = api_port
if _env("HUB_CONNECT_URL"):
    c.JupyterHub.hub_connect_url = _env("HUB_CONNECT_URL")
elif spawner_kind == "kubernetes":
    raise SystemExit("jupyterhub_config.py: set HUB_CONNECT_URL (how notebook pods reach the hub API).")
data_dir.mkdir(parents=True, exist_ok=True)
c.JupyterHub.db_url = f"sqlite:///{data_dir}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = str(data_dir / "jupyterhub_cookie_secret")

# The proxy (configurable-http-proxy from npm: package.json at the repository root) and its API, which must not be
# JupyterHub's default port 8001 (the portal's run command publishes the proxy there).
repo_proxy = HERE.parent.parent / "node_modules" / ".bin" / "configurable-http-proxy"
default_proxy = str(repo_proxy) if repo_proxy.exists() else "configurable-http-proxy"
c.ConfigurableHTTPProxy.command = [_env("HUB_PROXY_COMMAND", default_proxy)]
c.ConfigurableHTTPProxy.api_url = _env("HUB_PROXY_API_URL", f"http://127.0.0.1:{api_port + 1}")
c.ConfigurableHTTPProxy.pid_file = str(data_dir / "jupyterhub-proxy.pid")

# --- Login through the portal --------------------------------------------------------------------------------------

# GenericOAuthenticator, plus the person's portal name for JupyterLab to show (portal_hub/auth.py).
c.JupyterHub.authenticator_class = "portal_hub.auth.PortalOAuthenticator"
c.GenericOAuthenticator.login_service = _env("LAB_NAME", "GPU Lab") + " Portal"
c.GenericOAuthenticator.client_id = _required("OAUTH_CLIENT_ID")
c.GenericOAuthenticator.client_secret = _required("OAUTH_CLIENT_SECRET")
c.GenericOAuthenticator.oauth_callback_url = f"{hub_public_url}/hub/oauth_callback"
c.GenericOAuthenticator.authorize_url = f"{portal_url}/o/authorize/"
c.GenericOAuthenticator.token_url = f"{portal_internal_url}/o/token/"
c.GenericOAuthenticator.userdata_url = f"{portal_internal_url}/o/userinfo/"
# "profile" brings preferred_username (the hub user name: u<portal account id>, never the portal's user name, so
# two accounts never share a hub user and a rename keeps it), name (shown to the person) and groups ([role]);
# PKCE (S256) is oauthenticator's default and the portal requires it.
c.GenericOAuthenticator.scope = ["openid", "profile"]
c.GenericOAuthenticator.username_claim = "preferred_username"
c.GenericOAuthenticator.manage_groups = True
c.GenericOAuthenticator.auth_state_groups_key = "oauth_user.groups"
c.GenericOAuthenticator.admin_groups = {"admin"}
# The portal decides who has an account: everyone it vouches for may use the hub.
c.GenericOAuthenticator.allow_all = True
# No hub login page to click through: straight to the portal, and back there on logout.
c.Authenticator.auto_login = True
c.GenericOAuthenticator.logout_redirect_url = f"{portal_url}/"
# "Sign out everywhere" at the portal reaches the hub: with JUPYTERHUB_CRYPT_KEY set the hub keeps the tokens the
# portal gave it (auth state, encrypted) and asks the portal again with them every HUB_AUTH_REFRESH_AGE_S seconds
# and before each spawn; the portal has revoked them, so the person is sent to sign in again.
if os.environ.get("JUPYTERHUB_CRYPT_KEY"):
    c.Authenticator.enable_auth_state = True
    c.Authenticator.auth_refresh_age = int(_env("HUB_AUTH_REFRESH_AGE_S", "300"))
    c.Authenticator.refresh_pre_spawn = True
    # JupyterLab in the person's language at the portal (its `locale` claim: portal_hub.language).
    from portal_hub.language import person_language

    c.Spawner.auth_state_hook = person_language
# The hub's own pages are not where notebooks are started: its root and the end of a login without a destination
# lead back to the portal.
c.JupyterHub.redirect_to_server = False
c.JupyterHub.default_url = f"{portal_url}/"

# --- Who may do what -----------------------------------------------------------------------------------------------

c.JupyterHub.services = [{"name": "portal", "api_token": portal_token}]
roles = [
    {
        "name": "portal",
        "description": "GPU Lab Portal: manages users and their notebook servers.",
        "scopes": ["admin:users", "admin:servers", "read:users", "read:servers", "users:activity"],
        "services": ["portal"],
    },
    {
        # Instead of the default "self": people use their servers, but only the portal starts and stops them.
        # (The hub logs a warning that this role lacks "self": that is the point.)
        "name": "user",
        "description": "Use your own notebook servers (the portal starts and stops them).",
        "scopes": [
            "access:servers!user",
            "read:users!user",
            "read:servers!user",
            "users:activity!user",
            "tokens!user",
        ],
    },
]
if _env("HUB_ADMIN_TOKEN"):
    c.JupyterHub.services.append({"name": "hub-admin", "api_token": _required("HUB_ADMIN_TOKEN", min_length=8)})
    roles.append(
        {
            "name": "hub-admin",
            "description": "Operators: everything on the hub (spawns still need options the portal signed).",
            "scopes": ["admin:users", "admin:servers", "admin:groups", "tokens", "read:hub", "proxy", "read:roles"],
            "services": ["hub-admin"],
        }
    )
c.JupyterHub.load_roles = roles

# --- Servers -------------------------------------------------------------------------------------------------------

c.JupyterHub.allow_named_servers = True
c.JupyterHub.named_server_limit_per_user = 0  # no limit here: the portal enforces quotas
c.JupyterHub.concurrent_spawn_limit = _int("HUB_CONCURRENT_SPAWN_LIMIT", 50)
# Answer a start or stop within a second (202 while pending); the portal polls for `ready`.
c.JupyterHub.tornado_settings = {"slow_spawn_timeout": 1, "slow_stop_timeout": 1}
c.Spawner.apply_user_options = apply_hook(
    key=portal_token,
    kind=spawner_kind,
    sharing=_choice("HUB_GPU_SHARING", "timeslice", GPU_SHARING_MODES),
    replicas=_int("HUB_GPU_REPLICAS", 4, minimum=1),
)
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = _int("HUB_START_TIMEOUT_S", 600 if spawner_kind == "kubernetes" else 60, minimum=1)
c.Spawner.http_timeout = 120 if spawner_kind == "kubernetes" else 60
# How often the hub checks each server is alive: also how late a local or echo server notices its session's end.
c.Spawner.poll_interval = _int("HUB_POLL_INTERVAL_S", 30, minimum=1)

if spawner_kind == "kubernetes":
    # Notebooks outlive a hub restart on the cluster; local ones are the hub's children and stop with it.
    c.JupyterHub.cleanup_servers = False
    c.JupyterHub.spawner_class = "portal_hub.kube.PortalKubeSpawner"
    c.KubeSpawner.namespace = _env("HUB_NAMESPACE", "gpu-lab-notebooks")
    c.KubeSpawner.cmd = ["jupyterhub-singleuser"]
    c.KubeSpawner.image_pull_policy = "IfNotPresent"
    # The Jupyter Docker Stacks' user (jovyan, 1000) and group (users, 100), which also owns the home volume.
    c.KubeSpawner.uid = 1000
    c.KubeSpawner.gid = 100
    c.KubeSpawner.fs_gid = 100
    c.KubeSpawner.extra_labels = dict(NOTEBOOK_LABELS)
    if _env("HUB_SCHEDULER_NAME"):
        c.KubeSpawner.scheduler_name = _env("HUB_SCHEDULER_NAME")
    c.KubeSpawner.tolerations = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    # One home per student, shared by all of that student's servers; never deleted with a server. {username} is the
    # hub user, u<portal account id>: a renamed account keeps its home (deploy/README.md: "Hub user names").
    c.KubeSpawner.pvc_name_template = "home-{username}"
    c.KubeSpawner.storage_pvc_ensure = True
    c.KubeSpawner.delete_pvc = False
    c.KubeSpawner.storage_capacity = _env("HUB_HOME_SIZE", "10Gi")
    c.KubeSpawner.storage_class = _env("HUB_HOME_STORAGE_CLASS") or None  # None: the cluster's default class
    access_modes = {"readwritemany": "ReadWriteMany", "readwriteonce": "ReadWriteOnce"}
    c.KubeSpawner.storage_access_modes = [
        access_modes[_choice("HUB_HOME_ACCESS_MODE", "readwritemany", tuple(access_modes))]
    ]
    c.KubeSpawner.storage_extra_labels = dict(NOTEBOOK_LABELS, **{"portal.gpulab.io/role": "home"})
    c.KubeSpawner.volumes = [{"name": "home", "persistentVolumeClaim": {"claimName": "{pvc_name}"}}]
    c.KubeSpawner.volume_mounts = [{"name": "home", "mountPath": "/home/jovyan"}]
elif spawner_kind == "local":
    from portal_hub.spawners import load_sandbox

    load_sandbox()  # stops the hub with a sentence if servers could not run sandboxed (never unsandboxed)
    c.JupyterHub.spawner_class = "portal_hub.spawners.LocalSpawner"
    # jupyterhub-singleuser with JupyterLab from the hub's own environment (the portal's .venv), in the sandbox
    # as an unprivileged user (when the hub runs as root: the person's own uid, see HUB_LOCAL_UID_BASE).
    c.Spawner.cmd = [str(Path(sys.executable).parent / "jupyterhub-singleuser")]
    c.LocalSpawner.sandbox_uid = _int("HUB_LOCAL_UID", 65534, minimum=1)
    c.LocalSpawner.sandbox_gid = _int("HUB_LOCAL_GID", 65534, minimum=1)
    c.LocalSpawner.tenant_uid_base = _int("HUB_LOCAL_UID_BASE", 1_000_000_000)
    c.LocalSpawner.tenant_uid_count = _int("HUB_LOCAL_UID_COUNT", 1_000_000, minimum=1)
    c.SimpleLocalProcessSpawner.home_dir_template = str(data_dir / "homes" / "{username}")  # homes/u<account id>
    # Kept in the hub's process group, so whoever stops that group stops the notebooks too.
    c.LocalProcessSpawner.popen_kwargs = {"start_new_session": False}
else:
    c.JupyterHub.spawner_class = "portal_hub.spawners.EchoSpawner"
    c.EchoSpawner.start_delay = _seconds("HUB_ECHO_START_DELAY_S", 0.0)
    c.EchoSpawner.cold_start_delay = _seconds("HUB_ECHO_COLD_START_S", 0.0)
