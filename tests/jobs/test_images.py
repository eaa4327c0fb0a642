"""The images a person may choose from: GET /api/v1/images/ for every role, and the job form's choice of them."""

import pytest

from jobs.models import Job
from labs.images import ImageRule
from tests.jobs.factories import ImageRuleFactory, lab
from tests.jobs.test_script import FORM

pytestmark = pytest.mark.django_db
URL = "/api/v1/images/"


@pytest.fixture(autouse=True)
def _images(settings):
    settings.JOBS_IMAGE_ALLOW = ["python:3.12-slim", "pytorch/pytorch:*"]
    ImageRuleFactory()  # registry.lab.example/*, "The lab's own registry"
    ImageRule.objects.create(pattern="registry.lab.example/torch:2.4", description="PyTorch 2.4, CUDA 12.4", gpu=True)
    ImageRule.objects.create(pattern="registry.lab.example/old:1", description="retired", enabled=False)
    ImageRule.objects.create(pattern="python:3.12-slim", description="Python 3.12, no CUDA")
    lab(2)


EXPECTED = [
    {"name": "python:3.12-slim", "description": "Python 3.12, no CUDA", "gpu": False, "pattern": False},
    {"name": "registry.lab.example/torch:2.4", "description": "PyTorch 2.4, CUDA 12.4", "gpu": True, "pattern": False},
    {"name": "pytorch/pytorch:*", "description": "", "gpu": False, "pattern": True},
    {"name": "registry.lab.example/*", "description": "The lab's own registry", "gpu": False, "pattern": True},
]


@pytest.mark.parametrize("role", ["student", "teacher", "admin"])
def test_every_role_lists_the_allow_list_with_descriptions(api_as, role):
    response = api_as(role).get(URL)
    assert response.status_code == 200
    assert response.json() == EXPECTED


def test_anonymous_gets_401(api_as):
    assert api_as("anonymous").get(URL).status_code == 401


def test_the_form_offers_the_images_with_what_each_holds(browser_client):
    page = browser_client("student").get("/jobs/new/").content.decode()
    assert (
        '<option value="registry.lab.example/torch:2.4">registry.lab.example/torch:2.4 — PyTorch 2.4, CUDA 12.4 · GPU'
        in page
    )
    assert '<option value="python:3.12-slim">python:3.12-slim — Python 3.12, no CUDA</option>' in page
    assert "retired" not in page
    assert "Any image that matches: pytorch/pytorch:*, registry.lab.example/* (The lab&#x27;s own registry)" in page


def test_the_form_takes_a_listed_image_or_another_that_matches(browser_client):
    client = browser_client("teacher")
    assert client.post("/jobs/new/", {**FORM, "image": "python:3.12-slim"}).status_code == 302
    response = client.post("/jobs/new/", {**FORM, "image": "", "image_other": "pytorch/pytorch:2.4.0-cuda12.4"})
    assert response.status_code == 302
    assert list(Job.objects.order_by("pk").values_list("image", flat=True)) == [
        "python:3.12-slim",
        "pytorch/pytorch:2.4.0-cuda12.4",
    ]


def test_a_guess_is_refused_with_where_to_look(browser_client):
    response = browser_client("student").post("/jobs/new/", {**FORM, "image": "", "image_other": "pytorch"})
    assert (
        response.status_code == 400 and "pytorch is not on the lab&#x27;s image allow-list" in response.content.decode()
    )
    response = browser_client("student").post("/jobs/new/", {**FORM, "image": ""})
    assert response.status_code == 400 and "Required: the container image" in response.content.decode()
    assert not Job.objects.exists()
