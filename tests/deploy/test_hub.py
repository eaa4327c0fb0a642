"""The hub as the rendered Deployment configures it, its rights, and the GPU side it relies on."""

from __future__ import annotations

import os
import sys
from decimal import Decimal
from urllib.parse import urlsplit

import pytest
import yaml
from traitlets.config.loader import PyFileConfigLoader

from tests.deploy.render import DEPLOY, OVERLAYS, find, render

HUB_CONFIG = DEPLOY / "jupyterhub" / "jupyterhub_config.py"
if str(HUB_CONFIG.parent) not in sys.path:
    sys.path.insert(0, str(HUB_CONFIG.parent))  # portal_hub, as the hub's config finds it


def hub_env(docs: list[dict]) -> dict[str, str]:
    hub = find(docs, "Deployment", "gpu-lab-hub", "gpu-lab-notebooks")
    env = {}
    for entry in hub["spec"]["template"]["spec"]["containers"][0]["env"]:
        if "valueFrom" in entry:
            env[entry["name"]] = f"from-secret-{entry['valueFrom']['secretKeyRef']['key']}".lower()
        else:
            env[entry["name"]] = entry["value"]
    return env


@pytest.fixture
def load_hub(tmp_path, monkeypatch):
    """jupyterhub_config.py loaded with the environment the rendered Deployment gives the hub."""

    def load(docs: list[dict]):
        for name in list(os.environ):
            if name.startswith("HUB_"):
                monkeypatch.delenv(name)
        env = {**hub_env(docs), "HUB_DATA_DIR": str(tmp_path / "data")}
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        return PyFileConfigLoader(HUB_CONFIG.name, path=str(HUB_CONFIG.parent)).load_config(), env

    return load


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_hub_spawns_in_its_own_namespace_with_no_more_than_its_role_allows(overlay, load_hub):
    docs = render(overlay)
    config, env = load_hub(docs)
    assert config.JupyterHub.spawner_class == "portal_hub.kube.PortalKubeSpawner"
    kube = config.KubeSpawner
    role = find(docs, "Role", "gpu-lab-hub")
    assert kube.namespace == role["metadata"]["namespace"] == "gpu-lab-notebooks"
    # The switches that would need more than the Role grants (Services, Secrets, namespaces, deleting homes).
    for switch in ("services_enabled", "internal_ssl", "enable_user_namespaces", "delete_pvc"):
        assert not kube.get(switch, False), switch
    assert not config.JupyterHub.get("internal_ssl", False)
    assert kube.storage_pvc_ensure is True
    rules = {(tuple(r["resources"]), tuple(sorted(r["verbs"]))) for r in role["rules"]}
    assert rules == {
        (("pods",), ("create", "delete", "list", "watch")),
        (("persistentvolumeclaims",), ("create", "get")),
        (("events",), ("list", "watch")),
    }
    binding = find(docs, "RoleBinding", "gpu-lab-hub")
    hub = find(docs, "Deployment", "gpu-lab-hub")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": hub["spec"]["template"]["spec"]["serviceAccountName"],
         "namespace": "gpu-lab-notebooks"}
    ]  # fmt: skip


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_urls_between_portal_hub_and_notebooks_name_services_that_exist(overlay, load_hub):
    docs = render(overlay)
    config, env = load_hub(docs)
    portal = find(docs, "ConfigMap", "gpu-lab-portal")["data"]

    def service_for(url: str) -> tuple[dict, int]:
        parts = urlsplit(url)
        name, namespace = parts.hostname.split(".")[:2]
        service = find(docs, "Service", name, namespace)
        assert parts.port in [p["port"] for p in service["spec"]["ports"]], url
        return service, parts.port

    assert service_for(config.JupyterHub.hub_connect_url)[0]["metadata"]["name"] == "gpu-lab-hub"
    assert service_for(portal["NOTEBOOKS_HUB_API_URL"])[1] == config.JupyterHub.hub_port == 8081
    assert service_for(env["PORTAL_INTERNAL_URL"])[0]["metadata"]["name"] == "gpu-lab-web"
    assert urlsplit(env["PORTAL_INTERNAL_URL"]).hostname in portal["ALLOWED_HOSTS"].split(",")
    # The portal sends people to the hub's public host, and the hub's OAuth callback is on it.
    hub_host = find(docs, "Ingress", "gpu-lab-hub")["spec"]["rules"][0]["host"]
    assert urlsplit(portal["NOTEBOOKS_HUB_PUBLIC_URL"]).hostname == hub_host
    assert config.GenericOAuthenticator.oauth_callback_url == f"https://{hub_host}/hub/oauth_callback"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_notebooks_policy_selects_the_pods_the_hub_labels(overlay, load_hub):
    docs = render(overlay)
    config, _ = load_hub(docs)
    policy = find(docs, "NetworkPolicy", "notebooks", "gpu-lab-notebooks")
    selector = policy["spec"]["podSelector"]["matchLabels"]
    assert selector.items() <= dict(config.KubeSpawner.extra_labels).items()
    hub_labels = find(docs, "Deployment", "gpu-lab-hub")["spec"]["template"]["metadata"]["labels"]
    assert hub_labels["portal.gpulab.io/role"] == "hub"


