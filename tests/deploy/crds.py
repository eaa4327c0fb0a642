"""JSON Schema fragments of the custom resources deploy/ renders, which kubernetes-validate has no schemas for.

Written down from each project's CRD reference (Rook v1.17 `ceph.rook.io/v1`, lib-bucket-provisioner's
`objectbucket.io/v1alpha1`, the Prometheus Operator's `monitoring.coreos.com/v1`), for the fields we use, with
their types, enums and minimums. What is checked: every field we write is one the CRD has (additionalProperties is
false at each level we describe: a typo or a field from another version fails), its type, and the fields the CRD
requires. What is not: fields we never write (left open where the CRD has many, as `placement`), and the operators'
own semantic checks beyond the schema (e.g. Rook refusing size 1 without `requireSafeReplicaSize: false`: we check
that one in tests/deploy/test_storage.py instead).
"""

from __future__ import annotations

from typing import Any

import jsonschema


def _obj(properties: dict[str, Any], *, required: tuple[str, ...] = (), open_: bool = False) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": open_}
    if required:
        schema["required"] = list(required)
    return schema


STRING = {"type": "string"}
BOOL = {"type": "boolean"}
INT = {"type": "integer"}
COUNT = {"type": "integer", "minimum": 0}
LABELS = {"type": "object", "additionalProperties": {"type": "string"}}
QUANTITY = {"type": ["string", "integer"], "pattern": r"^[0-9.]+([KMGTPE]i?|m)?$"}
RESOURCES = _obj({"requests": {"type": "object", "additionalProperties": QUANTITY}, "limits": {"type": "object"}})
METADATA = _obj(
    {"name": STRING, "namespace": STRING, "labels": LABELS, "annotations": LABELS},
    required=("name", "namespace"),
)

# Rook: ceph.rook.io/v1 -----------------------------------------------------------------------------------------------
FAILURE_DOMAIN = {"type": "string", "enum": ["host", "osd", "rack", "zone", "region", "datacenter", "room", "row"]}
REPLICATED = _obj(
    {
        "size": {"type": "integer", "minimum": 0, "maximum": 9},
        "requireSafeReplicaSize": BOOL,
        "replicasPerFailureDomain": COUNT,
        "targetSizeRatio": {"type": "number"},
    },
    required=("size",),
)
ERASURE_CODED = _obj(
    {
        "dataChunks": {"type": "integer", "minimum": 0},
        "codingChunks": {"type": "integer", "minimum": 0},
        "algorithm": STRING,
    },
    required=("dataChunks", "codingChunks"),
)
POOL = _obj(
    {
        "failureDomain": FAILURE_DOMAIN,
        "replicated": REPLICATED,
        "erasureCoded": ERASURE_CODED,
        "deviceClass": STRING,
        "crushRoot": STRING,
        "compressionMode": {"type": "string", "enum": ["none", "passive", "aggressive", "force", ""]},
        "parameters": LABELS,
        "enableRBDStats": BOOL,
    },
)
NAMED_POOL = {**POOL, "properties": {**POOL["properties"], "name": STRING}}
PRIORITY_CLASSES = {"type": "object", "additionalProperties": STRING}

CEPH_CLUSTER = _obj(
    {
        "cephVersion": _obj({"image": STRING, "allowUnsupported": BOOL, "imagePullPolicy": STRING}),
        "dataDirHostPath": {"type": "string", "pattern": "^/(\\S+)"},
        "skipUpgradeChecks": BOOL,
        "continueUpgradeAfterChecksEvenIfNotHealthy": BOOL,
        "mon": _obj({"count": {"type": "integer", "minimum": 0, "maximum": 9}, "allowMultiplePerNode": BOOL}),
        "mgr": _obj(
            {
                "count": {"type": "integer", "minimum": 0, "maximum": 5},
                "allowMultiplePerNode": BOOL,
                "modules": {"type": "array", "items": _obj({"name": STRING, "enabled": BOOL})},
            }
        ),
        "dashboard": _obj({"enabled": BOOL, "ssl": BOOL, "port": INT, "urlPrefix": STRING}),
        "monitoring": _obj({"enabled": BOOL, "metricsDisabled": BOOL}),
        "network": _obj(
            {
                "provider": STRING,
                "connections": _obj({"encryption": _obj({"enabled": BOOL}), "compression": _obj({"enabled": BOOL})}),
                "hostNetwork": BOOL,
            }
        ),
        "crashCollector": _obj({"disable": BOOL, "daysToRetain": COUNT}),
        "storage": _obj(
            {
                "useAllNodes": BOOL,
                "useAllDevices": BOOL,
                "deviceFilter": STRING,
                "devicePathFilter": STRING,
                "config": {"type": "object", "additionalProperties": STRING},
                "nodes": {"type": "array"},
            }
        ),
        "disruptionManagement": _obj(
            {"managePodBudgets": BOOL, "osdMaintenanceTimeout": INT, "pgHealthCheckTimeout": INT}
        ),
        "priorityClassNames": PRIORITY_CLASSES,
        "placement": {"type": "object"},
        "resources": {"type": "object"},
    },
    required=("cephVersion", "dataDirHostPath"),
)

