"""The rendered NetworkPolicies admit exactly the flows deploy/README.md lists, for every overlay."""

import ipaddress

import pytest
import yaml

from tests.deploy.netpol import Address, Cluster, Pod
from tests.deploy.render import DEPLOY, OVERLAYS, pod_template, render, workloads

OURS = ("gpu-lab", "gpu-lab-jobs", "gpu-lab-notebooks")
PORTAL_DB_USERS = ("web", "worker", "beat", "telemetry", "migrate")
PORTAL_REDIS_USERS = ("web", "worker", "beat", "telemetry")


def values(overlay: str) -> dict:
    return yaml.safe_load((DEPLOY.parent / overlay / "values.yaml").read_text())["data"]


def _ports(pod_spec: dict) -> tuple:
    return tuple(
        (port.get("name", ""), port["containerPort"], port.get("protocol", "TCP"))
        for container in pod_spec["containers"]
        for port in container.get("ports") or []
    )


def endpoints(overlay: str, docs: list[dict]) -> list:
    from jobs.backends.base import JobSpec
    from jobs.backends.manifests import ClusterConfig, job_manifest

    pods = []
    for doc in workloads(docs):
        template = pod_template(doc)
        labels = template["metadata"]["labels"]
        pods.append(
            Pod(labels["app.kubernetes.io/component"], doc["metadata"]["namespace"], labels, _ports(template["spec"]))
        )
    notebook = {
        "app.kubernetes.io/part-of": "gpu-lab-portal",
        "portal.gpulab.io/role": "notebook",
        "component": "singleuser-server",
        "hub.jupyter.org/username": "alice",
    }
    job = job_manifest(
        JobSpec(
            job_id=7,
            attempt=1,
            image="pytorch/pytorch:2.4.0",
            command=("python",),
            gpus_per_node=1,
            max_runtime_s=3600,
            owner="alice",
        ),
        ClusterConfig(),
    )
    pods += [
        Pod("notebook", "gpu-lab-notebooks", notebook, (("notebook-port", 8888, "TCP"),)),
        Pod("job", "gpu-lab-jobs", job["spec"]["template"]["metadata"]["labels"], (("rendezvous", 29500, "TCP"),)),
        Pod(
            "ingress",
            values(overlay)["ingressNamespace"],
            {"app.kubernetes.io/name": "ingress-nginx"},
            (("https", 443, "TCP"),),
        ),
        Pod("dns", "kube-system", {"k8s-app": "kube-dns"}, (("dns", 53, "UDP"), ("dns-tcp", 53, "TCP"))),
        Pod("stranger", "default", {"app": "other"}, (("http", 8080, "TCP"),)),
    ]
    first = {
        key: str(ipaddress.ip_network(values(overlay)[key])[-1])
        for key in ("databaseCIDR", "redisCIDR", "apiServerCIDR", "nodeCIDR", "smtpCIDR")
    }
    addresses = [
        Address("apiserver", first["apiServerCIDR"], (("https", 6443, "TCP"),)),
        Address("node", first["nodeCIDR"], (("dcgm", 9400, "TCP"),)),
        Address("internet", "203.0.113.5", (("https", 443, "TCP"),)),
        Address("smtp", first["smtpCIDR"], (("submission", 587, "TCP"),)),
    ]
    kinds = {d["kind"] for d in docs}
    if "CephObjectStore" in kinds:  # Ceph's S3 gateway (deploy/components/rook-ceph)
        pods.append(Pod("rgw", "rook-ceph", {"app": "rook-ceph-rgw"}, (("http", 8080, "TCP"),)))
    if "ServiceMonitor" in kinds:  # Prometheus (deploy/components/monitoring)
        pods.append(Pod("prometheus", "monitoring", {"app.kubernetes.io/name": "prometheus"}, (("web", 9090, "TCP"),)))
    names = {pod.name for pod in pods}
    # External data stores unless the overlay runs them in the cluster.
    if "postgresql" not in names:
        addresses.append(Address("postgresql", first["databaseCIDR"], (("postgresql", 5432, "TCP"),)))
    if "redis" not in names:
        addresses.append(Address("redis", first["redisCIDR"], (("redis", 6379, "TCP"),)))
    return pods + addresses