def test_time_slicing_matches_the_notebook_profiles_quarter_gpus(load_hub):
    from portal_hub.options import SessionOptions, gpu_resources

    config_map = find(render("deploy/gpu"), "ConfigMap", "time-slicing-config", "gpu-operator")
    sharing = yaml.safe_load(config_map["data"]["any"])["sharing"]["timeSlicing"]
    (resource,) = sharing["resources"]
    assert resource["name"] == "nvidia.com/gpu"
    assert sharing["failRequestsGreaterThanOne"] is False  # a half GPU asks for 2, a whole one for 4
    _, env = load_hub(render("deploy/overlays/production"))
    assert env["HUB_GPU_SHARING"] == "timeslice"
    assert int(env["HUB_GPU_REPLICAS"]) == resource["replicas"] == 4
    # A profile's share is at least 0.05 and at most 1 (labs.models.NotebookProfile.gpu_share).
    asked = {}
    for share in ("0.05", "0.25", "0.5", "0.75", "1"):
        options = SessionOptions(1, "p", "img", float(Decimal(share)), 0, 1.0, 1.0, "gpu01", 0, "GPU-x", 60)
        asked[share] = int(gpu_resources(options, sharing="timeslice", replicas=resource["replicas"])["nvidia.com/gpu"])
    assert asked == {"0.05": 1, "0.25": 1, "0.5": 2, "0.75": 3, "1": 4}


