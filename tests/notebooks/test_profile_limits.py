"""Notebook profiles keep to the lab's image allow-list and ceilings, whoever writes them and wherever: the Profiles
page (teachers, admins), the admin console, and at every start of a profile saved before.

No hub runs here: a press of Start writes a queued row, and the pass is not run.
"""

from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from accounts.models import User
from accounts.services import token_issue
from jobs.models import Job
from labs.images import ImageRule
from labs.models import NotebookProfile, NotebookSession
from tests.factories import PASSWORD, CourseFactory, EnrollmentFactory, UserFactory
from tests.jobs.factories import lab

pytestmark = pytest.mark.django_db

IMAGE = "quay.io/jupyter/pytorch-notebook:cuda12-latest"  # on the default allow-list (JOBS_IMAGE_ALLOW)
FORM = {
    "slug": "dl101-quarter",
    "name": "DL-101 quarter",
    "description": "For the labs.",
    "image": IMAGE,
    "gpu_share": "0.25",
    "gpu_mem_mb": "",
    "cpu": "2",
    "memory_gb": "8",
    "max_session_h": "3",
}
# What the outside probe saved as a teacher, one field at a time: the field, its value, and what the refusal says.
OVER = [
    ("image", "docker.io/attacker/miner:latest", "not on the lab&#x27;s image allow-list"),
    ("cpu", "64", "At most 8 CPU cores"),
    ("memory_gb", "256", "At most 32 GB of memory"),
    ("max_session_h", "72", "At most 12 hours per session"),
    ("gpu_mem_mb", "24000", "At most 6141 MB, the profile&#x27;s share (0.25)"),
]


@pytest.fixture
def dl():
    """DL-101, taught by ada, with student bo."""
    course = CourseFactory(code="DL-101")
    course.teachers.add(UserFactory(username="ada", role="teacher"))
    EnrollmentFactory(user=UserFactory(username="bo", role="student"), course=course)
    return course


def signed_in(client, role):
    username = {"student": "bo", "teacher": "ada"}.get(role)
    if username is None:
        UserFactory(username="root", role="admin")
        username = "root"
    assert client.login(username=username, password=PASSWORD)
    return client


# --- The Profiles page ----------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["teacher", "admin"])
@pytest.mark.parametrize(("field", "value", "says"), OVER, ids=[o[0] for o in OVER])
def test_a_profile_over_the_limits_is_refused_on_the_page_and_nothing_is_saved(client, dl, role, field, value, says):
    signed_in(client, role)
    response = client.post("/notebooks/profiles/new/", {**FORM, field: value, "courses": [dl.pk]})
    assert response.status_code == 400
    assert says in response.content.decode()
    assert list(response.context["form"].errors) == ["__all__", field]  # the sentence, and beside the field
    assert not NotebookProfile.objects.exists()


def test_students_may_not_write_profiles_at_all(client, dl):
    signed_in(client, "student")
    assert client.post("/notebooks/profiles/new/", {**FORM, "courses": [dl.pk]}).status_code == 403
    assert not NotebookProfile.objects.exists()


def test_a_teacher_cannot_raise_their_profile_over_the_limits(client, dl):
    profile = NotebookProfile.objects.create(slug="ada-q", name="Ada's quarter", image=IMAGE, gpu_share=Decimal("0.25"))
    profile.courses.add(dl)
    profile.created_by = dl.teachers.get()
    profile.save()
    signed_in(client, "teacher")
    response = client.post("/notebooks/profiles/ada-q/edit/", {**FORM, "cpu": "64", "courses": [dl.pk]})
    assert response.status_code == 400 and "At most 8 CPU cores" in response.content.decode()
    profile.refresh_from_db()
    assert profile.cpu == Decimal("2") and profile.name == "Ada's quarter"


def test_within_the_limits_a_teacher_saves_and_the_ceilings_follow_the_settings(client, dl, settings):
    signed_in(client, "teacher")
    assert client.post("/notebooks/profiles/new/", {**FORM, "cpu": "8", "courses": [dl.pk]}).status_code == 302
    settings.NOTEBOOKS_MAX_CPU = 16
    data = {**FORM, "slug": "bigger", "cpu": "12", "courses": [dl.pk]}
    assert client.post("/notebooks/profiles/new/", data).status_code == 302
    assert sorted(NotebookProfile.objects.values_list("cpu", flat=True)) == [Decimal("8"), Decimal("12")]


