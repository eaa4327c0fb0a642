"""The operations console (/console/): admins cordon, drain and uncordon nodes with a reason, after a page that says
what stops; they find people, change roles and set limits in words; they see budgets. Teachers and students get 403,
the anonymous are sent to sign in."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils import timezone

from accounts.models import Notice, Quota, RoleSource, User
from jobs.models import JobState
from labs.models import Allocation, Node
from tests.factories import PASSWORD, AllocationFactory, NodeFactory, UserFactory
from tests.jobs.factories import JobFactory

pytestmark = pytest.mark.django_db

ACTIONS = [
    ("get", "/console/"),
    ("get", "/console/nodes/"),
    ("get", "/console/nodes/gpu01/cordon/"),
    ("post", "/console/nodes/gpu01/cordon/"),
    ("get", "/console/nodes/gpu01/drain/"),
    ("post", "/console/nodes/gpu01/drain/"),
    ("get", "/console/nodes/gpu01/uncordon/"),
    ("post", "/console/nodes/gpu01/uncordon/"),
    ("get", "/console/people/"),
    ("get", "/console/people/sam/"),
    ("post", "/console/people/sam/role/"),
    ("post", "/console/people/sam/quota/"),
    ("get", "/console/budgets/"),
]


@pytest.fixture
def node():
    return NodeFactory(name="gpu01")


@pytest.fixture
def sam():
    return UserFactory(username="sam", role="student")


def signed_in(client, role: str, username: str | None = None):
    user = UserFactory(username=username or f"{role}-c", role=role)
    assert client.login(username=user.username, password=PASSWORD)
    return user


@pytest.mark.parametrize("method,path", ACTIONS)
@pytest.mark.parametrize("role", ["student", "teacher"])
def test_teachers_and_students_are_refused(client, node, sam, role, method, path):
    signed_in(client, role)
    response = getattr(client, method)(path, {"reason": "x", "role": "teacher"} if method == "post" else None)
    assert response.status_code == 403
    assert "Only admins use the operations console." in response.content.decode()
    node.refresh_from_db()
    assert node.status == "ready" and User.objects.get(username="sam").role == "student"


@pytest.mark.parametrize("method,path", ACTIONS)
def test_the_anonymous_are_sent_to_sign_in(client, node, sam, method, path):
    response = getattr(client, method)(path)
    assert response.status_code == 302 and response["Location"].startswith("/login/?next=")


@pytest.mark.parametrize("method,path", ACTIONS)
def test_admins_may(client, node, sam, method, path):
    signed_in(client, "admin")
    if "uncordon" in path:
        Node.objects.filter(pk=node.pk).update(status="cordoned", status_reason="Fan noise")
    data = {"reason": "Fan noise", "role": "teacher"} if method == "post" else None
    response = getattr(client, method)(path, data)
    assert response.status_code in (200, 302), response.content.decode()[:500]


def test_cordon_asks_why_then_says_it_on_the_nodes_and_grid_pages(client, node):
    signed_in(client, "admin")
    page = client.get("/console/nodes/gpu01/cordon/").content.decode()
    assert "Nothing is stopped: what runs there now keeps running." in page
    assert "Nothing runs on this node now" in page
    refused = client.post("/console/nodes/gpu01/cordon/", {"reason": ""})
    assert refused.status_code == 400 and "This field is required." in refused.content.decode()
    assert Node.objects.get().status == "ready"
    done = client.post("/console/nodes/gpu01/cordon/", {"reason": "Fan noise, waiting for a part"}, follow=True)
    assert "gpu01 is cordoned: Fan noise, waiting for a part" in done.content.decode()
    node.refresh_from_db()
    assert (node.status, node.status_reason) == ("cordoned", "Fan noise, waiting for a part")
    for path in ("/console/nodes/", "/lab/nodes/", "/lab/nodes/gpu01/", "/lab/gpus/"):
        page = client.get(path).content.decode()
        assert "Fan noise, waiting for a part" in page, path
    grid = client.get("/lab/gpus/").content.decode()
    assert 'data-field="node_reason">Fan noise, waiting for a part</p>' in grid
    assert client.get("/api/v1/gpus/").json()[0]["node_reason"] == "Fan noise, waiting for a part"
    # Cordoned already: no second cordon, an uncordon instead.
    again = client.post("/console/nodes/gpu01/cordon/", {"reason": "again"})
    assert again.status_code == 409
    back = client.post("/console/nodes/gpu01/uncordon/", {"reason": "Fan replaced"})
    assert back.status_code == 302
    node.refresh_from_db()
    assert (node.status, node.status_reason) == ("ready", "")
    assert 'data-field="node_reason" hidden>' in client.get("/lab/gpus/").content.decode()


def test_drain_names_whose_work_stops_and_stops_it(client, node, sam, django_capture_on_commit_callbacks):
    admin = signed_in(client, "admin")
    job = JobFactory(
        owner=UserFactory(username="kim", role="teacher"), state=JobState.RUNNING, attempt=1, started_at=timezone.now()
    )
    gpu = node.gpus.get()
    AllocationFactory(user=job.owner, kind="job", ref=f"job:{job.pk}#1", gpu=gpu)
    AllocationFactory(user=sam, kind="notebook", ref="notebook:4242", gpu=gpu, share=Decimal("0.25"))
    page = client.get("/console/nodes/gpu01/drain/").content.decode()
    assert f"training job #{job.pk}" in page and "notebook #4242" in page
    assert ">kim<" in page and ">sam<" in page
    assert "Drain gpu01 and stop 2 running things" in page
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/console/nodes/gpu01/drain/", {"reason": "Replacing the PSU"}, follow=True)
    assert "gpu01 is cordoned and drained (2 running things stopped): Replacing the PSU" in response.content.decode()
    node.refresh_from_db()
    assert (node.status, node.status_reason) == ("cordoned", "Replacing the PSU")
    assert not Allocation.objects.filter(ends_at__isnull=True).exists()
    job.refresh_from_db()
    # Stopped and back in the queue as its next attempt (the stop task runs in-process here), saying why.
    assert (job.state, job.attempt) == (JobState.QUEUED, 2)
    assert any("Replacing the PSU" in event.reason for event in job.events.all())
    told = Notice.objects.get(user=sam)
    assert "Your notebook on gpu01 was stopped" in told.text and "Replacing the PSU" in told.text
    assert admin.username not in told.text


def test_a_down_node_cannot_be_cordoned(client):
    NodeFactory(name="gpu09", status="down", status_reason="NotReady")
    signed_in(client, "admin")
    response = client.post("/console/nodes/gpu09/cordon/", {"reason": "x"})
    assert response.status_code == 409 and "gpu09 is down" in response.content.decode()


def test_people_search_role_change_and_limits_in_words(client, sam):
    UserFactory(username="kim", role="teacher", first_name="Kim")
    admin = signed_in(client, "admin", "ada")
    page = client.get("/console/people/?q=sa").content.decode()
    assert 'data-person="sam"' in page and 'data-person="kim"' not in page
    page = client.get("/console/people/?role=teacher").content.decode()
    assert 'data-person="kim"' in page and 'data-person="sam"' not in page
    person = client.get("/console/people/sam/").content.decode()
    assert "GPU-hours per week" in person and "Notebooks at once" in person
    assert "gpu_hours_week" not in person.split('data-testid="limits-in-force"')[1].split("</table>")[0]
    assert client.post("/console/people/sam/role/", {"role": "teacher"}).status_code == 302
    sam.refresh_from_db()
    assert (sam.role, sam.role_source) == ("teacher", RoleSource.MANUAL)
    refused = client.post("/console/people/ada/role/", {"role": "student"})
    assert refused.status_code == 409 and "You cannot change your own role" in refused.content.decode()
    admin.refresh_from_db()
    assert admin.role == "admin"
    bad = client.post("/console/people/sam/quota/", {"gpu_hours_week": "-3"})
    assert bad.status_code == 400 and not Quota.objects.filter(user=sam).exists()
    saved = client.post("/console/people/sam/quota/", {"gpu_hours_week": "42", "note": "thesis"}, follow=True)
    assert "sam&#x27;s own limits are saved." in saved.content.decode()
    quota = Quota.objects.get(user=sam)
    assert quota.gpu_hours_week == Decimal("42") and quota.max_notebooks is None and quota.note == "thesis"
    client.post("/console/people/sam/quota/", {})
    assert not Quota.objects.filter(user=sam).exists()


def test_unknown_people_and_nodes_are_404(client):
    signed_in(client, "admin")
    assert client.get("/console/people/nobody/").status_code == 404
    assert client.get("/console/nodes/nowhere/drain/").status_code == 404
