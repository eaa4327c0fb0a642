"""JupyterHub configuration for the GPU Lab Portal compose stack.

People log in through the portal (the portal is the OAuth2 provider, GenericOAuthenticator
the client), the portal is registered as a Hub service with its own API token, and the
spawner is chosen by HUB_SPAWNER. This is deliberately minimal: the notebook issue fills
in the rest (spawner profiles, GPU resource requests, images, per-user limits).

Environment:
    PORTAL_URL               the portal as browsers reach it (the authorize URL); required
    PORTAL_INTERNAL_URL      the portal as the hub reaches it server to server (token and
                             userinfo URLs); defaults to PORTAL_URL
    HUB_PUBLIC_URL           the hub as browsers reach it (the OAuth callback)
    OAUTH_CLIENT_ID          the hub's OAuth application in the portal; required
    OAUTH_CLIENT_SECRET      its secret; required
    JUPYTERHUB_PORTAL_TOKEN  API token the portal uses for the Hub REST API; required
    HUB_SPAWNER              "local" (default, SimpleLocalProcessSpawner) or "kubernetes"
    HUB_CONNECT_URL          optional: how single-user servers reach the hub API
                             (needed with kubernetes, where pods are outside this network)
    HUB_DATA_DIR             where the hub keeps its database and cookie secret
"""

import os

c = get_config()  # noqa: F821  (JupyterHub provides get_config when it loads this file)


def _env(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def _required(name: str, *, min_length: int = 1) -> str:
    value = _env(name)
    if len(value) < min_length:
        needs = f" (at least {min_length} characters)" if min_length > 1 else ""
        raise SystemExit(f"jupyterhub_config.py: set {name}{needs}.")
    return value


portal_url = _required("PORTAL_URL").rstrip("/")
portal_internal_url = _env("PORTAL_INTERNAL_URL").rstrip("/") or portal_url
hub_public_url = _env("HUB_PUBLIC_URL", "http://localhost:8001").rstrip("/")
data_dir = _env("HUB_DATA_DIR", "/srv/jupyterhub/data").rstrip("/")

# --- Network and state ------------------------------------------------------------------

c.JupyterHub.bind_url = "http://:8000"  # the proxy, published on the host
# The hub API on 8081, for the portal inside the compose network (not published on the host).
c.JupyterHub.hub_ip = "0.0.0.0"  # noqa: S104
c.JupyterHub.hub_port = 8081
if _env("HUB_CONNECT_URL"):
    c.JupyterHub.hub_connect_url = _env("HUB_CONNECT_URL")
c.JupyterHub.db_url = f"sqlite:///{data_dir}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = f"{data_dir}/jupyterhub_cookie_secret"

# --- Login through the portal -------------------------------------------------------------

c.JupyterHub.authenticator_class = "oauthenticator.generic.GenericOAuthenticator"
c.GenericOAuthenticator.login_service = _env("LAB_NAME", "GPU Lab") + " Portal"
c.GenericOAuthenticator.client_id = _required("OAUTH_CLIENT_ID")
c.GenericOAuthenticator.client_secret = _required("OAUTH_CLIENT_SECRET")
c.GenericOAuthenticator.oauth_callback_url = f"{hub_public_url}/hub/oauth_callback"
c.GenericOAuthenticator.authorize_url = f"{portal_url}/o/authorize/"
c.GenericOAuthenticator.token_url = f"{portal_internal_url}/o/token/"
c.GenericOAuthenticator.userdata_url = f"{portal_internal_url}/o/userinfo/"
c.GenericOAuthenticator.scope = ["openid"]
c.GenericOAuthenticator.username_claim = "preferred_username"
# The portal decides who has an account: everyone it vouches for may use the hub.
c.GenericOAuthenticator.allow_all = True

# --- The portal as a Hub service ----------------------------------------------------------

c.JupyterHub.services = [
    {"name": "portal", "api_token": _required("JUPYTERHUB_PORTAL_TOKEN", min_length=8)},
]
c.JupyterHub.load_roles = [
    {
        "name": "portal",
        "description": "GPU Lab Portal: manages users and their notebook servers.",
        "scopes": ["admin:users", "admin:servers", "read:users", "read:servers", "users:activity"],
        "services": ["portal"],
    },
]

# --- Spawner ------------------------------------------------------------------------------

spawner = _env("HUB_SPAWNER", "local").lower() or "local"
if spawner == "kubernetes":
    c.JupyterHub.spawner_class = "kubespawner.KubeSpawner"
elif spawner == "local":
    c.JupyterHub.spawner_class = "jupyterhub.spawner.SimpleLocalProcessSpawner"
else:
    raise SystemExit(f"jupyterhub_config.py: HUB_SPAWNER must be local or kubernetes, got {spawner!r}.")
c.Spawner.default_url = "/lab"
