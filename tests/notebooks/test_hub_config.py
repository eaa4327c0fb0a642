"""The hub side of the portal-hub contract (deploy/jupyterhub): against a real JupyterHub on loopback, and offline
for the cluster (KubeSpawner's pod and volume manifests, the notebooks' NetworkPolicy, both schema-checked)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import time
import types
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import kubernetes_validate
import pytest
import requests
import yaml
from traitlets.config.loader import PyFileConfigLoader
from traitlets.utils.importstring import import_item

from labs.notebooks.localhub import CONFIG, LocalHub

ROOT = Path(__file__).resolve().parent.parent.parent
NETWORK_POLICY = ROOT / "deploy" / "kubernetes" / "notebooks-networkpolicy.yaml"
KUBERNETES_VERSIONS = ("1.31", "1.33")


def sign(options: dict, key: str) -> str:
    """The contract, written out: HMAC-SHA256 of the canonical JSON of the options without "sig"."""
    body = json.dumps({k: v for k, v in options.items() if k != "sig"}, sort_keys=True, separators=(",", ":"))
    return hmac.new(key.encode(), body.encode(), hashlib.sha256).hexdigest()


def options(session: int, key: str | None, **changes) -> dict:
    """A quarter-GPU session on gpu07 as the portal sends it (signed with `key` unless it is None)."""
    opts = {
        "session": session,
        "profile": "pytorch-quarter",
        "image": "quay.io/jupyter/pytorch-notebook:cuda12-latest",
        "gpu_share": 0.25,
        "gpu_mem_mb": 6141,
        "cpu": 2.0,
        "mem_gb": 8.0,
        "node": "gpu07",
        "gpu_index": 0,
        "gpu_uuid": "GPU-5c0e5b1e-8f1d-4c1c-9d53-2f6f1b2a7e11",
        "max_seconds": 14400,
    }
    opts.update(changes)
    if key is not None:
        opts["sig"] = sign(opts, key)
    return opts


class Api:
    """The hub's REST API with one token (the portal's, the admin service's or a person's)."""

    def __init__(self, hub: LocalHub, token: str) -> None:
        self.hub = hub
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"token {token}"

    def __call__(self, method: str, path: str, **kwargs) -> requests.Response:
        return self.http.request(method, f"{self.hub.api_url}{path}", timeout=10, **kwargs)

    def servers(self, user: str) -> dict:
        response = self("GET", f"/users/{user}")
        assert response.status_code == 200, response.text
        return response.json()["servers"]

    def wait(self, condition, *, timeout: float = 30, what: str = "the hub"):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            result = condition()
            if result:
                return result
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}\n{self.hub.log_tail(30)}")


@pytest.fixture
def portal(hub) -> Api:
    return Api(hub, hub.token)


@pytest.fixture
def people(hub, portal):
    """Makes hub users with names no other test uses; stops their servers and deletes them afterwards."""
    made: list[str] = []

    def make(count: int = 1) -> list[str]:
        tag = uuid.uuid4().hex[:8]
        names = [f"hubcfg-{tag}-{i}" for i in range(count)]
        response = portal("POST", "/users", json={"usernames": names})
        assert response.status_code == 201, response.text
        made.extend(names)
        return names

    yield make
    for name in made:
        for server in portal.servers(name):
            portal("DELETE", f"/users/{name}/servers/{server}")
    for name in made:
        portal.wait(lambda name=name: not portal.servers(name), what=f"{name}'s servers to stop")
        assert portal("DELETE", f"/users/{name}").status_code == 204


def ready(portal: Api, user: str, server: str) -> dict | None:
    model = portal.servers(user).get(server)
    return model if model and model["ready"] else None


# --- Against the real hub -------------------------------------------------------------------------------------------


def test_a_signed_start_becomes_ready_answers_through_the_proxy_and_stops(hub, portal, people):
    (alice,) = people()
    started = portal("POST", f"/users/{alice}/servers/nb17", json=options(17, hub.token))
    assert started.status_code in (201, 202), started.text

    model = portal.wait(lambda: ready(portal, alice, "nb17"), what="nb17 to be ready")
    assert model["pending"] is None and model["url"] == f"/user/{alice}/nb17/" and model["last_activity"]
    active = portal("GET", "/users", params={"state": "active"}).json()
    assert [user["servers"]["nb17"]["ready"] for user in active if user["name"] == alice] == [True]

    page = requests.get(f"{hub.public_url}{model['url']}lab", timeout=10, allow_redirects=False)
    assert page.status_code == 200
    assert f"Echo notebook nb17 of {alice}" in page.text
    about = requests.get(f"{hub.public_url}{model['url']}api/status", timeout=10).json()
    assert about["session"] == 17 and about["node"] == "gpu07" and about["user"] == alice

    stopped = portal("DELETE", f"/users/{alice}/servers/nb17")
    assert stopped.status_code in (202, 204)
    portal.wait(lambda: "nb17" not in portal.servers(alice), what="nb17 to be gone")
    after = requests.get(f"{hub.public_url}{model['url']}lab", timeout=10, allow_redirects=False)
    assert "Echo notebook" not in after.text


def test_the_portals_own_signer_speaks_the_contract(hub):
    from labs.notebooks.hub_client import sign as portal_sign

    opts = options(5, None)
    assert portal_sign(opts, hub.token) == sign(opts, hub.token)


def incomplete(key: str) -> dict:
    opts = {k: v for k, v in options(21, None).items() if k != "node"}
    return {**opts, "sig": sign(opts, key)}


REFUSED = {
    "no body": lambda key: None,
    "empty options": lambda key: {},
    "unsigned": lambda key: options(21, None),
    "signed with another key": lambda key: options(21, "not-the-portal-token"),
    "changed after signing": lambda key: {**options(21, key), "gpu_share": 1.0},
    "signed for another server": lambda key: options(22, key),
    "signed but malformed": lambda key: options(21, key, cpu="lots"),
    "signed but incomplete": incomplete,
}


@pytest.mark.parametrize("case", REFUSED)
def test_a_start_without_options_the_portal_signed_is_refused_and_leaves_nothing(hub, portal, people, case):
    (bob,) = people()
    body = REFUSED[case](hub.token)
    kwargs = {} if body is None else {"json": body}
    response = portal("POST", f"/users/{bob}/servers/nb21", **kwargs)
    assert response.status_code == 403, response.text
    assert "Refused to start" in response.json()["message"]
    assert portal.servers(bob) == {}
    active = portal("GET", "/users", params={"state": "active"}).json()
    assert bob not in [user["name"] for user in active]


def test_people_can_use_but_not_start_or_stop_their_servers(hub, portal, people):
    carol, dave = people(2)
    admin = Api(hub, hub.admin_token)
    issued = admin("POST", f"/users/{carol}/tokens", json={"note": "her own", "expires_in": 600})
    assert issued.status_code == 201, issued.text
    own = Api(hub, issued.json()["token"])

    assert own("GET", f"/users/{carol}").status_code == 200
    assert own("POST", f"/users/{carol}/servers/nb31", json=options(31, hub.token)).status_code == 403
    assert own("POST", f"/users/{dave}/servers/nb32", json=options(32, hub.token)).status_code in (403, 404)
    assert own("GET", f"/users/{dave}").status_code in (403, 404)
    # Nor a token with more than she has.
    assert own("POST", f"/users/{carol}/tokens", json={"scopes": ["servers!user"]}).status_code in (400, 403)
    assert portal.servers(carol) == {}

    assert portal("POST", f"/users/{carol}/servers/nb31", json=options(31, hub.token)).status_code in (201, 202)
    portal.wait(lambda: ready(portal, carol, "nb31"), what="nb31 to be ready")
    assert own("GET", f"/users/{carol}").json()["servers"]["nb31"]["ready"] is True
    assert own("DELETE", f"/users/{carol}/servers/nb31").status_code == 403
    assert ready(portal, carol, "nb31")


def test_sixty_starts_in_a_burst_all_become_ready(hub, portal, people, record_property):
    """A class of 60 starting at once, at most 20 spawns pending as the portal keeps it (NOTEBOOKS_MAX_STARTING).

    The hub's concurrent_spawn_limit counts pending spawns (from the POST until the server is ready), not requests
    in flight; so each of the 20 slots, like the portal's pass, is held until its server is ready."""
    names = people(60)
    begun = time.monotonic()

    def start(index_name):
        index, name = index_name
        own = Api(hub, hub.token)  # a session per thread
        server = f"nb{1000 + index}"
        status = own("POST", f"/users/{name}/servers/{server}", json=options(1000 + index, hub.token)).status_code
        if status in (201, 202):
            own.wait(lambda: ready(own, name, server), timeout=60, what=f"{name}'s server")
        own.http.close()
        return status

    with ThreadPoolExecutor(max_workers=20) as pool:
        statuses = list(pool.map(start, enumerate(names)))
    assert set(statuses) <= {201, 202}, statuses

    def all_ready():
        active = portal("GET", "/users", params={"state": "active"}).json()
        ready_names = {u["name"] for u in active for s in u["servers"].values() if s["ready"]}
        return set(names) <= ready_names

    portal.wait(all_ready, timeout=60, what="60 servers to be ready")
    record_property("burst_60_ready_s", round(time.monotonic() - begun, 2))
    pages = [
        requests.get(f"{hub.public_url}/user/{name}/nb{1000 + i}/", timeout=10).status_code
        for i, name in enumerate(names)
    ]
    assert pages == [200] * 60


