"""A job on the lab's cluster: a part of a GPU per sharing mode, storage tiers with per-role ceilings, the fast
network (jobs/backends/resources.py), each manifest strictly valid."""

from __future__ import annotations

import kubernetes_validate
import pytest

from jobs.backends.manifests import ClusterConfig, job_manifest
from jobs.backends.resources import config_problems, parse_storage_limits
from jobs.backends.rules import manifest_problems, parse_quantity
from tests.jobs.test_manifests import KUBERNETES_VERSIONS, spec

LIMITS = parse_storage_limits("student:scratch=50Gi,bulk=100Gi;teacher:scratch=200Gi,bulk=1Ti")


def pod_of(manifest: dict) -> tuple[dict, dict]:
    pod = manifest["spec"]["template"]["spec"]
    return pod, pod["containers"][0]


def valid(manifest: dict) -> dict:
    for version in KUBERNETES_VERSIONS:
        kubernetes_validate.validate(manifest, version, strict=True)
    assert manifest_problems(manifest) == []
    return manifest


def gpu_part(container: dict) -> dict:
    limits, requests = container["resources"]["limits"], container["resources"]["requests"]
    gpus = {k: v for k, v in limits.items() if k.startswith("nvidia.com/")}
    assert gpus == {k: v for k, v in requests.items() if k.startswith("nvidia.com/")}
    return gpus


@pytest.mark.parametrize(
    "sharing,share,gpus,expected",
    [
        ("none", 1.0, 2, {"nvidia.com/gpu": "2"}),
        ("timeslice", 0.25, 1, {"nvidia.com/gpu": "1"}),
        ("timeslice", 0.5, 1, {"nvidia.com/gpu": "2"}),
        ("timeslice", 1.0, 2, {"nvidia.com/gpu": "8"}),  # whole GPUs: every replica of them
        ("hami", 0.25, 1, {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "6141", "nvidia.com/gpucores": "25"}),
        ("hami", 1.0, 2, {"nvidia.com/gpu": "2", "nvidia.com/gpucores": "100"}),
        ("mps", 0.25, 1, {"nvidia.com/gpu": "1"}),
    ],
)
def test_the_gpu_a_job_asks_for_in_each_sharing_mode(sharing, share, gpus, expected):
    config = ClusterConfig(gpu_sharing=sharing, scheduler_name="hami-scheduler" if sharing == "hami" else "")
    job = spec(gpu_share=share, gpus_per_node=gpus)
    assert job.problems() == [] and config_problems(job, config) == []
    pod, container = pod_of(valid(job_manifest(job, config)))
    assert gpu_part(container) == expected
    assert pod.get("schedulerName") == ("hami-scheduler" if sharing == "hami" else None)


def test_a_part_of_a_gpu_gets_the_same_part_of_the_cpu_and_memory():
    _, container = pod_of(job_manifest(spec(gpu_share=0.25), ClusterConfig(gpu_sharing="hami")))
    assert container["resources"]["requests"]["cpu"] == "1"
    assert container["resources"]["requests"]["memory"] == container["resources"]["limits"]["memory"] == "6Gi"


def test_a_part_of_a_gpu_is_refused_where_the_cluster_does_not_share_them():
    assert config_problems(spec(gpu_share=0.5), ClusterConfig()) == [
        "this cluster does not share GPUs between jobs (JOBS_GPU_SHARING=none): ask for whole GPUs"
    ]


@pytest.mark.parametrize(
    "fields,problem",
    [
        ({"gpu_share": 0.0}, "gpu_share must be above 0 and at most 1"),
        ({"gpu_share": 1.5}, "gpu_share must be above 0 and at most 1"),
        ({"gpu_share": 0.5, "gpus_per_node": 2}, "a part of a GPU is for one GPU on one node only"),
        ({"gpu_share": 0.5, "nodes": 2, "node_names": ("a", "b")}, "a part of a GPU is for one GPU on one node only"),
    ],
)
def test_a_part_of_a_gpu_must_be_a_part_of_one(fields, problem):
    assert problem in spec(**fields).problems()


def test_scratch_is_the_nodes_own_disk_and_bulk_a_shared_class():
    config = ClusterConfig(bulk_storage_class="cephfs-bulk", storage_limits=LIMITS)
    job = spec(scratch="40Gi", bulk="100Gi", owner_role="student")
    assert config_problems(job, config) == []
    pod, container = pod_of(valid(job_manifest(job, config)))
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["scratch"] == {"name": "scratch", "emptyDir": {"sizeLimit": "40Gi"}}
    assert container["resources"]["requests"]["ephemeral-storage"] == "40Gi"  # the scheduler counts the disk
    claim = volumes["bulk"]["ephemeral"]["volumeClaimTemplate"]["spec"]
    assert claim["storageClassName"] == "cephfs-bulk" and claim["resources"]["requests"]["storage"] == "100Gi"
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts["scratch"] == "/scratch" and mounts["bulk"] == "/bulk"


