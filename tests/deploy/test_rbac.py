"""The portal's ServiceAccount may do exactly what its Kubernetes backends do: no call refused, no verb unused.

The backends (jobs/backends/kubernetes.py, labs/backends/inventory.py) run every operation against the fake API
server (tests/fakes/kube.py), which records each request; each request becomes the (namespace, group, resource,
verb) the API server would authorize. The client methods the backends' source names are read too, so an operation
these runs miss cannot hide a call. The rendered Roles and ClusterRoles bound to the account must cover the
requests and grant nothing more.
"""

from __future__ import annotations

import ast
import copy
import re
from urllib.parse import parse_qs, urlsplit

import pytest

from jobs.backends.base import JobRef, JobSpec
from jobs.backends.kubernetes import KubernetesJobs
from labs.backends.inventory import KubernetesInventory
from tests.deploy.render import OVERLAYS, ROOT, render
from tests.fakes.kube import FakeKube, gpu_node

ACCOUNT = ("gpu-lab", "gpu-lab-portal")
BACKENDS = (ROOT / "jobs" / "backends" / "kubernetes.py", ROOT / "labs" / "backends" / "inventory.py")
CLUSTER = None  # the scope of a cluster-wide grant
_PATH = re.compile(
    r"^/(?:api/v1|apis/(?P<group>[^/]+)/[^/]+)(?:/namespaces/(?P<ns>[^/]+))?/(?P<plural>[^/]+)"
    r"(?:/(?P<name>[^/]+))?(?:/(?P<sub>[^/]+))?$"
)
_METHOD = re.compile(r"^(create|read|list|patch|replace|delete|watch)_(namespaced_)?(\w+?)(_log)?$")
_PLURALS = {"job": "jobs", "pod": "pods", "service": "services", "persistent_volume_claim": "persistentvolumeclaims"}
_PLURALS["node"] = "nodes"
_VERBS = {"create": "create", "read": "get", "list": "list", "patch": "patch", "replace": "update", "delete": "delete"}
_VERBS["watch"] = "watch"


def authorized_as(method: str, path: str) -> tuple:
    """What the API server's authorizer checks for one request: (namespace, group, resource, verb)."""
    url = urlsplit(path)
    match = _PATH.match(url.path)
    assert match, path
    resource = match["plural"] + (f"/{match['sub']}" if match["sub"] else "")
    if method == "GET":
        verb = "get" if match["name"] else ("watch" if parse_qs(url.query).get("watch") == ["true"] else "list")
    else:
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method) or (
            "delete" if match["name"] else "deletecollection"
        )
    return (match["ns"] or CLUSTER, match["group"] or "", resource, verb)


def called_in_source() -> set[tuple]:
    """(group, resource, verb) of every kubernetes client method the backends' source calls."""
    found = set()
    for path in BACKENDS:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                match = _METHOD.match(node.attr)
                if match and match[3] in _PLURALS:
                    plural = _PLURALS[match[3]] + ("/log" if match[4] else "")
                    group = "batch" if plural == "jobs" else ""
                    found.add((group, plural, _VERBS[match[1]]))
    return found


@pytest.fixture(scope="module")
def recorded():
    """Every request the backends send while doing everything they do."""
    from django.test import override_settings

    kube = FakeKube().start()
    kube.nodes["gpu01"] = gpu_node("gpu01", 4)
    try:
        with override_settings(KUBERNETES_API_URL=kube.url, KUBERNETES_TOKEN="t", KUBERNETES_TIMEOUT_S=2):
            jobs = KubernetesJobs()
            spec = JobSpec(
                job_id=7, attempt=1, image="registry.lab.example/train:1", command=("python", "train.py"),
                gpus_per_node=1, nodes=2, node_names=("gpu01", "gpu02"), max_runtime_s=3600, owner="alice",
                checkpoint=True,
            )  # fmt: skip
            jobs.create(spec)
            ref = JobRef(job_id=7, attempt=1)
            kube.add_pod("job-7-a1-0", labels={"portal.gpulab.io/job-id": "7", "portal.gpulab.io/attempt": "1"},
                         log="epoch 1\n", index=0, job_name="job-7-a1")  # fmt: skip
            jobs.status(ref)
            assert jobs.logs(ref, tail_lines=10).text == "epoch 1\n"
            assert [r.job_id for r in jobs.list_running()] == [7]
            jobs.delete(ref, grace_s=30)
            jobs.purge(7)
            inventory = KubernetesInventory()
            assert [node.name for node in inventory.list_nodes()] == ["gpu01"]
            inventory.set_unschedulable("gpu01", True)
            inventory.set_unschedulable("gpu01", False)
    finally:
        kube.stop()
    return {authorized_as(method, path) for method, path, _ in kube.requests}


def granted(docs: list[dict], account: tuple = ACCOUNT) -> set[tuple]:
    """(namespace or CLUSTER, group, resource, verb) the rendered bindings give the account."""
    roles = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]): d for d in docs}
    grants = set()
    for binding in docs:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        subjects = {(s.get("namespace"), s["name"]) for s in binding["subjects"] if s["kind"] == "ServiceAccount"}
        if account not in subjects:
            continue
        ref = binding["roleRef"]
        scope = binding["metadata"].get("namespace") if binding["kind"] == "RoleBinding" else CLUSTER
        role = roles[(ref["kind"], scope if ref["kind"] == "Role" else None, ref["name"])]
        for rule in role["rules"]:
            for group in rule.get("apiGroups", []):
                for resource in rule.get("resources", []):
                    for verb in rule["verbs"]:
                        grants.add((scope, group, resource, verb))
    return grants