def test_a_session_ends_by_itself_and_the_hub_restarts_without_its_echo_servers():
    with LocalHub(spawner="echo", portal_url="http://127.0.0.1:9", env={"HUB_POLL_INTERVAL_S": "1"}) as own:
        portal = Api(own, own.token)
        assert portal("POST", "/users/erin").status_code == 201
        portal("POST", "/users/erin/servers/nb41", json=options(41, own.token, max_seconds=2))
        portal("POST", "/users/erin/servers/nb42", json=options(42, own.token))
        portal.wait(lambda: ready(portal, "erin", "nb41") and ready(portal, "erin", "nb42"), what="both ready")
        portal.wait(lambda: "nb41" not in portal.servers("erin"), timeout=15, what="nb41 to reach its end")
        assert ready(portal, "erin", "nb42")

        own.restart()
        assert own.running
        assert portal.servers("erin") == {}  # echo servers live in the hub process: nothing to resume
        assert portal("POST", "/users/erin/servers/nb43", json=options(43, own.token)).status_code in (201, 202)
        portal.wait(lambda: ready(portal, "erin", "nb43"), what="nb43 after the restart")
    assert not own.running and not own.data_dir.exists()


def test_the_local_spawner_runs_jupyterlab_in_the_students_home():
    with LocalHub(spawner="local", portal_url="http://127.0.0.1:9") as own:
        portal = Api(own, own.token)
        assert portal("POST", "/users/frank").status_code == 201
        assert portal("POST", "/users/frank/servers/nb51", json=options(51, own.token)).status_code in (201, 202)
        model = portal.wait(lambda: ready(portal, "frank", "nb51"), timeout=60, what="JupyterLab to be ready")
        pid = model["state"]["pid"]

        api = requests.get(f"{own.public_url}{model['url']}api", timeout=10)
        assert api.status_code == 200 and "version" in api.json()  # jupyter-server, through the proxy
        lab = requests.get(f"{own.public_url}{model['url']}lab", timeout=10, allow_redirects=False)
        assert lab.status_code == 302 and "/hub/api/oauth2/authorize" in lab.headers["Location"]  # log in first
        assert (own.data_dir / "homes" / "frank").is_dir()

        assert portal("DELETE", "/users/frank/servers/nb51").status_code in (202, 204)
        portal.wait(lambda: "nb51" not in portal.servers("frank"), what="nb51 to stop")
        assert not Path(f"/proc/{pid}").exists()


