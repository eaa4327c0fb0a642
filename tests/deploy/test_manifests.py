"""Every rendered manifest: the official schemas (strict), then the rules the schemas lack."""

from __future__ import annotations

import kubernetes_validate
import pytest
from django.urls import Resolver404, resolve

from jobs.backends.rules import is_dns1035_label, is_dns1123_label
from tests.deploy import crds
from tests.deploy.render import (
    OVERLAYS,
    PORTAL_NAMESPACES,
    RENDERED,
    containers,
    find,
    pod_template,
    render,
    workloads,
)

# The versions the lab's cluster runs and the pinned kubernetes client (37) speaks (as tests/jobs/test_manifests.py).
KUBERNETES_VERSIONS = ("1.33", "1.37")
PORTAL_IMAGE = "registry.lab.example/gpu-lab-portal:"
SECRETS = {"gpu-lab-portal", "gpu-lab-hub", "gpu-lab-postgresql", "gpu-lab-portal-tls", "gpu-lab-hub-tls"}
# Made by Rook for the backups' ObjectBucketClaim (deploy/components/backups), never by the admin.
SECRETS |= {"gpu-lab-backups"}


def is_dns1123_subdomain(name: str) -> bool:
    return len(name) <= 253 and all(is_dns1123_label(part) for part in name.split("."))


def is_port_name(name: str) -> bool:
    # IANA_SVC_NAME: at most 15 lowercase letters, digits and inner single hyphens, at least one letter.
    return (
        is_dns1123_label(name) and len(name) <= 15 and "--" not in name and any(c.isalpha() for c in name)
    )  # fmt: skip


def selects(selector: dict, labels: dict) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def pods_of(docs: list[dict], namespace: str) -> list[dict]:
    """(labels, pod spec) of every workload's pods in a namespace."""
    return [pod_template(d) for d in workloads(docs) if d["metadata"]["namespace"] == namespace]


def has_port(pod_spec: dict, port, container: dict | None = None) -> bool:
    candidates = [container] if container else list(pod_spec["containers"])
    for each in candidates:
        for declared in each.get("ports") or []:
            if port in (declared["containerPort"], declared.get("name")):
                return True
    return False


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("directory", RENDERED)
def test_every_manifest_passes_strict_validation(directory, version):
    docs = render(directory)
    assert docs
    for doc in docs:
        if crds.is_custom(doc):
            crds.validate(doc)  # Rook, the bucket claim, the Prometheus Operator: tests/deploy/crds.py
        else:
            kubernetes_validate.validate(doc, version, strict=True)


@pytest.mark.parametrize("directory", RENDERED)
def test_names_are_dns_names(directory):
    for doc in render(directory):
        name = doc["metadata"]["name"]
        assert is_dns1123_subdomain(name), name
        if doc["kind"] in ("Namespace", "Service"):
            assert is_dns1035_label(name), name
        if doc["kind"] in ("Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob"):
            assert is_dns1123_label(name) and len(name) <= 52, name  # room for the pods' suffixes
            for container in containers(pod_template(doc)["spec"]):
                assert is_dns1123_label(container["name"]), container["name"]
                for port in container.get("ports") or []:
                    assert "name" not in port or is_port_name(port["name"]), port


@pytest.mark.parametrize("directory", RENDERED)
def test_selectors_match_their_pods_and_services_select_something(directory):
    docs = render(directory)
    for doc in workloads(docs):
        if doc["kind"] not in ("Job", "CronJob"):
            assert selects(doc["spec"]["selector"]["matchLabels"], pod_template(doc)["metadata"]["labels"]), doc
    for doc in docs:
        namespace = doc["metadata"].get("namespace")
        if doc["kind"] == "PodDisruptionBudget":
            matched = [
                p
                for p in pods_of(docs, namespace)
                if selects(doc["spec"]["selector"]["matchLabels"], p["metadata"]["labels"])
            ]
            assert matched, f"PodDisruptionBudget {doc['metadata']['name']} selects no pods"
        if doc["kind"] == "Service":
            matched = [p for p in pods_of(docs, namespace) if selects(doc["spec"]["selector"], p["metadata"]["labels"])]
            assert matched, f"Service {doc['metadata']['name']} selects no pods"
            for port in doc["spec"]["ports"]:
                for pod in matched:
                    assert has_port(pod["spec"], port["targetPort"]), (doc["metadata"]["name"], port)