def problems(grants: set[tuple], requests: set[tuple]) -> list[str]:
    def covers(grant, request):
        return (grant[0] is CLUSTER or grant[0] == request[0]) and grant[1:] == request[1:]

    found = [
        f"missing: {verb} {resource} ({group or 'core'}) in {namespace or 'the cluster'}"
        for namespace, group, resource, verb in sorted(requests, key=str)
        if not any(covers(grant, (namespace, group, resource, verb)) for grant in grants)
    ]
    found += [
        f"unused: {verb} {resource} ({group or 'core'}) in {namespace or 'the cluster'}"
        for namespace, group, resource, verb in sorted(grants, key=str)
        if not any(covers((namespace, group, resource, verb), request) for request in requests)
    ]
    return found


def test_the_runs_exercise_every_call_in_the_backends_source(recorded):
    assert {request[1:] for request in recorded} == called_in_source()


def test_the_calls_are_the_ones_expected(recorded):
    assert recorded == {
        ("gpu-lab-jobs", "batch", "jobs", "create"),
        ("gpu-lab-jobs", "batch", "jobs", "get"),
        ("gpu-lab-jobs", "batch", "jobs", "list"),
        ("gpu-lab-jobs", "batch", "jobs", "delete"),
        ("gpu-lab-jobs", "", "pods", "list"),
        ("gpu-lab-jobs", "", "pods/log", "get"),
        ("gpu-lab-jobs", "", "services", "create"),
        ("gpu-lab-jobs", "", "services", "delete"),
        ("gpu-lab-jobs", "", "persistentvolumeclaims", "create"),
        ("gpu-lab-jobs", "", "persistentvolumeclaims", "delete"),
        (CLUSTER, "", "nodes", "list"),
        (CLUSTER, "", "nodes", "patch"),
    }


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_portals_rights_cover_every_call_and_nothing_more(overlay, recorded):
    assert problems(granted(render(overlay)), recorded) == []


def _edit_rule(docs, kind, name, change):
    for doc in docs:
        if doc["kind"] == kind and doc["metadata"]["name"] == name:
            change(doc["rules"])
    return docs


NEGATIVE = {
    "a verb taken away": (
        lambda docs: _edit_rule(docs, "Role", "gpu-lab-portal-jobs", lambda rules: rules[2]["verbs"].remove("get")),
        "missing: get pods/log (core) in gpu-lab-jobs",
    ),
    "watch on nodes added": (
        lambda docs: _edit_rule(
            docs, "ClusterRole", "gpu-lab-portal-nodes", lambda rules: rules[0]["verbs"].append("watch")
        ),
        "unused: watch nodes (core) in the cluster",
    ),
    "secrets added": (
        lambda docs: _edit_rule(
            docs, "Role", "gpu-lab-portal-jobs",
            lambda rules: rules.append({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}),
        ),
        "unused: get secrets (core) in gpu-lab-jobs",
    ),
    "the Role in another namespace": (
        lambda docs: [
            {**d, "metadata": {**d["metadata"], "namespace": "default"}}
            if d["kind"] in ("Role", "RoleBinding") and d["metadata"]["name"] == "gpu-lab-portal-jobs" else d
            for d in docs
        ],
        "missing: create jobs (batch) in gpu-lab-jobs",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", NEGATIVE)
def test_the_check_fails_on_a_missing_or_an_unused_verb(case, recorded):
    mutate, sentence = NEGATIVE[case]
    docs = mutate(copy.deepcopy(render("deploy/overlays/production")))
    found = problems(granted(docs), recorded)
    assert sentence in found


def test_the_accounts_without_api_rights_mount_no_token():
    docs = render("deploy/overlays/production")
    for doc in docs:
        if doc["kind"] in ("Deployment", "Job") and doc["metadata"]["namespace"] == "gpu-lab":
            spec = doc["spec"]["template"]["spec"]
            component = doc["metadata"]["labels"]["app.kubernetes.io/component"]
            if component in ("web", "worker"):
                assert spec["serviceAccountName"] == "gpu-lab-portal", component
            else:
                assert spec["serviceAccountName"] == "gpu-lab-portal-no-api", component
                assert spec["automountServiceAccountToken"] is False, component
    assert granted(docs, ("gpu-lab", "gpu-lab-portal-no-api")) == set()


def test_nothing_is_granted_on_pods_exec_secrets_or_with_a_wildcard():
    for overlay in OVERLAYS:
        for doc in render(overlay):
            for rule in doc.get("rules") or [] if doc["kind"] in ("Role", "ClusterRole") else []:
                assert "*" not in rule["verbs"] + rule.get("resources", []) + rule.get("apiGroups", []), doc
                assert not {"secrets", "pods/exec", "pods/attach"} & set(rule.get("resources", [])), doc