# --- Offline: the cluster's spawner ---------------------------------------------------------------------------------

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: offline, cluster: {server: "https://127.0.0.1:9"}}]
users: [{name: offline, user: {token: offline}}]
contexts: [{name: offline, context: {cluster: offline, user: offline}}]
current-context: offline
"""
KEY = "portal-service-token-for-the-manifest-tests"


@pytest.fixture
def cluster_config(tmp_path, monkeypatch):
    """Loads the real hub config as the cluster's hub would (HUB_SPAWNER=kubernetes), with no cluster to talk to."""
    import kubernetes_asyncio.config.kube_config as kube_config

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(kubeconfig))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    for name in list(os.environ):
        if name.startswith("HUB_"):
            monkeypatch.delenv(name)
    base = {
        "PORTAL_URL": "https://portal.lab.example",
        "OAUTH_CLIENT_ID": "jupyterhub",
        "OAUTH_CLIENT_SECRET": "an-oauth-client-secret",
        "JUPYTERHUB_PORTAL_TOKEN": KEY,
        "HUB_SPAWNER": "kubernetes",
        "HUB_CONNECT_URL": "http://hub.gpu-lab-notebooks.svc:8081",
        "HUB_DATA_DIR": str(tmp_path / "hub"),
    }

    def load(**env: str):
        for name, value in {**base, **env}.items():
            monkeypatch.setenv(name, value)
        return PyFileConfigLoader(CONFIG.name, path=str(CONFIG.parent)).load_config()

    return load


