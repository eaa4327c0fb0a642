"""Edit and submit again: every finished job's page links to the form filled in from it (command line or script,
image, sizes, environment); the API needs nothing new (a job's detail holds every field a submission takes)."""

import pytest
from django.utils import timezone

from accounts.models import User
from jobs.models import Job, JobState
from tests.factories import UserFactory
from tests.jobs.factories import IMAGE, ImageRuleFactory, JobFactory, lab

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _lab():
    ImageRuleFactory()
    lab(2)


def finished_job(owner: User, **fields) -> Job:
    defaults = dict(state=JobState.FAILED, finished_at=timezone.now(), image=IMAGE, max_runtime_s=5400)
    return JobFactory(owner=owner, **{**defaults, **fields})


@pytest.mark.parametrize("role", ["student", "teacher", "admin"])
def test_a_finished_job_opens_the_form_filled_in(browser_client, role):
    client = browser_client(role)
    job = finished_job(
        User.objects.get(username=f"{role}-x"),
        name="try 1",
        command=["python", "-c", "print('a b')"],
        env={"EPOCHS": "3"},
    )
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    link = f'href="/jobs/new/?from={job.pk}" data-testid="resubmit-link">'
    assert link in page
    form = client.get(f"/jobs/new/?from={job.pk}").content.decode()
    assert 'value="try 1"' in form
    assert (
        'value="python -c &#x27;print(&#x27;&quot;&#x27;&quot;&#x27;a b&#x27;&quot;&#x27;&quot;&#x27;)&#x27;"' in form
    )
    assert "EPOCHS=3</textarea>" in form
    assert '<option value="5400" selected>1.5 h</option>' in form  # its own runtime, though not a usual one
    assert f'<option value="{IMAGE}" selected>' in form


def test_a_script_job_comes_back_as_its_script_and_resubmits(browser_client):
    client = browser_client("student")
    script = "set -e\necho one\necho two\n"
    job = finished_job(User.objects.get(username="student-x"), command=[], script=script, max_runtime_s=3600)
    form = client.get(f"/jobs/new/?from={job.pk}").content.decode()
    assert f'id="id_script">\n{script}</textarea>' in form and 'value="script" id="id_kind_1" checked' in form
    response = client.post(
        "/jobs/new/",
        {
            "name": "again",
            "image": IMAGE,
            "kind": "script",
            "script": script + "echo three\n",
            "gpus": 1,
            "nodes": 1,
            "max_runtime_s": 3600,
            "priority": "normal",
        },
    )
    assert response.status_code == 302
    assert Job.objects.latest("pk").script == script + "echo three\n"


def test_a_running_job_hides_the_link_and_nobody_clones_what_they_may_not_see(browser_client):
    client = browser_client("student")
    running = JobFactory(owner=User.objects.get(username="student-x"))
    assert 'data-testid="resubmit-link" hidden>' in client.get(f"/jobs/{running.pk}/").content.decode()
    other = finished_job(UserFactory(username="someone"))
    assert client.get(f"/jobs/new/?from={other.pk}").status_code == 404
    assert client.get("/jobs/new/?from=abc").status_code == 404


def test_the_api_detail_holds_what_a_resubmission_posts(api_as):
    client = api_as("student")
    job = finished_job(User.objects.get(username="student-x"), command=[], script="echo hi\n", max_runtime_s=3600)
    body = client.get(f"/api/v1/jobs/{job.pk}/").json()
    again = {key: body[key] for key in ("name", "image", "script", "nodes", "max_runtime_s", "priority", "env")}
    response = client.post(
        "/api/v1/jobs/", {**again, "gpus": body["gpus"], "datasets": body["datasets"]}, format="json"
    )
    assert response.status_code == 201 and response.json()["script"] == "echo hi\n"
