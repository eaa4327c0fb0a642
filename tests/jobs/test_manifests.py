"""Every manifest the Kubernetes backend builds: the official schemas (strict) and the rules they lack."""

import copy

import kubernetes_validate
import pytest
from kubernetes import client

from jobs.backends.base import DatasetVolume, JobSpec
from jobs.backends.manifests import (
    COMPLETION_INDEX,
    ClusterConfig,
    checkpoint_claim_manifest,
    job_manifest,
    service_manifest,
)
from jobs.backends.rules import (
    is_dns1035_label,
    is_dns1123_label,
    is_label_key,
    is_label_value,
    is_quantity,
    label_value,
    manifest_problems,
    scale_quantity,
)

# The version the lab's cluster runs, and the one the pinned kubernetes client (37) speaks.
KUBERNETES_VERSIONS = ("1.33", "1.37")
OWNER_UID = "9a3f1c7e-2b4d-4e8a-9c1f-0123456789ab"

NCCL = ClusterConfig(nccl_socket_ifname="ens1f0", nccl_ib_hca="mlx5_0,mlx5_1", checkpoint_storage_class="cephfs")


def spec(**overrides) -> JobSpec:
    fields = dict(
        job_id=4242,
        attempt=3,
        image="registry.lab.example/pytorch/pytorch:2.4.0-cuda12.4",
        command=("python", "train.py", "--epochs", "3"),
        gpus_per_node=1,
        nodes=1,
        node_names=("gpu07",),
        max_runtime_s=4 * 3600,
        env={"EPOCHS": "3", "WANDB_MODE": "offline"},
        display_name="ResNet-50 on ImageNet (attempt 3)",
        owner="Alice.Smith@uni.example",
        course="ML 101",
        datasets=(DatasetVolume("imagenet", claim="imagenet-ro"), DatasetVolume("coco_2017", claim="coco")),
    )
    fields.update(overrides)
    return JobSpec(**fields)


CASES = {
    "one node": (spec(), ClusterConfig()),
    "one node, no checkpoint, no placement": (spec(checkpoint=False, node_names=(), datasets=()), ClusterConfig()),
    "four nodes with NCCL": (spec(nodes=4, node_names=("gpu01", "gpu02", "gpu03", "gpu04")), NCCL),
    "two nodes of 8 GPUs": (spec(nodes=2, gpus_per_node=8, node_names=("dgx1", "dgx2")), NCCL),
    "big ids": (spec(job_id=10**12, attempt=99, owner="", course=""), ClusterConfig(gpu_resource="amd.com/gpu")),
}


def manifests(job: JobSpec, config: ClusterConfig) -> list[dict]:
    built = [job_manifest(job, config), checkpoint_claim_manifest(job, config)]
    if job.nodes > 1:
        built.append(service_manifest(job, config, owner_uid=OWNER_UID))
    return built


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("case", CASES)
def test_every_manifest_passes_strict_validation_and_the_name_rules(case, version):
    for manifest in manifests(*CASES[case]):
        kubernetes_validate.validate(manifest, version, strict=True)
        assert manifest_problems(manifest) == []


def test_strict_validation_catches_what_the_server_would_refuse():
    manifest = job_manifest(*CASES["one node"])
    typo = copy.deepcopy(manifest)
    typo["spec"]["template"]["spec"]["containers"][0]["comand"] = ["python"]
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(typo, KUBERNETES_VERSIONS[0], strict=True)
    bad = copy.deepcopy(manifest)
    bad["metadata"]["name"] = "Job_42"
    bad["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"] = "24 GiB"
    bad["metadata"]["labels"]["portal.gpulab.io/owner"] = "-alice-"
    assert len(manifest_problems(bad)) == 3


@pytest.mark.parametrize("case", CASES)
def test_the_client_models_carry_the_manifests_unchanged(case):
    """The client 37 validates bodies with pydantic: the models must take our dicts and give them back whole."""
    api = client.ApiClient()
    job, config = CASES[case]
    models = {"Job": client.V1Job, "Service": client.V1Service, "PersistentVolumeClaim": client.V1PersistentVolumeClaim}
    for manifest in manifests(job, config):
        model = models[manifest["kind"]].from_dict(manifest)
        assert api.sanitize_for_serialization(model) == manifest


def env_of(manifest: dict) -> dict:
    container = manifest["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_single_node_job():
    manifest = job_manifest(*CASES["one node"])
    job_spec, pod = manifest["spec"], manifest["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert manifest["metadata"]["name"] == "job-4242-a3" and manifest["metadata"]["namespace"] == "gpu-lab-jobs"
    assert manifest["metadata"]["labels"]["portal.gpulab.io/job-id"] == "4242"
    assert manifest["metadata"]["labels"]["portal.gpulab.io/attempt"] == "3"
    assert manifest["metadata"]["labels"]["portal.gpulab.io/owner"] == "Alice.Smith-uni.example"
    assert manifest["metadata"]["annotations"]["portal.gpulab.io/owner"] == "Alice.Smith@uni.example"
    assert job_spec["activeDeadlineSeconds"] == 14400 and job_spec["backoffLimit"] == 0
    assert job_spec["ttlSecondsAfterFinished"] == 86400 and "completionMode" not in job_spec
    assert container["command"] == ["python", "train.py", "--epochs", "3"] and "args" not in container
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "1", "memory": "24Gi"}
    assert container["resources"]["requests"] == {"nvidia.com/gpu": "1", "cpu": "4", "memory": "24Gi"}
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["gpu07"]}]}]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] == 1000
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": True,
    }
    assert pod["automountServiceAccountToken"] is False and pod["restartPolicy"] == "Never"
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert pod["terminationGracePeriodSeconds"] == 120
    env = env_of(manifest)
    assert env["EPOCHS"] == "3" and env["WORLD_SIZE"] == "1" and env["NODE_RANK"] == "0"
    assert env["CHECKPOINT_DIR"] == "/checkpoint" and env["DATASET_IMAGENET"] == "/data/imagenet"
    assert env["DATASET_COCO_2017"] == "/data/coco_2017"
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert mounts["/data/imagenet"]["readOnly"] is True and "readOnly" not in mounts["/checkpoint"]
    claims = {v["name"]: v.get("persistentVolumeClaim") for v in pod["volumes"]}
    assert claims["checkpoint"] == {"claimName": "job-4242-checkpoint"}
    assert claims["dataset-0"] == {"claimName": "imagenet-ro", "readOnly": True}


