"""Course job templates through the API, per role: the course's teachers and admins write, the people enrolled in it
read, anyone else gets 404; a job from a template takes its parameters as checked values in its environment, and a
bad parameter is a 400 whose sentence names it."""

import pytest

from accounts.models import User
from jobs.models import Job, JobTemplate
from tests.factories import CourseFactory, EnrollmentFactory, UserFactory
from tests.jobs.factories import IMAGE, ImageRuleFactory, lab

pytestmark = pytest.mark.django_db

PARAMETERS = [
    {"name": "EPOCHS", "label": "Epochs", "type": "int", "min": 1, "max": 50, "default": 3},
    {"name": "LR", "label": "Learning rate", "type": "float", "min": 0.0001, "max": 1},
    {"name": "MODEL", "label": "Model", "type": "choice", "choices": ["resnet18", "resnet50"], "default": "resnet18"},
    {"name": "NOTE", "label": "Note", "type": "text", "max": 20, "default": "x"},
]
TEMPLATE = {
    "name": "mnist",
    "description": "Train a small net.",
    "image": IMAGE,
    "command": ["python", "train.py", "--epochs={EPOCHS}", "--lr", "{LR}"],
    "gpus": 1,
    "max_runtime_s": 600,
    "parameters": PARAMETERS,
}


@pytest.fixture
def course():
    ImageRuleFactory()
    lab(2)
    course = CourseFactory(code="ML-101")
    teacher = UserFactory(username="teacher-x", role="teacher")
    course.teachers.add(teacher)
    for username, part in (("student-x", "student"), ("assistant-x", "assistant")):
        EnrollmentFactory(user=UserFactory(username=username, role="student"), course=course, role=part)
    UserFactory(username="outsider-x", role="student")
    other = CourseFactory(code="OTHER-1")
    other.teachers.add(UserFactory(username="teacher-y", role="teacher"))
    UserFactory(username="admin-x", role="admin")
    return course


def client_of(username: str):
    from rest_framework.test import APIClient

    from accounts.services import token_issue

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=User.objects.get(username=username))}")
    return client


def make_template(course, **change) -> JobTemplate:
    from jobs.services.templates import template_save

    teacher = course.teachers.first()
    return template_save(user=teacher, course=course, **{**TEMPLATE, **change})


URL = "/api/v1/courses/ML-101/job-templates/"


def test_anonymous_gets_401(course, api):
    assert api.get(URL).status_code == 401
    assert api.post(URL, TEMPLATE, format="json").status_code == 401


@pytest.mark.parametrize("username", ["teacher-x", "admin-x"])
def test_the_courses_teacher_and_an_admin_write_and_read(course, username):
    client = client_of(username)
    response = client.post(URL, TEMPLATE, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["course"] == "ML-101" and body["name"] == "mnist" and body["command"][2] == "--epochs={EPOCHS}"
    assert [p["name"] for p in body["parameters"]] == ["EPOCHS", "LR", "MODEL", "NOTE"]
    assert [t["name"] for t in client.get(URL).json()] == ["mnist"]


@pytest.mark.parametrize("username", ["student-x", "assistant-x"])
def test_the_people_enrolled_read_but_may_not_write(course, username):
    make_template(course)
    client = client_of(username)
    assert [t["name"] for t in client.get(URL).json()] == ["mnist"]
    response = client.post(URL, {**TEMPLATE, "name": "mine"}, format="json")
    assert response.status_code == 403 and response.json()["code"] == "permission_denied"
    assert "written by its teachers and admins" in response.json()["detail"]
    assert JobTemplate.objects.count() == 1


@pytest.mark.parametrize("username", ["outsider-x", "teacher-y"])
def test_anyone_else_gets_404_as_for_no_such_course(course, username):
    make_template(course)
    client = client_of(username)
    assert client.get(URL).status_code == 404
    assert client.post(URL, TEMPLATE, format="json").status_code == 404
    assert client_of("admin-x").get("/api/v1/courses/NOPE/job-templates/").status_code == 404


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"parameters": [{"name": "epochs", "type": "int"}]}, "parameters", "capital letters"),
        ({"parameters": [{"name": "X", "type": "bool"}]}, "parameters", "int, float, choice and text"),
        ({"parameters": [{"name": "X", "type": "int", "min": 5, "max": 1}]}, "parameters", "above its max"),
        ({"parameters": [{"name": "X", "type": "int", "max": 3, "default": 9}]}, "parameters", "default of X"),
        ({"parameters": [{"name": "LD_PRELOAD", "type": "text"}]}, "parameters", "LD_PRELOAD"),
        ({"parameters": [{"name": "X", "type": "choice", "choices": []}]}, "parameters", "choices of X"),
        ({"parameters": "EPOCHS"}, "parameters", "list"),
        ({"image": "docker.io/evil/miner:1"}, "image", ""),
        ({"command": "python train.py"}, "command", ""),
        ({"script": "echo hi"}, "command", "not both"),
        ({"gpus": 0}, "gpus", ""),
        ({"name": ""}, "name", ""),
    ],
)
def test_a_bad_template_is_a_400_naming_the_field(course, change, field, words):
    response = client_of("teacher-x").post(URL, {**TEMPLATE, **change}, format="json")
    assert response.status_code == 400, response.json()
    body = response.json()
    assert field in body["fields"] and words in str(body["fields"][field])
    assert not JobTemplate.objects.exists()


