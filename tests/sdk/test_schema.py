"""The OpenAPI schema the portal serves is the source of truth: the SDK's models must read exactly its fields, and the
SDK's job fields must be the ones the API takes. Fails when either side changes without the other."""

from __future__ import annotations

import httpx
import pytest
from gpulab import _calls
from gpulab.models import SCHEMA_MODELS

pytestmark = pytest.mark.postgresql_only


@pytest.fixture(scope="module")
def schema(portal) -> dict:
    answer = httpx.get(
        f"{portal.url}/api/v1/schema/",
        params={"format": "json"},
        headers={"Authorization": f"Token {portal.tokens['ada']}"},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def properties(schema: dict, name: str) -> set[str]:
    if name.startswith("/"):  # a path: the properties of its 200 answer
        operation = schema["paths"][name]["get"]
        content = operation["responses"]["200"]["content"]
        body = content.get("application/json") or next(iter(content.values()))
        ref = body["schema"].get("$ref") or body["schema"].get("items", {}).get("$ref", "")
        name = ref.rsplit("/", 1)[-1]
    return set(schema["components"]["schemas"][name]["properties"])


@pytest.mark.parametrize("model", SCHEMA_MODELS, ids=lambda m: m.__name__)
def test_each_model_reads_exactly_the_fields_of_its_schema_component(schema, model):
    assert model.api_fields() == properties(schema, model.SCHEMA)


def test_the_job_fields_the_sdk_sends_are_the_ones_the_api_takes(schema):
    assert set(_calls.JOB_FIELDS) == properties(schema, "JobInRequest")


def test_the_paths_the_sdk_calls_are_served(schema):
    paths = set(schema["paths"])
    for path in (
        "/api/v1/me/",
        "/api/v1/jobs/",
        "/api/v1/jobs/preview/",
        "/api/v1/jobs/{job_id}/",
        "/api/v1/jobs/{job_id}/cancel/",
        "/api/v1/jobs/{job_id}/logs/",
        "/api/v1/profiles/",
        "/api/v1/notebooks/",
        "/api/v1/notebooks/{notebook_id}/",
        "/api/v1/notebooks/{notebook_id}/extend/",
        "/api/v1/reservations/",
        "/api/v1/reservations/{reservation_id}/",
        "/api/v1/availability/",
        "/api/v1/gpus/",
        "/api/v1/token/",
    ):
        assert path in paths, path
    logs = {p["name"] for p in schema["paths"]["/api/v1/jobs/{job_id}/logs/"]["get"]["parameters"]}
    assert {"follow", "since", "tail", "offset", "limit_bytes", "rank", "attempt"} <= logs
    listing = {p["name"] for p in schema["paths"]["/api/v1/jobs/"]["get"]["parameters"]}
    assert {"before", "limit", "status", "mine"} <= listing