def test_multi_node_job_is_indexed_with_the_rendezvous_torchrun_needs():
    job, config = CASES["four nodes with NCCL"]
    manifest = job_manifest(job, config)
    job_spec, pod = manifest["spec"], manifest["spec"]["template"]["spec"]
    assert (job_spec["completionMode"], job_spec["completions"], job_spec["parallelism"]) == ("Indexed", 4, 4)
    assert pod["subdomain"] == "job-4242-a3"
    env = env_of(manifest)
    assert env["MASTER_ADDR"] == "job-4242-a3-0.job-4242-a3.gpu-lab-jobs.svc"
    assert env["MASTER_PORT"] == "29500" and env["WORLD_SIZE"] == "4" and env["NPROC_PER_NODE"] == "1"
    assert env["NODE_RANK"] == {"fieldRef": {"fieldPath": COMPLETION_INDEX}}
    assert env["NCCL_SOCKET_IFNAME"] == "ens1f0" and env["NCCL_IB_HCA"] == "mlx5_0,mlx5_1"
    anti = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert anti["topologyKey"] == "kubernetes.io/hostname"
    assert anti["labelSelector"]["matchLabels"] == {"portal.gpulab.io/job-id": "4242", "portal.gpulab.io/attempt": "3"}
    service = service_manifest(job, config, owner_uid=OWNER_UID)
    assert service["metadata"]["name"] == pod["subdomain"]
    assert service["spec"]["clusterIP"] == "None" and service["spec"]["publishNotReadyAddresses"] is True
    assert service["spec"]["selector"] == anti["labelSelector"]["matchLabels"]
    assert service["metadata"]["ownerReferences"][0]["uid"] == OWNER_UID
    claim = checkpoint_claim_manifest(job, config)
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"] and claim["spec"]["storageClassName"] == "cephfs"


def test_resources_scale_with_gpus_and_follow_the_settings():
    job, config = CASES["two nodes of 8 GPUs"]
    resources = job_manifest(job, config)["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert resources["limits"] == {"nvidia.com/gpu": "8", "memory": "192Gi"}
    assert resources["requests"]["cpu"] == "32"
    big, amd = CASES["big ids"]
    assert "amd.com/gpu" in job_manifest(big, amd)["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]


def test_settings_make_the_cluster_config(settings):
    settings.KUBERNETES_GPU_RESOURCE = "nvidia.com/mig-1g.10gb"
    settings.JOBS_NAMESPACE = "teaching"
    settings.JOBS_NCCL_SOCKET_IFNAME = "eth1"
    settings.JOBS_TOLERATIONS = ["nvidia.com/gpu", "lab/dedicated"]
    config = ClusterConfig.from_settings()
    assert (config.gpu_resource, config.namespace, config.nccl_socket_ifname) == (
        "nvidia.com/mig-1g.10gb",
        "teaching",
        "eth1",
    )
    assert len(job_manifest(spec(), config)["spec"]["template"]["spec"]["tolerations"]) == 2


@pytest.mark.parametrize(
    "check,good,bad",
    [
        (is_dns1123_label, ["job-1-a1", "a", "0abc", "x" * 63], ["Job", "-a", "a-", "a_b", "x" * 64, ""]),
        (is_dns1035_label, ["job-1-a1"], ["1job", "job.1"]),
        (is_label_key, ["portal.gpulab.io/job-id", "app", "a.b/c_d"], ["/x", "UP.per/x", "a/" + "x" * 64, "a/-x"]),
        (is_label_value, ["", "Alice.Smith", "a_b-c"], ["-a", "a b", "a@b", "x" * 64]),
        (is_quantity, ["1", "500m", "24Gi", "1.5", "1e3", ".5", "+2k"], ["24 Gi", "24GB", "Gi", "", "1..2", 24]),
    ],
)
def test_name_and_quantity_rules(check, good, bad):
    assert all(check(value) for value in good)
    assert not any(check(value) for value in bad)


def test_scale_quantity_and_label_values():
    assert scale_quantity("24Gi", 2) == "48Gi"
    assert scale_quantity("4", 8) == "32"
    assert scale_quantity("0.5", 3) == "1.5"
    assert scale_quantity("500m", 2) == "1000m"
    with pytest.raises(ValueError):
        scale_quantity("four", 2)
    assert label_value("Alice Smith <alice@uni>") == "Alice-Smith--alice-uni"
    assert is_label_value(label_value("ü" * 100))
