"""deploy/components/rook-ceph in the lab overlay: a Ceph that survives a host, classes the portal uses by default."""

from __future__ import annotations

import copy

import jsonschema
import pytest
import yaml

from tests.deploy import crds
from tests.deploy.render import DEPLOY, find, render

LAB = "deploy/overlays/lab"


def pools(docs: list[dict]) -> list[tuple[str, dict]]:
    found = []
    for doc in docs:
        spec, name = doc.get("spec"), doc["metadata"]["name"]
        if doc["kind"] == "CephBlockPool":
            found.append((name, spec))
        elif doc["kind"] == "CephFilesystem":
            found += [(f"{name} metadata", spec["metadataPool"])]
            found += [(f"{name}-{pool['name']}", pool) for pool in spec["dataPools"]]
        elif doc["kind"] == "CephObjectStore":
            found += [(f"{name} metadata", spec["metadataPool"]), (f"{name} data", spec["dataPool"])]
    return found


def test_every_pool_keeps_three_copies_on_three_hosts_or_survives_two_lost():
    docs = render(LAB)
    found = pools(docs)
    assert len(found) == 6  # rbd; the filesystem's metadata, replicated, bulk; the object store's two
    for name, pool in found:
        assert pool["failureDomain"] == "host", name
        if "replicated" in pool:
            assert pool["replicated"]["size"] == 3, name
            assert pool["replicated"].get("requireSafeReplicaSize", True) is True, name
        else:  # the bulk pool: 4 data + 2 coding chunks on 6 hosts, any two may go
            assert pool["erasureCoded"] == {"dataChunks": 4, "codingChunks": 2}, name
    cluster = find(docs, "CephCluster", "rook-ceph", "rook-ceph")["spec"]
    assert cluster["mon"] == {"count": 3, "allowMultiplePerNode": False}
    assert cluster["storage"]["deviceFilter"] == "^nvme1n1$" and cluster["storage"]["useAllDevices"] is False


def test_the_sizes_come_from_the_values():
    values = yaml.safe_load((DEPLOY / "overlays" / "lab" / "values.yaml").read_text())["data"]
    docs = render(LAB)
    assert find(docs, "CephCluster", "rook-ceph")["spec"]["mon"]["count"] == values["cephMonCount"]
    assert find(docs, "CephBlockPool", "gpu-lab-rbd")["spec"]["replicated"]["size"] == values["cephReplicas"]
    fs = find(docs, "CephFilesystem", "gpu-lab-fs")["spec"]
    assert fs["metadataServer"]["activeCount"] == values["cephMdsActive"]
    assert isinstance(fs["dataPools"][0]["replicated"]["size"], int)  # a number, as Rook's schema wants


def test_the_storage_classes_name_the_pools_and_the_portal_uses_them():
    docs = render(LAB)
    classes = {d["metadata"]["name"]: d for d in docs if d["kind"] == "StorageClass"}
    assert set(classes) == {"ceph-rbd", "cephfs", "cephfs-bulk", "ceph-bucket"}
    assert classes["ceph-rbd"]["parameters"]["pool"] == "gpu-lab-rbd"
    names = {name for name, _ in pools(docs)}
    for name in ("cephfs", "cephfs-bulk"):
        assert classes[name]["parameters"]["fsName"] == "gpu-lab-fs"
        assert classes[name]["parameters"]["pool"] in names  # Rook names a filesystem's pools <fs>-<pool>
    # Shared (ReadWriteMany) homes and checkpoints on CephFS, block volumes for one pod on RBD.
    hub = find(docs, "Deployment", "gpu-lab-hub")["spec"]["template"]["spec"]["containers"][0]["env"]
    env = {e["name"]: e.get("value") for e in hub}
    assert env["HUB_HOME_STORAGE_CLASS"] == "cephfs" and env["HUB_HOME_ACCESS_MODE"] == "ReadWriteMany"
    config = find(docs, "ConfigMap", "gpu-lab-portal")["data"]
    assert config["JOBS_CHECKPOINT_STORAGE_CLASS"] == "cephfs" and config["JOBS_BULK_STORAGE_CLASS"] == "cephfs-bulk"
    postgres = find(docs, "StatefulSet", "gpu-lab-postgresql")["spec"]["volumeClaimTemplates"][0]["spec"]
    assert postgres["storageClassName"] == "ceph-rbd" and postgres["accessModes"] == ["ReadWriteOnce"]
    assert find(docs, "PersistentVolumeClaim", "gpu-lab-hub-data")["spec"]["storageClassName"] == "ceph-rbd"
    assert classes["ceph-rbd"]["reclaimPolicy"] == "Retain"  # the ledger's volume survives a deleted claim


def test_without_the_component_the_portal_takes_the_default_class():
    docs = render("deploy/overlays/production")
    assert not [d for d in docs if d["kind"] in ("StorageClass", "CephCluster")]
    assert "storageClassName" not in find(docs, "PersistentVolumeClaim", "gpu-lab-hub-data")["spec"]


@pytest.mark.parametrize(
    "kind,change",
    [
        ("CephBlockPool", lambda s: s["replicated"].update(size="3")),  # a string where Rook wants an integer
        ("CephBlockPool", lambda s: s.update(failureDomain="hosts")),
        ("CephFilesystem", lambda s: s["metadataServer"].update(activeCount=0)),
        ("CephFilesystem", lambda s: s.update(dataPool=s.pop("dataPools"))),  # a field of another kind
        ("CephCluster", lambda s: s["mon"].update(cout=3)),
        ("PrometheusRule", lambda s: s["groups"][0]["rules"][0].update({"for": "5 minutes"})),
        ("ObjectBucketClaim", lambda s: s.pop("storageClassName")),
    ],
)
def test_the_crd_schemas_catch_a_wrong_field(kind, change):
    (doc,) = [copy.deepcopy(d) for d in render(LAB) if d["kind"] == kind][:1]
    crds.validate(doc)
    change(doc["spec"])
    with pytest.raises(jsonschema.ValidationError):
        crds.validate(doc)
