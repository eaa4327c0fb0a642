"""Resources as presets on the job form, from the person's quota and the lab, with the quota beside them; and
"Will it start now?" checking the program (local backend) and the image too."""

from decimal import Decimal

import pytest

from jobs.models import Job
from jobs.presets import presets_for
from tests.jobs.factories import ImageRuleFactory, lab, local_backend_fixture  # noqa: F401
from tests.jobs.test_script import FORM

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _lab():
    ImageRuleFactory()
    lab(2, gpus=4)


def labels(**limits) -> list[str]:
    shape = {"most_gpus_per_node": 4, "ready_nodes": 2, "max_runtime_s": 7 * 24 * 3600}
    return [preset.label for preset in presets_for(**{**shape, **limits})]


def test_presets_follow_the_quota_and_the_lab():
    assert labels(max_gpus_per_job=1, gpu_hours_left=Decimal(20)) == ["1 GPU · 1 h", "1 GPU · 4 h"]
    assert labels(max_gpus_per_job=8, gpu_hours_left=Decimal(200)) == [
        "1 GPU · 1 h",
        "1 GPU · 4 h",
        "1 GPU · 24 h",
        "2 GPUs · 4 h",
        "4 GPUs · 8 h",
        "2 nodes × 4 GPUs · 8 h",  # no node has 8 GPUs: 8 GPUs on one node is not offered
    ]
    # Nothing fits the hours left: the smallest is still offered (the preview says why it would wait).
    assert labels(max_gpus_per_job=1, gpu_hours_left=Decimal("0.5")) == ["1 GPU · 1 h"]


@pytest.mark.parametrize(
    ("role", "shown"),
    [
        ("student", ["1 GPU · 1 h (uses up to 1 GPU-hours of your 20.0 left this week)", "Your quota: 1 GPU per job"]),
        ("teacher", ["2 nodes × 4 GPUs · 8 h (uses up to 64 GPU-hours of your 200.0 left", "200.0 of 200 GPU-hours"]),
        ("admin", ["2 nodes × 4 GPUs · 8 h", "Your quota: 40 GPUs per job"]),
    ],
)
def test_the_form_offers_the_presets_of_each_role_with_the_quota_beside(browser_client, role, shown):
    page = browser_client(role).get("/jobs/new/").content.decode()
    for text in shown:
        assert text in page
    assert "Custom: the GPUs, nodes and max runtime below" in page


def test_a_preset_sets_the_sizes(browser_client):
    client = browser_client("teacher")
    response = client.post("/jobs/new/", {**FORM, "preset": "4:2:28800", "gpus": "1", "nodes": "", "max_runtime_s": ""})
    assert response.status_code == 302
    job = Job.objects.get()
    assert (job.gpus_per_node, job.nodes, job.max_runtime_s) == (4, 2, 28800)
    # A preset not offered to this person is refused, not taken.
    response = browser_client("student").post("/jobs/new/", {**FORM, "preset": "4:2:28800"})
    assert response.status_code == 400 and Job.objects.count() == 1


def test_will_it_start_now_checks_the_program_on_the_local_backend(browser_client, local_backend):
    client = browser_client("student")
    page = client.post("/jobs/new/", {**FORM, "command": "no-such-program --x", "action": "preview"})
    assert "No: it would not start: cannot start &#x27;no-such-program&#x27;: there is no such program" in (
        page.content.decode()
    )
    page = client.post("/jobs/new/", {**FORM, "action": "preview"}).content.decode()
    assert "Yes: it would start now" in page
    page = client.post("/jobs/new/", {**FORM, "kind": "script", "script": "echo hi", "action": "preview"})
    assert "Yes: it would start now" in page.content.decode()


def test_will_it_start_now_checks_the_image(api_as):
    body = {"name": "x", "image": "pytorch", "command": ["python"], "gpus": 1, "max_runtime_s": 3600}
    response = api_as("student").post("/api/v1/jobs/preview/", body, format="json")
    assert response.status_code == 400 and "not on the lab's image allow-list" in response.json()["fields"]["image"][0]