def test_one_allow_list_for_jobs_and_profiles_an_admin_rule_opens_both(client, dl):
    image = "registry.lab.example/notebook:2"
    signed_in(client, "teacher")
    assert client.post("/notebooks/profiles/new/", {**FORM, "image": image, "courses": [dl.pk]}).status_code == 400
    ada = dl.teachers.get()
    token = token_issue(user=ada)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    lab(1)
    job = {"name": "train", "image": image, "command": ["python", "t.py"], "gpus": 1, "max_runtime_s": 600}
    refused = api.post("/api/v1/jobs/", job, format="json")
    assert refused.status_code == 400 and "not on the lab's image allow-list" in refused.json()["fields"]["image"][0]

    ImageRule.objects.create(pattern="registry.lab.example/*")
    assert client.post("/notebooks/profiles/new/", {**FORM, "image": image, "courses": [dl.pk]}).status_code == 302
    assert api.post("/api/v1/jobs/", job, format="json").status_code == 201
    assert NotebookProfile.objects.get().image == image and Job.objects.get().image == image


# --- The admin console --------------------------------------------------------------------------------


@pytest.mark.parametrize(("field", "value", "says"), OVER, ids=[o[0] for o in OVER])
def test_the_admin_console_refuses_the_same_and_saves_nothing(client, dl, field, value, says):
    signed_in(client, "admin")
    data = {**FORM, field: value, "roles": '["student"]', "courses": [dl.pk], "is_active": "on"}
    response = client.post("/admin/labs/notebookprofile/add/", data)
    assert response.status_code == 200 and says in response.content.decode()
    assert not NotebookProfile.objects.exists()
    assert client.post("/admin/labs/notebookprofile/add/", {**data, field: FORM[field]}).status_code == 302
    assert NotebookProfile.objects.get().roles == ["student"]


@pytest.mark.parametrize("role", ["student", "teacher"])
def test_the_admin_console_is_not_for_students_or_teachers(client, dl, role):
    signed_in(client, role)
    data = {**FORM, "cpu": "64", "roles": "[]", "courses": [dl.pk], "is_active": "on"}
    response = client.post("/admin/labs/notebookprofile/add/", data)
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    assert not NotebookProfile.objects.exists()


# --- Starting a profile saved before (or written around the checks) ---------------------------------


@pytest.fixture
def out_of_bounds(dl):
    """What the probe left behind: saved straight into the database, offered to every role and to DL-101."""
    profile = NotebookProfile.objects.create(
        slug="huge",
        name="Huge",
        image="docker.io/attacker/miner:latest",
        gpu_share=Decimal("0.25"),
        cpu=Decimal("64"),
        memory_gb=Decimal("256"),
        max_session_h=Decimal("72"),
        roles=["student", "teacher", "admin"],
    )
    profile.courses.add(dl)
    return profile


@pytest.mark.parametrize("role", ["student", "teacher", "admin"])
def test_an_out_of_bounds_profile_does_not_start_through_the_api(dl, out_of_bounds, role):
    user = User.objects.get(username="bo") if role == "student" else dl.teachers.get()
    if role == "admin":
        user = UserFactory(username="root", role="admin")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)}")
    response = api.post("/api/v1/notebooks/", {"profile": "huge"}, format="json")
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid" and list(body["fields"]) == ["profile"]
    assert "“Huge” is outside the lab's limits and cannot start" in body["detail"]
    assert "not on the lab's image allow-list" in body["detail"]
    assert not NotebookSession.objects.exists()


@pytest.mark.parametrize("role", ["student", "teacher", "admin"])
def test_an_out_of_bounds_profile_does_not_start_from_the_page(client, dl, out_of_bounds, role):
    signed_in(client, role)
    response = client.post("/notebooks/", {"profile": "huge"})
    assert response.status_code == 400
    assert "outside the lab&#x27;s limits and cannot start" in response.content.decode()
    assert not NotebookSession.objects.exists()


def test_a_profile_whose_image_rule_was_removed_no_longer_starts(client, dl):
    rule = ImageRule.objects.create(pattern="registry.lab.example/*")
    NotebookProfile.objects.create(
        slug="own", name="Own image", image="registry.lab.example/nb:1", roles=["student"], gpu_share=Decimal("0.25")
    )
    signed_in(client, "student")
    assert client.post("/notebooks/", {"profile": "own"}).status_code == 302
    assert NotebookSession.objects.count() == 1
    NotebookSession.objects.update(status="stopped")
    rule.enabled = False
    rule.save()
    response = client.post("/notebooks/", {"profile": "own"})
    assert response.status_code == 400 and "not on the lab&#x27;s image allow-list" in response.content.decode()
    assert NotebookSession.objects.count() == 1


@pytest.mark.parametrize("role", ["student", "teacher", "admin"])
def test_the_image_rules_are_kept_in_the_console_by_admins_only(client, dl, role):
    signed_in(client, role)
    response = client.post("/admin/labs/imagerule/add/", {"pattern": "registry.lab.example/*", "enabled": "on"})
    if role == "admin":
        assert response.status_code == 302
        assert client.get("/admin/labs/imagerule/").status_code == 200
        assert list(ImageRule.objects.values_list("pattern", flat=True)) == ["registry.lab.example/*"]
    else:
        assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
        assert not ImageRule.objects.exists()
