"""The API fuzzed from its own OpenAPI schema (schemathesis), as each role, in-process on the test database.

Every operation of the schema that /api/v1/schema/ serves gets generated requests (valid and invalid), sent
through the WSGI app as anonymous, student, teacher and admin (token header), and every response is held to
all of schemathesis's checks: no 5xx, the documented status codes, content types, headers and bodies, invalid
data refused, valid data accepted, auth not ignored. A state machine follows the schema's links (a job, a
notebook, a reservation made, then read, cancelled, stopped). Fixed seed (derandomized), a budget for CI.
"""

from __future__ import annotations

import json

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig

from accounts.services import token_issue
from portal.wsgi import application
from tests.conftest import ROLES
from tests.factories import UserFactory
from tests.jobs.factories import DatasetFactory, ImageRuleFactory, lab

MAX_EXAMPLES = 12  # per operation, each sent as all four roles
STATEFUL_EXAMPLES = 8  # scenarios per role
FUZZ = settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,  # a fixed seed: the same requests on every run and machine
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


def generated_schema() -> dict:
    """The schema /api/v1/schema/ serves (test_the_fuzzed_schema_is_the_served_one holds them equal)."""
    return SchemaGenerator().get_schema(request=None, public=True)


# positive_data_acceptance stays on everywhere; these operations may also answer 400 to schema-valid input,
# because their rules depend on the lab (image allow-list, free nodes, windows after each other, profiles that
# exist, the years 2000-2999), which OpenAPI cannot say.
LAB_RULES = [
    "jobs_create",
    "jobs_preview_create",
    "jobs_logs_retrieve",
    "reservations_create",
    "reservations_list",
    "availability_retrieve",
    "notebooks_create",
    "budgets_create",  # a course or person that exists (one of them), amounts within bounds, days in order
    "budgets_partial_update",
    "usage_retrieve",  # windows after each other, at most two years, group_by=entry only as CSV
    "usage_efficiency_retrieve",
    "audit_retrieve",  # real days of the years 2000-2999
    "requests_create",  # amounts within bounds, an end after now and not too far, a course one is in
    "requests_decide_create",  # the same bounds for what is granted, a sentence to refuse
    "maintenance_create",  # nodes that exist or all (one of them), a window in order and ahead, at most 31 days
    "me_notifications_update",  # events and channels the portal has; a chat address apprise knows, outside the lab
    "datasets_create",  # a course the teacher teaches, a name not taken yet
]
CONFIG = SchemathesisConfig.from_dict(
    {
        # The schema says no text takes NUL (portal/api/schema.py), but extra properties of any value are generated
        # without it; NUL is refused by portal/api/parsers.py (tests/portal/test_malformed_input.py, the page fuzzer).
        "generation": {"allow-x00": False},
        "operations": [
            {
                "include-operation-id": LAB_RULES,
                "checks": {
                    "positive_data_acceptance": {"expected-statuses": ["2xx", "400", "401", "403", "404", "409", "429"]}
                },
            }
        ],
    }
)
schema = schemathesis.openapi.from_dict(generated_schema(), config=CONFIG)
schema.app = application


@pytest.fixture
def in_test_transaction():
    """Django's handler closes the database connection after each request; its test client stops it, so do we."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def role_headers(db, in_test_transaction) -> dict[str, dict[str, str]]:
    ImageRuleFactory()
    DatasetFactory(name="imagenet")
    lab(3)
    headers = {"anonymous": {}}
    for role in ROLES[1:]:
        user = UserFactory(username=f"{role}-fuzz", role=role)
        headers[role] = {"Authorization": f"Token {token_issue(user=user)}"}
    return headers


def test_the_fuzzed_schema_is_the_served_one(api_as):
    served = api_as("student").get("/api/v1/schema/", {"format": "json"})
    assert served.status_code == 200
    assert json.loads(served.content) == json.loads(json.dumps(generated_schema()))


@schema.parametrize()
@FUZZ
def test_api_as_each_role(case, role_headers):
    for role in ROLES:
        case.call_and_validate(headers=role_headers[role])


@pytest.mark.parametrize("role", ROLES[1:])
def test_api_stateful_as_each_role(role, role_headers):
    class AsRole(schema.as_state_machine()):
        def get_call_kwargs(self, case):
            return {"headers": role_headers[role]}

        def validate_response(self, response, case, additional_checks=None, **kwargs):
            # Named as explicit credentials, so that the ignored_auth check takes them away and expects a 401.
            case.validate_response(
                response, headers=role_headers[role], transport_kwargs=kwargs or None, recorder=self.recorder
            )

    AsRole.run(settings=settings(FUZZ, max_examples=STATEFUL_EXAMPLES, stateful_step_count=6))