def expected(pods: list) -> set:
    ours = [p.name for p in pods if isinstance(p, Pod) and p.namespace in OURS]
    flows = {(name, "dns", 53, protocol) for name in ours for protocol in ("UDP", "TCP")}
    flows |= {
        ("ingress", "web", 8000, "TCP"),
        ("ingress", "hub", 8000, "TCP"),
        ("hub", "web", 8000, "TCP"),
        ("hub", "notebook", 8888, "TCP"),
        ("hub", "apiserver", 6443, "TCP"),
        ("notebook", "hub", 8081, "TCP"),
        ("notebook", "internet", 443, "TCP"),
        ("job", "job", 29500, "TCP"),
        ("job", "internet", 443, "TCP"),
        ("telemetry", "node", 9400, "TCP"),
        ("web", "smtp", 587, "TCP"),  # roster invitations
        ("worker", "smtp", 587, "TCP"),  # budget alerts, the weekly summary
    }
    flows |= {(name, "postgresql", 5432, "TCP") for name in PORTAL_DB_USERS}
    names = {p.name for p in pods}
    # The optional components' flows, where an overlay includes them.
    if "netcheck-canary" in names:
        flows.add(("web", "netcheck-canary", 8081, "TCP"))  # the control port only; the probe port stays refused
    if "backup" in names:
        flows.add(("backup", "postgresql", 5432, "TCP"))
        if "rgw" in names:
            flows.add(("backup", "rgw", 8080, "TCP"))
    if "prometheus" in names:
        flows.add(("prometheus", "web", 8000, "TCP"))
    flows |= {(name, "redis", 6379, "TCP") for name in PORTAL_REDIS_USERS}
    flows |= {
        (name, target, port, "TCP")
        for name in ("web", "worker")
        for target, port in (("hub", 8081), ("apiserver", 6443))
    }
    return flows


def admitted(cluster: Cluster, everything: list) -> set:
    flows = set()
    for source in everything:
        if not isinstance(source, Pod):
            continue
        for destination in everything:
            if source.namespace not in OURS and not (isinstance(destination, Pod) and destination.namespace in OURS):
                continue  # between two things that are not the portal's: not ours to decide
            for _, port, protocol in destination.ports:
                if cluster.allowed(source, destination, port, protocol):
                    flows.add((source.name, destination.name, port, protocol))
    return flows


def cluster_of(docs: list[dict]) -> Cluster:
    namespaces = {d["metadata"]["name"]: d["metadata"].get("labels") or {} for d in docs if d["kind"] == "Namespace"}
    return Cluster(docs, namespaces)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_policies_admit_the_listed_flows_and_no_others(overlay):
    docs = render(overlay)
    everything = endpoints(overlay, docs)
    got = admitted(cluster_of(docs), everything)
    want = expected(everything)
    assert sorted(want - got) == [], "listed flows the policies refuse"
    assert sorted(got - want) == [], "flows the policies admit that are not listed"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_namespace_of_the_portal_denies_by_default(overlay):
    docs = render(overlay)
    for namespace in OURS:
        deny = [
            d
            for d in docs
            if d["kind"] == "NetworkPolicy"
            and d["metadata"]["namespace"] == namespace
            and d["metadata"]["name"] == "default-deny"
        ]
        assert len(deny) == 1, namespace
        assert deny[0]["spec"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}


def test_the_evaluator_opens_a_pod_no_policy_selects_and_closes_it_once_one_does():
    web = Pod("web", "a", {"app": "web"}, (("http", 8000, "TCP"),))
    other = Pod("other", "b", {"app": "x"}, (("http", 8000, "TCP"),))
    assert Cluster([]).allowed(other, web, 8000)
    allow_named = {
        "kind": "NetworkPolicy",
        "metadata": {"name": "p", "namespace": "a"},
        "spec": {
            "podSelector": {"matchLabels": {"app": "web"}},
            "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "b"}}}], "ports": [{"port": "http"}]}],
        },
    }
    cluster = Cluster([allow_named], {"b": {"team": "b"}})
    assert cluster.allowed(other, web, 8000)
    assert not cluster.allowed(other, web, 8001)
    assert not Cluster([allow_named]).allowed(other, web, 8000)  # namespace b lacks the label
    egress = {
        "kind": "NetworkPolicy",
        "metadata": {"name": "e", "namespace": "b"},
        "spec": {
            "podSelector": {},
            "policyTypes": ["Egress"],
            "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}]}],
        },
    }
    cluster = Cluster([egress])
    assert cluster.allowed(other, Address("db", "10.2.0.5"), 5432)
    assert not cluster.allowed(other, Address("db", "10.1.0.5"), 5432)
    assert not cluster.allowed(other, web, 8000)  # an ipBlock is not a pod selector


def test_a_missing_or_a_widened_policy_shows_in_the_flows():
    overlay = "deploy/overlays/production"
    docs = render(overlay)
    everything = endpoints(overlay, docs)
    without_web = [d for d in docs if not (d["kind"] == "NetworkPolicy" and d["metadata"]["name"] == "web")]
    assert ("ingress", "web", 8000, "TCP") not in admitted(cluster_of(without_web), everything)
    for doc in docs:
        if doc["kind"] == "NetworkPolicy" and doc["metadata"]["name"] == "telemetry":
            doc["spec"]["egress"][0]["to"][0]["ipBlock"]["cidr"] = "0.0.0.0/0"
    widened = admitted(cluster_of(docs), everything) - expected(everything)
    assert ("telemetry", "internet", 443, "TCP") not in widened  # ports still pin it to 9400
    assert ("telemetry", "node", 9400, "TCP") not in widened
    for doc in docs:
        if doc["kind"] == "NetworkPolicy" and doc["metadata"]["name"] == "telemetry":
            doc["spec"]["egress"][0].pop("ports")
    assert ("telemetry", "internet", 443, "TCP") in admitted(cluster_of(docs), everything) - expected(everything)
