"""deploy/README.md: its render commands are the ones tested, its secret keys are the ones the portal demands."""

from __future__ import annotations

import re
import shlex
import subprocess

import pytest

from tests.deploy.render import OVERLAYS, RENDERED, ROOT, containers, find, pod_template, render, workloads
from tests.test_deploy import PRODUCTION_ENV, manage

# | `secret` (`namespace`) | `KEY` | required | what |   (the secret's cell is empty on its further rows)
ROW = re.compile(
    r"^\| (`(?P<secret>[a-z0-9-]+)` \(`[a-z0-9-]+`\))? *\| `(?P<key>[A-Za-z_.]+)`.*?"
    r"\| (?P<req>yes|demo only|optional) \|"
)
GUIDE = (ROOT / "deploy" / "README.md").read_text()


def kustomize_lines() -> list[str]:
    blocks = re.findall(r"```sh\n(.*?)```", GUIDE, flags=re.S)
    return [
        line.strip() for block in blocks for line in block.splitlines() if line.strip().startswith("kubectl kustomize ")
    ]


def secret_rows() -> dict[str, list[tuple[str, str]]]:
    """Secret name -> [(key, required)] from the guide's table."""
    rows: dict[str, list[tuple[str, str]]] = {}
    current = None
    for line in GUIDE.splitlines():
        match = ROW.match(line)
        if match:
            current = match["secret"] or current
            rows.setdefault(current, []).append((match["key"], match["req"]))
    return rows


def test_the_guide_renders_every_overlay_and_the_gpu_side():
    lines = kustomize_lines()
    rendered = {shlex.split(line.split(">")[0])[2] for line in lines}
    assert rendered == set(RENDERED) - {"deploy/kubernetes"}


@pytest.mark.parametrize("line", kustomize_lines())
def test_each_render_command_of_the_guide_works(line, tmp_path):
    command = shlex.split(line.split(">")[0])
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "kind: Deployment" in result.stdout or "kind: DaemonSet" in result.stdout


def test_the_guide_lists_every_secret_and_key_the_manifests_reference():
    rows = secret_rows()
    for overlay in OVERLAYS:
        docs = render(overlay)
        for doc in workloads(docs):
            for container in containers(pod_template(doc)["spec"]):
                for entry in container.get("env") or []:
                    ref = entry.get("valueFrom", {}).get("secretKeyRef")
                    if ref:
                        assert ref["key"] in [key for key, _ in rows[ref["name"]]], ref
                for entry in container.get("envFrom") or []:
                    if "secretRef" in entry:
                        assert entry["secretRef"]["name"] in rows
        for doc in docs:
            if doc["kind"] == "Ingress":
                assert doc["spec"]["tls"][0]["secretName"] in rows


def _portal_env(keys: dict[str, str]) -> dict[str, str]:
    config = find(render("deploy/overlays/production"), "ConfigMap", "gpu-lab-portal")["data"]
    # The rendered settings as the pods get them, on this machine's services instead of the cluster's.
    return {**config, "ALLOWED_HOSTS": config["ALLOWED_HOSTS"], "KUBERNETES_IN_CLUSTER": "false", **keys}


def _documented_values() -> dict[str, str]:
    keys = dict.fromkeys((key for key, _ in secret_rows()["gpu-lab-portal"]), "")
    values = {name: PRODUCTION_ENV[name] for name in keys if name in PRODUCTION_ENV}
    values["OIDC_RSA_PRIVATE_KEY"] = PRODUCTION_ENV["OIDC_RSA_PRIVATE_KEY"]
    assert set(values) == set(keys), set(keys) - set(values)
    return values


def test_the_documented_keys_with_the_rendered_config_pass_the_deploy_check():
    result = manage("check", "--deploy", "--fail-level", "WARNING", env=_portal_env(_documented_values()))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    "key", ["SECRET_KEY", "NOTEBOOKS_HUB_TOKEN", "HUB_OAUTH_CLIENT_SECRET", "OIDC_RSA_PRIVATE_KEY"]
)
def test_without_a_required_key_the_portal_refuses_to_start(key):
    assert (key, "yes") in secret_rows()["gpu-lab-portal"]
    result = manage("check", env=_portal_env({**_documented_values(), key: ""}))
    assert result.returncode != 0 and key in result.stderr


def test_without_the_metrics_token_the_deploy_check_warns():
    result = manage(
        "check", "--deploy", "--fail-level", "WARNING", env=_portal_env({**_documented_values(), "METRICS_TOKEN": ""})
    )
    assert result.returncode != 0 and "METRICS_TOKEN" in result.stdout + result.stderr
