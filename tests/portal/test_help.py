"""/help/: a page per role with the lab's real numbers, linked from the menu and from quota refusals."""

import pytest

from accounts.models import Quota
from tests.factories import PASSWORD, UserFactory
from tests.jobs.factories import ImageRuleFactory, lab
from tests.jobs.test_api import GOOD, URL

pytestmark = pytest.mark.django_db


def limit_cell(page: str, name: str) -> str:
    return page.split(f'data-limit="{name}">', 1)[1].split("<", 1)[0]


@pytest.mark.parametrize("role", ["student", "teacher", "admin"])
def test_each_role_has_a_page_with_the_policy_numbers(client, role):
    page = client.get(f"/help/{role}/").content.decode()
    assert "GPU-hours per week" in page and "Your first training job" in page
    assert ('"script":' in page) and ('"command": [' in page)
    assert ("Booking nodes" in page) is (role != "student")
    assert ("operations console" in page) is (role == "admin")
    # Grouped, as English writes numbers (1,234.5; pt-BR 1.234,5).
    assert limit_cell(page, "gpu_hours_week") == {"student": "20", "teacher": "200", "admin": "10,000"}[role]


def test_the_numbers_follow_the_lab_policy_and_the_settings(client, settings):
    Quota.objects.update_or_create(role="student", defaults={"gpu_hours_week": 35})
    settings.NOTEBOOKS_IDLE_MIN = 45
    page = client.get("/help/student/").content.decode()
    assert limit_cell(page, "gpu_hours_week") == "35"
    assert "for 45 minutes is stopped" in page


def test_signed_in_people_see_their_own_numbers_and_the_menu_links_there(client):
    sam = UserFactory(username="sam", role="student")
    Quota.objects.create(user=sam, gpu_hours_week=50)
    assert client.login(username="sam", password=PASSWORD)
    dashboard = client.get("/").content.decode()
    assert 'href="/help/"' in dashboard
    page = client.get("/help/").content.decode()
    assert limit_cell(page, "gpu_hours_week") == "50" and "These are your numbers now" in page


def test_whom_to_ask_is_the_setting_or_else_the_admins(client, settings):
    UserFactory(username="ada", role="admin", email="ada@lab.example")
    settings.LAB_CONTACT = ""
    assert "ada@lab.example" in client.get("/help/").content.decode()
    settings.LAB_CONTACT = "gpu-lab@uni.example, room B-204"
    page = client.get("/help/").content.decode()
    assert "gpu-lab@uni.example, room B-204" in page and "ada@lab.example" not in page


def test_an_unknown_role_is_404(client):
    assert client.get("/help/wizard/").status_code == 404


def test_a_quota_refusal_points_to_the_help(api_as):
    ImageRuleFactory()
    lab(2)
    response = api_as("student").post(URL, {**GOOD, "nodes": 2}, format="json")
    assert response.status_code == 403
    assert response.json()["help"] == "/help/#limit-max_gpus_per_job"