CEPH_BLOCK_POOL = POOL

CEPH_FILESYSTEM = _obj(
    {
        "metadataPool": POOL,
        "dataPools": {"type": "array", "minItems": 1, "items": NAMED_POOL},
        "preserveFilesystemOnDelete": BOOL,
        "preservePoolsOnDelete": BOOL,
        "metadataServer": _obj(
            {
                "activeCount": {"type": "integer", "minimum": 1, "maximum": 50},
                "activeStandby": BOOL,
                "priorityClassName": STRING,
                "resources": RESOURCES,
                "placement": {"type": "object"},
            },
            required=("activeCount",),
        ),
    },
    required=("metadataPool", "dataPools", "metadataServer"),
)

CEPH_OBJECT_STORE = _obj(
    {
        "metadataPool": POOL,
        "dataPool": POOL,
        "preservePoolsOnDelete": BOOL,
        "gateway": _obj(
            {
                "port": {"type": "integer", "minimum": 0, "maximum": 65535},
                "securePort": INT,
                "instances": COUNT,
                "priorityClassName": STRING,
                "resources": RESOURCES,
            }
        ),
    },
    required=("gateway",),
)

# lib-bucket-provisioner: objectbucket.io/v1alpha1 -------------------------------------------------------------------
OBJECT_BUCKET_CLAIM = _obj(
    {
        "storageClassName": STRING,
        "bucketName": STRING,
        "generateBucketName": STRING,
        "additionalConfig": {"type": "object", "additionalProperties": STRING},
    },
    required=("storageClassName",),
)

# Prometheus Operator: monitoring.coreos.com/v1 ----------------------------------------------------------------------
DURATION = {
    "type": "string",
    "pattern": r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$",
}
RULE = {
    "oneOf": [
        _obj(
            {
                "alert": STRING,
                "expr": {"type": ["string", "integer"]},
                "for": DURATION,
                "labels": LABELS,
                "annotations": LABELS,
                "keep_firing_for": DURATION,
            },
            required=("alert", "expr"),
        ),
        _obj(
            {"record": STRING, "expr": {"type": ["string", "integer"]}, "labels": LABELS}, required=("record", "expr")
        ),
    ]
}
PROMETHEUS_RULE = _obj(
    {
        "groups": {
            "type": "array",
            "items": _obj(
                {"name": STRING, "interval": DURATION, "rules": {"type": "array", "items": RULE}},
                required=("name", "rules"),
            ),
        }
    },
)
SECRET_KEY = _obj({"name": STRING, "key": STRING, "optional": BOOL}, required=("key",))
SERVICE_MONITOR = _obj(
    {
        "selector": _obj({"matchLabels": LABELS, "matchExpressions": {"type": "array"}}),
        "namespaceSelector": _obj({"any": BOOL, "matchNames": {"type": "array", "items": STRING}}),
        "endpoints": {
            "type": "array",
            "items": _obj(
                {
                    "port": STRING,
                    "targetPort": {"type": ["string", "integer"]},
                    "path": STRING,
                    "scheme": STRING,
                    "interval": DURATION,
                    "scrapeTimeout": DURATION,
                    "honorLabels": BOOL,
                    "authorization": _obj({"type": STRING, "credentials": SECRET_KEY}),
                    "tlsConfig": {"type": "object"},
                    "relabelings": {"type": "array"},
                }
            ),
        },
    },
    required=("selector", "endpoints"),
)

SCHEMAS = {
    ("ceph.rook.io/v1", "CephCluster"): CEPH_CLUSTER,
    ("ceph.rook.io/v1", "CephBlockPool"): CEPH_BLOCK_POOL,
    ("ceph.rook.io/v1", "CephFilesystem"): CEPH_FILESYSTEM,
    ("ceph.rook.io/v1", "CephObjectStore"): CEPH_OBJECT_STORE,
    ("objectbucket.io/v1alpha1", "ObjectBucketClaim"): OBJECT_BUCKET_CLAIM,
    ("monitoring.coreos.com/v1", "PrometheusRule"): PROMETHEUS_RULE,
    ("monitoring.coreos.com/v1", "ServiceMonitor"): SERVICE_MONITOR,
}


def is_custom(doc: dict) -> bool:
    return (doc.get("apiVersion"), doc.get("kind")) in SCHEMAS


def validate(doc: dict) -> None:
    """Raise jsonschema.ValidationError where the custom resource breaks its CRD's schema (as far as written)."""
    schema = _obj(
        {"apiVersion": STRING, "kind": STRING, "metadata": METADATA, "spec": SCHEMAS[(doc["apiVersion"], doc["kind"])]},
        required=("apiVersion", "kind", "metadata", "spec"),
    )
    jsonschema.validate(doc, schema)