def test_scratch_on_a_local_class_is_an_ephemeral_claim():
    config = ClusterConfig(scratch_storage_class="local-nvme", storage_limits=LIMITS)
    pod, container = pod_of(valid(job_manifest(spec(scratch="10Gi", owner_role="teacher"), config)))
    (scratch,) = [v for v in pod["volumes"] if v["name"] == "scratch"]
    assert scratch["ephemeral"]["volumeClaimTemplate"]["spec"]["storageClassName"] == "local-nvme"
    assert "ephemeral-storage" not in container["resources"]["requests"]


@pytest.mark.parametrize(
    "role,fields,problem",
    [
        ("student", {"scratch": "60Gi"}, "scratch of 60Gi is more than the 50Gi a student may ask for"),
        ("student", {"bulk": "1Ti"}, "bulk of 1Ti is more than the 100Gi a student may ask for"),
        ("guest", {"scratch": "1Gi"}, "guest may not ask for scratch storage"),
        ("student", {"scratch": "lots"}, "scratch must be a size such as 50Gi, got 'lots'"),
        ("student", {"bulk": "0"}, "bulk must be a size such as 50Gi, got '0'"),
    ],
)
def test_storage_over_the_roles_ceiling_is_refused(role, fields, problem):
    assert config_problems(spec(owner_role=role, **fields), ClusterConfig(storage_limits=LIMITS)) == [problem]


def test_a_teacher_may_ask_for_more_than_a_student():
    job = spec(owner_role="teacher", scratch="200Gi", bulk="1Ti")
    assert config_problems(job, ClusterConfig(storage_limits=LIMITS)) == []


@pytest.mark.parametrize(
    "text,why",
    [("student", "is not role:tier=size"), ("student:tmp=1Gi", "is not scratch=<size>"), ("student:bulk=x", "bulk")],
)
def test_a_bad_storage_limit_setting_says_what_is_wrong(text, why):
    with pytest.raises(ValueError, match=why):
        parse_storage_limits(text)


@pytest.mark.parametrize(
    "name,value",
    [
        ("JOBS_STORAGE_LIMITS", "student:scratch=lots"),
        ("JOBS_GPU_SHARING", "mig"),
        ("NETPOLICY_CANARY", "canary"),
        ("JOBS_NCCL_IB_DISABLE", "yes"),
    ],
)
def test_the_portal_refuses_to_start_on_a_bad_cluster_setting(name, value):
    from tests.test_deploy import manage

    result = manage("check", env={name: value})
    assert result.returncode != 0 and name in result.stderr


def test_a_multi_node_job_on_the_fast_network():
    config = ClusterConfig(
        nccl_socket_ifname="ens1f0",
        nccl_ib_hca="mlx5_0",
        nccl_ib_disable="0",
        rdma_resource="rdma/rdma_shared_device_a",
        host_network=True,
    )
    job = spec(nodes=2, node_names=("gpu01", "gpu02"))
    pod, container = pod_of(valid(job_manifest(job, config)))
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert (env["NCCL_SOCKET_IFNAME"], env["NCCL_IB_HCA"], env["NCCL_IB_DISABLE"]) == ("ens1f0", "mlx5_0", "0")
    assert container["resources"]["limits"]["rdma/rdma_shared_device_a"] == "1"
    assert container["resources"]["requests"]["rdma/rdma_shared_device_a"] == "1"
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["IPC_LOCK"]}
    assert pod["hostNetwork"] is True and pod["dnsPolicy"] == "ClusterFirstWithHostNet"


def test_one_node_needs_none_of_the_fast_network():
    config = ClusterConfig(nccl_ib_disable="1", rdma_resource="rdma/hca", host_network=True, ipc_lock=True)
    pod, container = pod_of(valid(job_manifest(spec(), config)))
    assert "hostNetwork" not in pod and "rdma/hca" not in container["resources"]["limits"]
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert not [e for e in container["env"] if e["name"].startswith("NCCL_")]


def test_ipc_lock_alone_without_rdma():
    _, container = pod_of(job_manifest(spec(nodes=2, node_names=("a", "b")), ClusterConfig(ipc_lock=True)))
    assert container["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]


@pytest.mark.parametrize("text,value", [("1Gi", 2**30), ("500m", 0.5), ("2", 2), ("1e3", 1000), ("1.5Ti", 1.5 * 2**40)])
def test_quantities_are_read_as_the_api_server_reads_them(text, value):
    assert parse_quantity(text) == pytest.approx(value) if isinstance(value, float) else parse_quantity(text) == value
