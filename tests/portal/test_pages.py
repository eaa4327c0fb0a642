import pytest

from accounts.models import ApiToken
from labs.inventory import demo_specs
from labs.models import Node
from labs.services import inventory_sync
from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db


def test_failed_sign_in_is_400_and_says_why(client):
    UserFactory(username="kim")
    for username, password in (("kim", "nope"), ("nobody", PASSWORD)):
        response = client.post("/login/", {"username": username, "password": password})
        assert response.status_code == 400
        assert "Please enter a correct username and password" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_sign_in_follows_next_but_not_off_site(client):
    UserFactory(username="kim")
    response = client.post("/login/?next=/lab/nodes/", {"username": "kim", "password": PASSWORD, "next": "/lab/nodes/"})
    assert response["Location"] == "/lab/nodes/"
    client.logout()
    response = client.post("/login/", {"username": "kim", "password": PASSWORD, "next": "https://evil.example/"})
    assert response["Location"] == "/"


def test_sign_out_needs_post(client):
    client.force_login(UserFactory())
    assert client.get("/logout/").status_code == 405
    assert client.post("/logout/").status_code == 302
    assert client.get("/").status_code == 302


def test_password_change(client):
    user = UserFactory(username="kim")
    client.force_login(user)
    wrong = client.post(
        "/account/password/",
        {"old_password": "wrong", "new_password1": "a-new-long-pass-4090", "new_password2": "a-new-long-pass-4090"},
    )
    assert wrong.status_code == 400
    assert "Your old password was entered incorrectly" in wrong.content.decode()
    weak = client.post("/account/password/", {"old_password": PASSWORD, "new_password1": "123", "new_password2": "123"})
    assert weak.status_code == 400
    user.refresh_from_db()
    assert user.check_password(PASSWORD)
    done = client.post(
        "/account/password/",
        {"old_password": PASSWORD, "new_password1": "a-new-long-pass-4090", "new_password2": "a-new-long-pass-4090"},
        follow=True,
    )
    assert "Your password was changed." in done.content.decode()
    user.refresh_from_db()
    assert user.check_password("a-new-long-pass-4090")


def test_api_token_made_on_the_account_page_is_shown_once_and_listed(client):
    user = UserFactory()
    client.force_login(user)
    assert "You have no API token." in client.get("/account/").content.decode()
    made = client.post("/account/", {"name": "laptop", "expires_in_days": "30"})
    assert made.status_code == 200
    key = made.context["new_key"]
    assert key in made.content.decode() and "shown only this once" in made.content.decode()
    page = client.get("/account/").content.decode()
    assert key not in page and "laptop" in page and key[:12] in page
    assert ApiToken.objects.get(user=user).key_hash != key  # stored hashed


def test_nodes_page_filters_by_status_and_says_when_none_match(client):
    client.force_login(UserFactory())
    assert "No nodes are known yet." in client.get("/lab/nodes/").content.decode()
    inventory_sync(specs=demo_specs(3), source="demo")
    Node.objects.filter(name="gpu02").update(status="cordoned")
    page = client.get("/lab/nodes/?status=cordoned").content.decode()
    assert 'data-node="gpu02"' in page and 'data-node="gpu01"' not in page
    assert "No node is down." in client.get("/lab/nodes/?status=down").content.decode()
    assert client.get("/lab/nodes/?status=<script>").status_code == 200


@pytest.mark.parametrize("role,hint", [("student", "Ask your teacher to enroll you"), ("teacher", "Ask a lab admin")])
def test_empty_course_list_says_what_to_do(client, role, hint):
    client.force_login(UserFactory(role=role))
    assert hint in client.get("/").content.decode()


def test_admin_dashboard_shows_empty_lab_instructions(client):
    client.force_login(UserFactory(role="admin"))
    assert "manage.py seed_demo" in client.get("/").content.decode()


def test_unknown_page_is_a_friendly_404(client, settings):
    settings.DEBUG = False
    client.force_login(UserFactory())
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    assert "Back to your dashboard" in response.content.decode()


def _menu(client, path):
    import re

    html = client.get(path).content.decode()
    nav = re.search(r'<nav class="nav" aria-label="[^"]+">(.*?)</nav>', html, re.S).group(1)
    return re.findall(r'<a href="([^"]+)"( aria-current="page")?>([^<]+)</a>', nav)


@pytest.mark.parametrize(
    "role, extra",
    [
        ("student", []),
        ("teacher", ["/notebooks/course/", "/usage/courses/", "/courses/audit/"]),
        ("admin", ["/notebooks/course/", "/usage/courses/", "/usage/lab/", "/console/", "/admin/"]),
    ],
)
def test_the_menu_is_each_roles_own_in_its_language_with_this_page_marked(client, role, extra):
    # The menu is made once per language, role and page in each process (portal/web/templatetags/nav.py).
    user = UserFactory(username=f"kim-{role}", role=role)
    client.force_login(user)
    everyone = [
        "/",
        "/lab/nodes/",
        "/lab/gpus/",
        "/lab/reservations/",
        "/jobs/",
        "/notebooks/",
        "/usage/",
        "/requests/",
    ]
    links = _menu(client, "/jobs/")
    assert {href for href, _, _ in links} == {*everyone, "/api/v1/docs/", "/help/", *extra}
    assert [(href, text) for href, current, text in links if current] == [("/jobs/", "Jobs")]
    user.language = "pt-br"
    user.save(update_fields=["language"])
    links = _menu(client, "/lab/gpus/")
    assert [(href, text) for href, current, text in links if current] == [("/lab/gpus/", "GPUs ao vivo")]
    assert ("/jobs/", "", "Tarefas") in links


def test_a_student_who_becomes_an_assistant_sees_the_course_links_on_the_next_page(client):
    from accounts.models import Enrollment
    from tests.factories import CourseFactory

    student = UserFactory(username="tina", role="student")
    client.force_login(student)
    assert "/notebooks/course/" not in {href for href, _, _ in _menu(client, "/")}
    Enrollment.objects.create(user=student, course=CourseFactory(code="DL-101"), role="assistant")
    links = {href for href, _, _ in _menu(client, "/")}
    assert {"/notebooks/course/", "/usage/courses/"} <= links and "/console/" not in links
