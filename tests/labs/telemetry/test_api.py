"""GET /api/v1/gpus/ for each role, and the node agents' POST /api/v1/agent/samples/ with its bad inputs."""

import logging
import time

import pytest
from asgiref.sync import async_to_sync
from rest_framework.test import APIClient

from labs.inventory import demo_specs
from labs.models import Node, NodeAgentToken
from labs.services import inventory_sync
from labs.telemetry import store
from labs.telemetry.agents import agent_token_issue, agent_token_revoke
from labs.telemetry.collector import Collector
from labs.telemetry.health import HealthWatch
from labs.telemetry.simulator import GpuSimulator
from labs.telemetry.sources import AgentSource, SimulatorSource
from tests.conftest import ROLES
from tests.factories import AllocationFactory, CourseFactory, EnrollmentFactory, UserFactory
from tests.labs.telemetry.test_collector import clean_store  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture
def lab(clean_store):  # noqa: F811
    inventory_sync(specs=demo_specs(3), source="demo")
    return {node.name: node for node in Node.objects.prefetch_related("gpus")}


def tick(source=None):
    watch = HealthWatch(temp_threshold_c=87, hold_s=0, xid_ignored=set())
    collector = Collector(source=source or SimulatorSource(GpuSimulator(seed=2)), interval_s=1, health=watch)
    return async_to_sync(collector.tick)()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("role_index,role", enumerate(ROLES), ids=ROLES)
def test_gpus_api_per_role(api_as, lab, role_index, role):
    tick()
    response = api_as(role).get("/api/v1/gpus/")
    assert response.status_code == (401, 200, 200, 200)[role_index]
    if role == "anonymous":
        assert response.json()["code"] == "not_authenticated"
        return
    gpus = response.json()
    assert [(g["node"], g["index"]) for g in gpus] == [("gpu01", 0), ("gpu02", 0), ("gpu03", 0)]
    first = gpus[0]
    assert first.keys() >= {
        "node",
        "index",
        "uuid",
        "model",
        "util_pct",
        "mem_used_mb",
        "mem_total_mb",
        "temp_c",
        "power_w",
        "holder",
        "sampled_at",
        "stale",
        "available",
    }
    assert first["model"] == "NVIDIA GeForce RTX 4090" and first["mem_total_mb"] == 24564
    assert first["stale"] is False and first["sampled_at"].endswith("+00:00")
    assert ("alerts" in first) is (role == "admin")


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_gpus_api_is_read_only(api_as, lab, method):
    response = getattr(api_as("admin"), method)("/api/v1/gpus/", {}, format="json")
    assert response.status_code == 405 and response.json()["code"] == "method_not_allowed"


@pytest.mark.django_db(transaction=True)
def test_holders_in_the_api_follow_the_viewer(api, lab):
    from accounts.services import token_issue

    student, other = UserFactory(username="sofia"), UserFactory(username="omar")
    teacher = UserFactory(username="tess", role="teacher")
    course = CourseFactory(code="CV-210")
    course.teachers.add(teacher)
    EnrollmentFactory(user=student, course=course)
    AllocationFactory(user=student, course=course, gpu=lab["gpu01"].gpus.get(), kind="notebook", ref="notebook:9")
    tick()

    def holder_of(user):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)}")
        return client.get("/api/v1/gpus/").json()[0]["holder"]

    assert holder_of(student)["holders"][0]["mine"] is True
    assert holder_of(other) == {"busy": True, "share": 1.0, "holders": [], "others": 1}
    assert holder_of(teacher)["holders"][0]["user"] == "sofia"


def test_without_a_collector_the_api_shows_every_gpu_stale(api_as, lab):
    gpus = api_as("student").get("/api/v1/gpus/").json()
    assert len(gpus) == 3 and all(g["stale"] and g["util_pct"] is None and not g["available"] for g in gpus)


# --- the agent push -------------------------------------------------------------------------


def push_body(node="gpu01", **sample):
    return {"node": node, "samples": [{"index": 0, "util_pct": 42, "mem_used_mb": 2048, "temp_c": 55, **sample}]}


def agent(key):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


@pytest.fixture
def key(lab):
    _, key = agent_token_issue(node=lab["gpu01"])
    return key


@pytest.mark.django_db(transaction=True)
def test_a_node_agent_pushes_and_the_collector_shows_it(lab, key):
    now = time.time()
    response = agent(key).post(
        "/api/v1/agent/samples/",
        push_body(sampled_at=now, power_w=250.5, mem_total_mb=24564, uuid="GPU-x", model="RTX"),
        format="json",
    )
    assert response.status_code == 202 and response.json() == {"node": "gpu01", "accepted": 1}
    (pushed,) = store.read_inboxes(["gpu01"])
    assert (pushed.util_pct, pushed.power_w, pushed.sampled_at) == (42, 250.5, now)
    tick(AgentSource())
    latest = store.read_latest()["gpus"]
    assert latest["gpu01/0"]["util_pct"] == 42 and latest["gpu02/0"]["stale"] is True
    assert NodeAgentToken.objects.get().last_used_at is not None