def test_a_second_template_of_the_same_name_is_a_400(course):
    make_template(course)
    response = client_of("teacher-x").post(URL, TEMPLATE, format="json")
    assert response.status_code == 400 and "already has a template named" in str(response.json()["fields"]["name"])


# --- jobs from templates ------------------------------------------------------------------------------------------


def test_a_student_submits_from_a_template_with_parameters(course):
    template = make_template(course)
    response = client_of("student-x").post(
        "/api/v1/jobs/", {"template": template.pk, "parameters": {"LR": "0.05", "EPOCHS": 7}}, format="json"
    )
    assert response.status_code == 201, response.json()
    job = Job.objects.get()
    assert job.name == "mnist" and job.image == IMAGE and job.course == course and job.max_runtime_s == 600
    assert job.command == ["python", "train.py", "--epochs=7", "--lr", "0.05"]
    assert job.env == {"EPOCHS": "7", "LR": "0.05", "MODEL": "resnet18", "NOTE": "x"}


def test_a_value_with_shell_characters_stays_one_argument_and_one_variable(course):
    template = make_template(course, parameters=[{"name": "NOTE", "type": "text", "max": 100}])
    template.command = ["echo", "{NOTE}"]
    template.save()
    value = "a b; rm -rf ~ $(id) `x`"
    response = client_of("student-x").post(
        "/api/v1/jobs/", {"template": template.pk, "parameters": {"NOTE": value}}, format="json"
    )
    assert response.status_code == 201, response.json()
    job = Job.objects.get()
    assert job.command == ["echo", value] and job.env == {"NOTE": value}


@pytest.mark.parametrize(
    ("body", "field", "sentence"),
    [
        ({"parameters": {"EPOCHS": 99, "LR": 0.1}}, "parameters", "The parameter EPOCHS (Epochs) must be a whole"),
        ({"parameters": {"EPOCHS": "three", "LR": 0.1}}, "parameters", "EPOCHS (Epochs)"),
        ({"parameters": {}}, "parameters", "The parameter LR (Learning rate) is required."),
        ({"parameters": {"LR": 0.1, "MODEL": "vgg"}}, "parameters", "MODEL (Model) must be one of resnet18"),
        ({"parameters": {"LR": 0.1, "NOTE": "x\ny"}}, "parameters", "NOTE (Note)"),
        ({"parameters": {"LR": 0.1, "BATCH": 3}}, "parameters", "has no parameter BATCH"),
        ({"parameters": [1]}, "parameters", "object of NAME: value"),
        ({"parameters": {"LR": 0.1}, "command": ["ls"]}, "command", "come from the template"),
        ({"parameters": {"LR": 0.1}, "script": "ls"}, "script", "come from the template"),
        ({"parameters": {"LR": 0.1}, "gpus": 2}, "gpus", "come from the template"),
        ({"parameters": {"LR": 0.1}, "env": {"LR": "1"}}, "env", "LR is a parameter of the template"),
    ],
)
def test_bad_parameters_are_a_400_naming_the_parameter_and_queue_nothing(course, body, field, sentence):
    template = make_template(course)
    response = client_of("student-x").post("/api/v1/jobs/", {"template": template.pk, **body}, format="json")
    assert response.status_code == 400, response.json()
    assert sentence in str(response.json()["fields"][field]) and sentence in response.json()["detail"]
    assert not Job.objects.exists()


@pytest.mark.parametrize("username", ["outsider-x", "teacher-y"])
def test_a_template_of_someone_elses_course_is_no_such_template(course, username):
    template = make_template(course)
    response = client_of(username).post(
        "/api/v1/jobs/", {"template": template.pk, "parameters": {"LR": 1}}, format="json"
    )
    assert response.status_code == 400 and "No such template" in str(response.json()["fields"]["template"])
    assert not Job.objects.exists()


def test_parameters_without_a_template_are_a_400():
    ImageRuleFactory()
    lab(1)
    UserFactory(username="student-x")
    body = {"name": "a", "image": IMAGE, "command": ["ls"], "gpus": 1, "max_runtime_s": 600, "parameters": {"A": 1}}
    response = client_of("student-x").post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 400 and "parameters" in response.json()["fields"]


def test_a_float_parameter_reaches_the_job_unrounded(course):
    template = make_template(course)
    response = client_of("student-x").post(
        "/api/v1/jobs/", {"template": template.pk, "parameters": {"LR": 0.123456789}}, format="json"
    )
    assert response.status_code == 201, response.json()
    assert Job.objects.get().env["LR"] == "0.123456789"