def build(config, opts: dict, *, user: str = "alice", server: str = "nb17") -> tuple[dict, dict]:
    """The pod and home-volume manifests KubeSpawner would send for these options, as JSON."""
    from kubernetes_asyncio.client import ApiClient

    spawner_class = import_item(config.JupyterHub.spawner_class)

    async def make():
        spawner = spawner_class(
            config=config,
            _mock=True,
            user=types.SimpleNamespace(name=user, id=7, url=f"/user/{user}/", escaped_name=user),
            # What the hub gives its spawners: its API as pods reach it (HUB_CONNECT_URL).
            hub=types.SimpleNamespace(
                public_host="",
                url=f"{config.JupyterHub.hub_connect_url}/hub/",
                base_url="/hub/",
                api_url=f"{config.JupyterHub.hub_connect_url}/hub/api",
            ),
            orm_spawner=types.SimpleNamespace(name=server, display_name=server, server=None),
        )
        await spawner._run_apply_user_options(opts)
        pod, pvc = await spawner.get_pod_manifest(), spawner.get_pvc_manifest()
        # KubeSpawner's models are kubernetes_asyncio's: serialized by that client, as KubeSpawner sends them.
        async with ApiClient() as api:
            return api.sanitize_for_serialization(pod), api.sanitize_for_serialization(pvc), spawner.namespace

    pod, pvc, namespace = asyncio.run(make())
    pod["metadata"]["namespace"] = pvc["metadata"]["namespace"] = namespace
    return pod, pvc


def validate(*manifests: dict) -> None:
    for manifest in manifests:
        for version in KUBERNETES_VERSIONS:
            kubernetes_validate.validate(manifest, version, strict=True)


def resources(pod: dict) -> dict:
    (container,) = pod["spec"]["containers"]
    limits, requests_ = container["resources"]["limits"], container["resources"]["requests"]
    assert limits == requests_  # extended resources must be requested as limited; cpu/memory: Guaranteed
    return limits


def env_of(pod: dict) -> dict:
    (container,) = pod["spec"]["containers"]
    return {item["name"]: item.get("value") for item in container["env"]}


GPU_CASES = [
    # (sharing, replicas, share, mem MiB) -> the GPU resources asked for
    ("timeslice", "4", 0.25, 6141, {"nvidia.com/gpu": "1"}),
    ("timeslice", "4", 0.5, 12282, {"nvidia.com/gpu": "2"}),
    ("timeslice", "4", 0.1, 2456, {"nvidia.com/gpu": "1"}),
    ("timeslice", "4", 1.0, 24564, {"nvidia.com/gpu": "4"}),
    ("timeslice", "8", 0.25, 6141, {"nvidia.com/gpu": "2"}),
    ("hami", "4", 0.25, 6141, {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "6141", "nvidia.com/gpucores": "25"}),
    ("hami", "4", 1.0, 24564, {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "24564", "nvidia.com/gpucores": "100"}),
    ("mps", "4", 0.25, 6141, {"nvidia.com/gpu": "1"}),
    ("mps", "4", 0.5, 12282, {"nvidia.com/gpu": "1"}),  # MPS: one replica (a fixed quarter) each
    ("none", "4", 0.25, 6141, {"nvidia.com/gpu": "1"}),
    ("none", "4", 1.0, 24564, {"nvidia.com/gpu": "1"}),
]