@pytest.mark.parametrize("role_index,role", enumerate(ROLES), ids=ROLES)
def test_the_push_endpoint_takes_node_keys_not_people(api_as, lab, role_index, role):
    response = api_as(role).post("/api/v1/agent/samples/", push_body(), format="json")
    assert response.status_code == 401
    assert response.json()["code"] == "not_authenticated" and response["WWW-Authenticate"] == "Bearer"


@pytest.mark.parametrize(
    "header",
    ["Bearer gna_wrong", "Bearer", "Bearer a b", "Bearer gna_\u00e9", "Bearer " + "x" * 500],
)
def test_a_wrong_key_is_refused_with_a_log_line(lab, key, header, caplog):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header.encode("utf-8").decode("latin-1"))
    with caplog.at_level(logging.WARNING, logger="labs.telemetry"):
        response = client.post("/api/v1/agent/samples/", push_body(), format="json")
    assert response.status_code == 401 and response.json()["code"] == "authentication_failed"
    assert store.read_inboxes(["gpu01"]) == []


def test_a_revoked_key_is_refused(lab, key):
    agent_token_revoke(token=NodeAgentToken.objects.get())
    assert agent(key).post("/api/v1/agent/samples/", push_body(), format="json").status_code == 401


def test_another_nodes_key_is_refused(lab, key, caplog):
    with caplog.at_level(logging.WARNING, logger="labs.telemetry"):
        response = agent(key).post("/api/v1/agent/samples/", push_body(node="gpu02"), format="json")
    assert response.status_code == 403 and response.json()["code"] == "permission_denied"
    assert "belongs to node gpu01" in response.json()["detail"]
    assert "the key of gpu01 was used to push for gpu02" in caplog.text
    assert store.read_inboxes(["gpu01", "gpu02"]) == []


@pytest.mark.parametrize(
    "body,field",
    [
        (push_body(temp_c=10_000), "samples"),
        (push_body(mem_used_mb=-5), "samples"),
        (push_body(util_pct=250), "samples"),
        (push_body(mem_used_mb=30_000, mem_total_mb=24_564), "samples"),
        (push_body(util_pct="lots"), "samples"),
        (push_body(sampled_at=time.time() + 3600), "samples"),
        (push_body(sampled_at="yesterday"), "samples"),
        (push_body(sampled_at="2026-01-05T10:00:00"), "samples"),  # no offset
        (push_body(index=3), "samples"),  # not in the inventory
        ({"node": "gpu01", "samples": []}, "samples"),
        ({"node": "gpu01", "samples": "all of them"}, "samples"),
        ({"node": "gpu01", "samples": [{"index": 0}, {"index": 0}]}, "samples"),
        ({"samples": [{"index": 0}]}, "node"),
        ({"node": "gpu01", "samples": [{"index": 0}] * 65}, "samples"),
    ],
)
def test_malformed_or_absurd_pushes_are_refused_and_nothing_is_kept(lab, key, body, field, caplog):
    with caplog.at_level(logging.WARNING, logger="labs.telemetry"):
        response = agent(key).post("/api/v1/agent/samples/", body, format="json")
    assert response.status_code == 400
    data = response.json()
    assert data["code"] == "invalid" and field in data["fields"]
    assert "refused" in caplog.text
    assert store.read_inboxes(["gpu01"]) == []


@pytest.mark.parametrize("sampled_at", [-1e18, 0, "1970-01-01T00:00:00+00:00", -3600])
def test_a_sample_from_long_ago_is_refused_with_the_reason(lab, key, sampled_at, caplog):
    when = time.time() + sampled_at if sampled_at == -3600 else sampled_at  # an hour ago, by the test's clock
    with caplog.at_level(logging.WARNING, logger="labs.telemetry"):
        response = agent(key).post("/api/v1/agent/samples/", push_body(sampled_at=when), format="json")
    assert response.status_code == 400
    data = response.json()
    assert data["code"] == "invalid" and "samples" in data["fields"]
    assert "more than 5 minutes ago; send current samples and check the node's clock" in str(data)
    assert "refused" in caplog.text
    assert store.read_inboxes(["gpu01"]) == []


def test_a_late_push_within_minutes_is_taken(lab, key):
    response = agent(key).post("/api/v1/agent/samples/", push_body(sampled_at=time.time() - 60), format="json")
    assert response.status_code == 202 and len(store.read_inboxes(["gpu01"])) == 1


@pytest.mark.parametrize(
    "raw,content_type",
    [
        ("{not json", "application/json"),
        ('{"node": "gpu01", "samples": [{"index": 0, "temp_c": NaN}]}', "application/json"),
        ("[]", "application/json"),
        ("node=gpu01", "application/x-www-form-urlencoded"),
    ],
)
def test_pushes_that_are_not_json_objects_get_a_clear_4xx(lab, key, raw, content_type):
    response = agent(key).generic("POST", "/api/v1/agent/samples/", raw, content_type=content_type)
    assert 400 <= response.status_code < 500
    assert response.json()["code"] in ("parse_error", "invalid", "unsupported_media_type")
