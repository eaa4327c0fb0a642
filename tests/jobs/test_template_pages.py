"""The job template pages per role: the course's list (its teachers, admins and the people enrolled in it), the
teacher's editor and delete (teachers and admins), the student's form (the people who may use the template), and the
job form's list of templates."""

import pytest

from accounts.models import User
from jobs.models import Job, JobTemplate
from tests.factories import PASSWORD
from tests.jobs.factories import IMAGE, ImageRuleFactory
from tests.jobs.test_templates import course, make_template  # noqa: F401

pytestmark = pytest.mark.django_db

LIST = "/courses/ML-101/job-templates/"
NEW = LIST + "new/"
FORM = {
    "name": "sweep",
    "description": "Try a learning rate.",
    "image": IMAGE,
    "kind": "script",
    "script": 'echo "lr=$LR"\n',
    "gpus": "1",
    "nodes": "1",
    "max_runtime_s": "600",
    "parameters": "LR | Learning rate | float | 0.0001..1 | 0.01\nMODEL | Model | choice | a, b | a",
}


def signed_in(client, username: str):
    assert client.login(username=username, password=PASSWORD)
    return client


@pytest.fixture(autouse=True)
def _image(course):  # noqa: F811
    ImageRuleFactory(pattern=IMAGE, description="Training image")


def test_anonymous_is_sent_to_sign_in(client, course):  # noqa: F811
    template = make_template(course)
    for url in (LIST, NEW, f"/jobs/new/template/{template.pk}/"):
        response = client.get(url)
        assert response.status_code == 302 and "/login/" in response["Location"]


@pytest.mark.parametrize("username", ["teacher-x", "admin-x"])
def test_teacher_and_admin_write_a_template_from_the_page(client, course, username):  # noqa: F811
    client = signed_in(client, username)
    assert 'data-testid="template-new"' in client.get(LIST).content.decode()
    response = client.post(NEW, FORM)
    assert response.status_code == 302, response.content.decode()
    template = JobTemplate.objects.get()
    assert template.script == 'echo "lr=$LR"\n' and template.command == []
    assert template.parameters == [
        {"name": "LR", "label": "Learning rate", "type": "float", "min": 0.0001, "max": 1.0, "default": 0.01},
        {"name": "MODEL", "label": "Model", "type": "choice", "choices": ["a", "b"], "default": "a"},
    ]
    page = client.get(LIST).content.decode()
    assert "sweep" in page and "<code>LR</code>" in page
    # The editor shows it back as it was written; a change is saved.
    edit = client.get(f"{LIST}{template.pk}/").content.decode()
    assert "LR | Learning rate | float | 0.0001..1.0 | 0.01" in edit
    response = client.post(f"{LIST}{template.pk}/", {**FORM, "name": "sweep 2"})
    assert response.status_code == 302 and JobTemplate.objects.get().name == "sweep 2"
    assert client.post(f"{LIST}{template.pk}/delete/").status_code == 302
    assert not JobTemplate.objects.exists()


def test_a_bad_parameter_line_is_shown_on_the_page(client, course):  # noqa: F811
    client = signed_in(client, "teacher-x")
    response = client.post(NEW, {**FORM, "parameters": "LR | Learning rate | float | 5..1"})
    assert response.status_code == 400
    assert "The min of LR is above its max." in response.content.decode()
    response = client.post(NEW, {**FORM, "parameters": "just a line"})
    assert "Line 1 is not NAME | label | type" in response.content.decode()
    assert not JobTemplate.objects.exists()


@pytest.mark.parametrize("username", ["student-x", "assistant-x"])
def test_the_people_enrolled_see_the_list_but_not_the_editor(client, course, username):  # noqa: F811
    template = make_template(course)
    client = signed_in(client, username)
    page = client.get(LIST).content.decode()
    assert "mnist" in page and 'data-testid="template-use"' in page and 'data-testid="template-edit"' not in page
    assert client.get(NEW).status_code == 403
    assert client.post(NEW, FORM).status_code == 403
    assert client.get(f"{LIST}{template.pk}/").status_code == 403
    assert client.post(f"{LIST}{template.pk}/delete/").status_code == 403
    assert JobTemplate.objects.count() == 1


@pytest.mark.parametrize("username", ["outsider-x", "teacher-y"])
def test_anyone_else_gets_404(client, course, username):  # noqa: F811
    template = make_template(course)
    client = signed_in(client, username)
    for url in (LIST, NEW, f"{LIST}{template.pk}/", f"/jobs/new/template/{template.pk}/"):
        assert client.get(url).status_code == 404, url
    assert client.post(f"{LIST}{template.pk}/delete/").status_code == 404
    assert "template-pick" not in client.get("/jobs/new/").content.decode()


def test_a_student_picks_a_template_on_the_job_form_and_submits_it(client, course):  # noqa: F811
    template = make_template(course)
    client = signed_in(client, "student-x")
    assert f'href="/jobs/new/template/{template.pk}/" data-testid="template-pick">mnist</a>' in (
        client.get("/jobs/new/").content.decode()
    )
    assert 'href="/courses/ML-101/job-templates/"' in client.get("/").content.decode()
    page = client.get(f"/jobs/new/template/{template.pk}/").content.decode()
    assert "Learning rate" in page and "Reaches the job as $LR." in page and "never through a shell" in page
    response = client.post(f"/jobs/new/template/{template.pk}/", {"param_LR": "2", "param_EPOCHS": "3"})
    assert response.status_code == 400 and not Job.objects.exists()
    response = client.post(f"/jobs/new/template/{template.pk}/", {"param_LR": "0.5", "param_EPOCHS": "4"})
    job = Job.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.pk}/"
    assert job.owner == User.objects.get(username="student-x") and job.env["LR"] == "0.5"
    assert job.command[2] == "--epochs=4"