@pytest.mark.parametrize("sharing,replicas,share,mem_mb,gpus", GPU_CASES)
def test_the_notebook_pod_for_each_gpu_sharing_mode(cluster_config, sharing, replicas, share, mem_mb, gpus):
    config = cluster_config(HUB_GPU_SHARING=sharing, HUB_GPU_REPLICAS=replicas)
    pod, pvc = build(config, options(17, KEY, gpu_share=share, gpu_mem_mb=mem_mb))
    validate(pod, pvc)

    spec = pod["spec"]
    assert pod["metadata"]["namespace"] == "gpu-lab-notebooks"
    assert spec["nodeSelector"] == {"kubernetes.io/hostname": "gpu07"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
    assert spec["activeDeadlineSeconds"] == 14400
    assert pod["metadata"]["labels"]["portal.gpulab.io/role"] == "notebook"
    assert pod["metadata"]["labels"]["portal.gpulab.io/session"] == "17"
    limits = resources(pod)
    assert {k: v for k, v in limits.items() if k.startswith("nvidia.com/")} == gpus
    assert float(limits["cpu"]) == 2.0 and int(limits["memory"]) == 8 * 1024**3
    (container,) = spec["containers"]
    assert container["image"] == "quay.io/jupyter/pytorch-notebook:cuda12-latest"
    assert env_of(pod)["PORTAL_SESSION"] == "17" and env_of(pod)["JUPYTERHUB_SERVER_NAME"] == "nb17"
    assert env_of(pod)["JUPYTERHUB_API_URL"] == "http://hub.gpu-lab-notebooks.svc:8081/hub/api"  # HUB_CONNECT_URL
    assert {"name": "home", "persistentVolumeClaim": {"claimName": "home-alice"}} in spec["volumes"]
    assert {"name": "home", "mountPath": "/home/jovyan"} in container["volumeMounts"]
    assert pvc["metadata"]["name"] == "home-alice"
    assert pvc["spec"]["resources"]["requests"]["storage"] == "10Gi"
    assert "storageClassName" not in pvc["spec"]  # the cluster's default class


@pytest.mark.parametrize("name", ["", "hami-scheduler"])
def test_notebook_pods_name_the_scheduler_the_hub_is_told(cluster_config, name):
    """HAMi places pods by free GPU memory with its own scheduler: the hub names it (no admission webhook)."""
    pod, _ = build(cluster_config(HUB_GPU_SHARING="hami", HUB_SCHEDULER_NAME=name), options(17, KEY))
    validate(pod)
    assert pod["spec"].get("schedulerName") == (name or None)


def test_a_cpu_only_session_gets_no_gpu(cluster_config):
    pod, _ = build(cluster_config(), options(18, KEY, gpu_share=0, gpu_mem_mb=0), server="nb18")
    validate(pod)
    assert not [k for k in resources(pod) if k.startswith("nvidia.com/")]
    assert env_of(pod)["NVIDIA_VISIBLE_DEVICES"] == "void"


def test_one_home_volume_per_student_shared_by_their_servers(cluster_config):
    config = cluster_config(HUB_HOME_STORAGE_CLASS="cephfs", HUB_HOME_SIZE="20Gi", HUB_HOME_ACCESS_MODE="ReadWriteMany")
    first, home = build(config, options(17, KEY))
    second, same = build(config, options(18, KEY), server="nb18")
    _, other = build(config, options(19, KEY), user="bob", server="nb19")
    validate(first, second, home, other)
    assert first["metadata"]["name"] != second["metadata"]["name"]
    # The first of her servers to start creates the claim; the others find it by name and mount it.
    assert home["metadata"]["name"] == same["metadata"]["name"] == "home-alice" and home["spec"] == same["spec"]
    for pod in (first, second):
        assert {"name": "home", "persistentVolumeClaim": {"claimName": "home-alice"}} in pod["spec"]["volumes"]
    assert other["metadata"]["name"] == "home-bob"
    assert home["spec"]["storageClassName"] == "cephfs"
    assert home["spec"]["accessModes"] == ["ReadWriteMany"]
    assert home["spec"]["resources"]["requests"]["storage"] == "20Gi"
    assert config.KubeSpawner.delete_pvc is False


def test_the_home_volume_is_named_by_the_hub_user_which_is_the_portal_account_id(cluster_config):
    pod, pvc = build(cluster_config(), options(17, KEY), user="u42")
    validate(pod, pvc)
    assert pvc["metadata"]["name"] == "home-u42" and pvc["metadata"]["annotations"]["hub.jupyter.org/username"] == "u42"
    assert {"name": "home", "persistentVolumeClaim": {"claimName": "home-u42"}} in pod["spec"]["volumes"]


def test_the_hub_signs_people_in_as_u_id_and_shows_them_their_portal_name(cluster_config):
    config = cluster_config()
    authenticator = import_item(config.JupyterHub.authenticator_class)(config=config)
    assert authenticator.username_claim == "preferred_username"  # the portal's u<id> (portal.oauth.validators)
    claims = {"sub": "42", "preferred_username": "u42", "name": "Ada Lovelace", "groups": ["student"]}
    model = asyncio.run(authenticator.update_auth_model({"name": "u42", "auth_state": {"oauth_user": claims}}))
    assert model["name"] == "u42" and model["user_info"] == {"name": "Ada Lovelace", "display_name": "Ada Lovelace"}


def test_the_cluster_hub_refuses_unsigned_options_before_building_anything(cluster_config):
    from tornado.web import HTTPError

    with pytest.raises(HTTPError) as refused:
        build(cluster_config(), options(17, "someone-elses-key"))
    assert refused.value.status_code == 403


@pytest.mark.parametrize(
    "env,sentence",
    [
        ({"HUB_CONNECT_URL": ""}, "set HUB_CONNECT_URL"),
        ({"HUB_GPU_SHARING": "mig"}, "HUB_GPU_SHARING must be one of timeslice, hami, mps, none"),
        ({"HUB_GPU_REPLICAS": "four"}, "HUB_GPU_REPLICAS must be a whole number"),
        ({"JUPYTERHUB_PORTAL_TOKEN": ""}, "set JUPYTERHUB_PORTAL_TOKEN"),
        ({"HUB_SPAWNER": "docker"}, "HUB_SPAWNER must be one of kubernetes, local, echo"),
    ],
)
def test_a_bad_environment_stops_the_hub_with_a_sentence(cluster_config, env, sentence):
    with pytest.raises(SystemExit) as stopped:
        cluster_config(**env)
    assert sentence in str(stopped.value)


def test_a_local_hub_without_its_sandbox_refuses_to_start(cluster_config):
    """Notebooks on this machine run only in bubblewrap: without it the hub stops, it never runs them bare."""
    path = os.environ["PATH"]
    with pytest.raises(SystemExit) as stopped:
        cluster_config(HUB_SPAWNER="local", PATH="/nonexistent")
    assert "HUB_SPAWNER=local" in str(stopped.value) and "bwrap is not installed" in str(stopped.value)
    config = cluster_config(HUB_SPAWNER="local", HUB_LOCAL_UID="4242", PATH=path)
    assert config.JupyterHub.spawner_class == "portal_hub.spawners.LocalSpawner"
    assert config.LocalSpawner.sandbox_uid == 4242 and "args" not in config.Spawner  # no --allow-root: never root


def test_the_notebooks_network_policy(cluster_config):
    (policy,) = list(yaml.safe_load_all(NETWORK_POLICY.read_text()))
    validate(policy)
    pod, _ = build(cluster_config(), options(17, KEY))
    selector = policy["spec"]["podSelector"]["matchLabels"]
    assert selector.items() <= pod["metadata"]["labels"].items()
    assert policy["metadata"]["namespace"] == pod["metadata"]["namespace"]
    assert set(policy["spec"]["policyTypes"]) == {"Ingress", "Egress"}

    (ingress,) = policy["spec"]["ingress"]
    (port,) = pod["spec"]["containers"][0]["ports"]
    assert ingress["ports"] == [{"protocol": "TCP", "port": port["containerPort"]}]
    assert [peer["podSelector"]["matchLabels"] for peer in ingress["from"]] == [{"portal.gpulab.io/role": "hub"}]

    egress = policy["spec"]["egress"]
    dns, hub_api, internet = egress
    assert {p["port"] for p in dns["ports"]} == {53}
    assert hub_api["ports"] == [{"protocol": "TCP", "port": 8081}]
    (v4, _v6) = (peer["ipBlock"] for peer in internet["to"])
    assert v4["cidr"] == "0.0.0.0/0"
    assert {"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16"} <= set(v4["except"])