@pytest.mark.parametrize("directory", RENDERED)
def test_ingresses_route_to_ports_their_services_have(directory):
    docs = render(directory)
    for doc in docs:
        if doc["kind"] != "Ingress":
            continue
        assert doc["spec"]["tls"] and all(t["secretName"] for t in doc["spec"]["tls"])
        for rule in doc["spec"]["rules"]:
            assert rule["host"] in doc["spec"]["tls"][0]["hosts"]
            for path in rule["http"]["paths"]:
                backend = path["backend"]["service"]
                service = find(docs, "Service", backend["name"], doc["metadata"]["namespace"])
                assert backend["port"]["name"] in [p["name"] for p in service["spec"]["ports"]]


@pytest.mark.parametrize("directory", RENDERED)
def test_probes_use_ports_the_container_has_and_paths_the_portal_serves(directory):
    for doc in workloads(render(directory)):
        spec = pod_template(doc)["spec"]
        for container in containers(spec):
            for kind in ("readinessProbe", "livenessProbe", "startupProbe"):
                probe = container.get(kind)
                if not probe:
                    continue
                action = probe.get("httpGet") or probe.get("tcpSocket")
                if action:
                    assert has_port(spec, action["port"], container), (doc["metadata"]["name"], kind)
                if "httpGet" in probe and container["image"].startswith(PORTAL_IMAGE):
                    try:
                        match = resolve(probe["httpGet"]["path"])
                    except Resolver404:
                        path = probe["httpGet"]["path"]
                        pytest.fail(f"{doc['metadata']['name']} probes {path}, which the portal does not serve")
                    assert match.url_name in ("healthz", "readyz")


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_web_is_ready_on_readyz_and_alive_on_healthz_with_a_disruption_budget(overlay):
    docs = render(overlay)
    web = find(docs, "Deployment", "gpu-lab-web")
    container = web["spec"]["template"]["spec"]["containers"][0]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert "command" not in container  # the image's CMD: uvicorn portal.asgi:application
    if overlay.endswith("production"):
        assert web["spec"]["replicas"] >= 2
        assert find(docs, "PodDisruptionBudget", "gpu-lab-web")["spec"]["minAvailable"] == 1


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_beat_is_one_and_recreated_and_every_new_pod_waits_for_the_migrations(overlay):
    docs = render(overlay)
    beat = find(docs, "Deployment", "gpu-lab-beat")
    assert beat["spec"]["replicas"] == 1 and beat["spec"]["strategy"] == {"type": "Recreate"}
    migrate = find(docs, "Job", "gpu-lab-migrate")
    assert "manage.py migrate --noinput" in " ".join(migrate["spec"]["template"]["spec"]["containers"][0]["command"])
    commands = {}
    for doc in docs:
        # The portal's own processes (the NetworkPolicy canary touches no database: nothing to wait for).
        if (
            doc["kind"] == "Deployment"
            and doc["metadata"]["namespace"] == "gpu-lab"
            and doc["metadata"]["labels"]["app.kubernetes.io/component"] in ("web", "worker", "beat", "telemetry")
        ):
            init = doc["spec"]["template"]["spec"]["initContainers"]
            assert [c["name"] for c in init] == ["wait-for-migrations"], doc["metadata"]["name"]
            assert "manage.py migrate --check" in " ".join(init[0]["command"])
            commands[doc["metadata"]["name"]] = doc["spec"]["template"]["spec"]["containers"][0].get("command")
    assert commands["gpu-lab-worker"][:4] == ["celery", "-A", "portal", "worker"]
    assert commands["gpu-lab-beat"][:4] == ["celery", "-A", "portal", "beat"]
    assert commands["gpu-lab-telemetry"] == ["python", "manage.py", "telemetry_collect"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_pods_run_unprivileged_read_only_and_bounded(overlay):
    for doc in workloads(render(overlay)):
        if doc["metadata"]["namespace"] not in PORTAL_NAMESPACES:
            continue
        name = doc["metadata"]["name"]
        spec = pod_template(doc)["spec"]
        pod = spec["securityContext"]
        assert pod["runAsNonRoot"] is True and pod["runAsUser"] > 0, name
        assert pod["seccompProfile"] == {"type": "RuntimeDefault"}, name
        for container in containers(spec):
            security = container["securityContext"]
            assert security["allowPrivilegeEscalation"] is False, name
            assert security["readOnlyRootFilesystem"] is True, name
            assert security["capabilities"] == {"drop": ["ALL"]}, name
            for kind in ("requests", "limits"):
                assert set(container["resources"][kind]) == {"cpu", "memory"}, (name, kind)
            if container["image"].startswith(PORTAL_IMAGE):
                volumes = {v["name"]: v for v in spec["volumes"]}
                mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
                assert "emptyDir" in volumes[mounts["/tmp"]], name


@pytest.mark.parametrize("directory", RENDERED)
def test_images_are_pinned(directory):
    for doc in workloads(render(directory)):
        for container in containers(pod_template(doc)["spec"]):
            image = container["image"]
            name, _, tag = image.rpartition(":")
            assert name and "/" not in tag and tag not in ("", "latest"), image


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_secrets_are_only_referenced(overlay):
    docs = render(overlay)
    assert [d for d in docs if d["kind"] == "Secret"] == []
    named = set()
    for doc in workloads(docs):
        spec = pod_template(doc)["spec"]
        for container in containers(spec):
            named |= {e["secretRef"]["name"] for e in container.get("envFrom") or [] if "secretRef" in e}
            named |= {
                e["valueFrom"]["secretKeyRef"]["name"]
                for e in container.get("env") or []
                if "secretKeyRef" in e.get("valueFrom", {})
            }
        named |= {v["secret"]["secretName"] for v in spec.get("volumes") or [] if "secret" in v}
    named |= {t["secretName"] for d in docs if d["kind"] == "Ingress" for t in d["spec"]["tls"]}
    assert named <= SECRETS and {"gpu-lab-portal", "gpu-lab-hub"} <= named
    assert ("gpu-lab-postgresql" in named) == overlay.endswith(("demo", "lab"))


def test_the_data_stores_of_the_demo_are_single_replica_and_marked_optional():
    docs = render("deploy/overlays/demo")
    for name in ("gpu-lab-postgresql", "gpu-lab-redis"):
        stateful = find(docs, "StatefulSet", name)
        assert stateful["spec"]["replicas"] == 1
        assert "single replica" in stateful["metadata"]["annotations"]["gpulab.io/note"]
    assert [d for d in render("deploy/overlays/production") if d["kind"] == "StatefulSet"] == []


def test_the_values_reach_every_manifest_that_needs_them():
    config = find(render("deploy/overlays/demo"), "ConfigMap", "gpu-lab-portal")["data"]
    assert config["ALLOWED_HOSTS"].split(",")[0] == "portal.demo.lab.example"
    assert config["CSRF_TRUSTED_ORIGINS"] == "https://portal.demo.lab.example"
    assert config["OIDC_ISSUER"] == "https://portal.demo.lab.example/o"
    assert config["NOTEBOOKS_HUB_PUBLIC_URL"] == "https://notebooks.demo.lab.example"
    hub = find(render("deploy/overlays/demo"), "Deployment", "gpu-lab-hub")
    env = {e["name"]: e.get("value") for e in hub["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["PORTAL_URL"] == "https://portal.demo.lab.example"
    assert env["HUB_PUBLIC_URL"] == "https://notebooks.demo.lab.example"
    # The values ConfigMap itself is never applied.
    assert not [d for d in render("deploy/overlays/demo") if d["metadata"]["name"] == "gpu-lab-values"]