def test_dcgm_exporter_samples_every_second_where_the_collector_scrapes(settings):
    exporter = find(render("deploy/gpu"), "DaemonSet", "gpu-lab-dcgm-exporter", "gpu-operator")
    container = exporter["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["DCGM_EXPORTER_INTERVAL"] == "1000"
    (port,) = container["ports"]
    portal = find(render("deploy/overlays/production"), "ConfigMap", "gpu-lab-portal")["data"]
    assert portal["TELEMETRY_SOURCE"] == "dcgm"
    url = urlsplit(portal["TELEMETRY_DCGM_URL"].format(node="gpu07"))
    assert (url.hostname, url.port) == ("gpu07", port["hostPort"])
    values = yaml.safe_load((DEPLOY / "gpu" / "gpu-operator-values.yaml").read_text())
    assert values["devicePlugin"]["config"] == {"name": "time-slicing-config", "default": "any"}
    assert values["dcgmExporter"]["enabled"] is False  # this exporter instead of the operator's


@pytest.mark.parametrize(
    "overlay,sharing,gpus",
    [
        ("deploy/overlays/production", "timeslice", {"nvidia.com/gpu": "1"}),
        # The lab: HAMi caps the quarter-GPU profile's memory (its gpu_mem_mb) and names its own scheduler.
        (
            "deploy/overlays/lab",
            "hami",
            {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "6141", "nvidia.com/gpucores": "25"},
        ),
    ],
)
def test_the_rendered_hub_builds_the_notebook_pod_its_gpu_side_expects(
    overlay, sharing, gpus, load_hub, monkeypatch, tmp_path
):
    import kubernetes_asyncio.config.kube_config as kube_config

    from tests.notebooks.test_hub_config import KUBECONFIG, build, options, resources, validate

    kubeconfig = tmp_path / "kubeconfig"  # no cluster to talk to
    kubeconfig.write_text(KUBECONFIG)
    monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(kubeconfig))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    docs = render(overlay)
    config, env = load_hub(docs)
    assert env["HUB_GPU_SHARING"] == sharing
    pod, _ = build(config, options(17, env["JUPYTERHUB_PORTAL_TOKEN"], gpu_share=0.25, gpu_mem_mb=6141))
    validate(pod)
    assert {k: v for k, v in resources(pod).items() if k.startswith("nvidia.com/")} == gpus
    if sharing == "hami":
        scheduler = find(docs, "ConfigMap", "hami-scheduler", "kube-system")["data"]["config.yaml"]
        (profile,) = yaml.safe_load(scheduler)["profiles"]
        assert pod["spec"]["schedulerName"] == profile["schedulerName"] == "hami-scheduler"
        device = yaml.safe_load(find(docs, "ConfigMap", "hami-scheduler-device")["data"]["device-config.yaml"])
        named = {device["nvidia"][k] for k in ("resourceCountName", "resourceMemoryName", "resourceCoreName")}
        assert named == set(gpus)  # the names the device plugin advertises are the ones the pod asks for
        home = find(docs, "Deployment", "gpu-lab-hub")
        assert {"name": "HUB_HOME_STORAGE_CLASS", "value": "cephfs"} in home["spec"]["template"]["spec"]["containers"][
            0
        ]["env"]
    else:
        assert "schedulerName" not in pod["spec"]


def test_the_mps_component_renders_in_an_overlay_and_gives_every_notebook_one_client(tmp_path, load_hub, monkeypatch):
    """components/gpu-mps is in no shipped overlay (the lab's is HAMi): rendered here in one made from production."""
    import subprocess

    import kubernetes_asyncio.config.kube_config as kube_config
    import kubernetes_validate

    from tests.deploy.render import ROOT, kubectl
    from tests.notebooks.test_hub_config import KUBECONFIG, build, options, resources, validate

    overlay = tmp_path / "mps"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"resources: [{os.path.relpath(ROOT / 'deploy/overlays/production', overlay)}]\n"
        f"components: [{os.path.relpath(ROOT / 'deploy/components/gpu-mps', overlay)}]\n"
    )
    rendered = subprocess.run([kubectl(), "kustomize", str(overlay)], capture_output=True, text=True, timeout=120)
    assert rendered.returncode == 0, rendered.stderr
    docs = [doc for doc in yaml.safe_load_all(rendered.stdout) if doc]
    for doc in docs:
        kubernetes_validate.validate(doc, "1.33", strict=True)
    assert find(docs, "ConfigMap", "gpu-lab-portal")["data"]["JOBS_GPU_SHARING"] == "mps"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(kubeconfig))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    config, env = load_hub(docs)
    assert env["HUB_GPU_SHARING"] == "mps"
    pod, _ = build(config, options(17, env["JUPYTERHUB_PORTAL_TOKEN"], gpu_share=0.5, gpu_mem_mb=12282))
    validate(pod)
    assert {k: v for k, v in resources(pod).items() if k.startswith("nvidia.com/")} == {"nvidia.com/gpu": "1"}
    # The device plugin's MPS configuration the GPU operator selects: 4 clients per GPU, as HUB_GPU_REPLICAS.
    mps = yaml.safe_load(find(render("deploy/gpu"), "ConfigMap", "time-slicing-config")["data"]["mps"])
    (replicas,) = mps["sharing"]["mps"]["resources"]
    assert replicas == {"name": "nvidia.com/gpu", "replicas": int(env["HUB_GPU_REPLICAS"])}
