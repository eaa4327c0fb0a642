"""Every endpoint and page, every role, the status code each one gets."""

import pytest

from tests.conftest import ROLES

API_MATRIX = {
    # path: expected status for anonymous, student, teacher, admin
    "/api/v1/me/": (401, 200, 200, 200),
    "/api/v1/nodes/": (401, 200, 200, 200),
    "/api/v1/reservations/": (401, 403, 200, 200),
    "/api/v1/reservations/999999/": (401, 403, 404, 404),
    "/api/v1/availability/?starts_at=2030-01-07T14:00&ends_at=2030-01-07T16:00": (401, 200, 200, 200),
    "/api/v1/profiles/": (401, 200, 200, 200),
    "/api/v1/notebooks/": (401, 200, 200, 200),
    "/api/v1/notebooks/?mine=true": (401, 200, 200, 200),
    "/api/v1/notebooks/999999/": (401, 404, 404, 404),
    "/api/v1/schema/": (401, 200, 200, 200),
    "/api/v1/docs/": (401, 200, 200, 200),
    "/api/v1/redoc/": (401, 200, 200, 200),
    "/api/v1/no-such-thing/": (404, 404, 404, 404),
}

PAGE_MATRIX = {
    # path: expected status for anonymous (302 = sent to sign in), student, teacher, admin
    "/": (302, 200, 200, 200),
    "/account/": (302, 200, 200, 200),
    "/account/password/": (302, 200, 200, 200),
    "/lab/nodes/": (302, 200, 200, 200),
    "/lab/reservations/": (302, 200, 200, 200),
    "/lab/reservations/new/": (302, 403, 200, 200),
    "/lab/reservations/approvals/": (302, 403, 403, 200),
    "/lab/reservations/999999/": (302, 403, 404, 404),
    "/lab/reservations/999999/cancel/": (302, 403, 404, 404),
    "/notebooks/": (302, 200, 200, 200),
    "/notebooks/999999/stop/": (302, 404, 404, 404),
    "/notebooks/course/": (302, 403, 200, 200),
    "/notebooks/course/NO-SUCH/stop/": (302, 403, 404, 404),
    "/notebooks/profiles/": (302, 403, 200, 200),
    "/notebooks/profiles/new/": (302, 403, 200, 200),
    "/notebooks/profiles/no-such/edit/": (302, 403, 404, 404),
    "/notebooks/profiles/no-such/deactivate/": (302, 403, 404, 404),
    "/admin/labs/reservation/": (302, 302, 302, 200),
    "/admin/labs/notebookprofile/": (302, 302, 302, 200),
    "/admin/labs/notebooksession/": (302, 302, 302, 200),
    "/admin/": (302, 302, 302, 200),
    "/admin/accounts/user/": (302, 302, 302, 200),
    "/admin/accounts/course/": (302, 302, 302, 200),
    "/admin/accounts/quota/": (302, 302, 302, 200),
    "/admin/labs/node/": (302, 302, 302, 200),
    "/admin/labs/allocation/": (302, 302, 302, 200),
    "/login/": (200, 302, 302, 302),
    # The hub's one login: a sign-in request without a client is refused; userinfo takes a bearer token only.
    "/o/authorize/": (302, 400, 400, 400),
    "/o/userinfo/": (401, 401, 401, 401),
    "/o/.well-known/openid-configuration": (200, 200, 200, 200),
    "/o/.well-known/jwks.json": (200, 200, 200, 200),
    "/healthz": (200, 200, 200, 200),
    "/readyz": (200, 200, 200, 200),
    # Outside DEBUG (as pytest-django runs) and without METRICS_TOKEN: closed to everyone, signed in or not.
    "/metrics": (403, 403, 403, 403),
}


@pytest.mark.django_db
@pytest.mark.parametrize("path,expected", API_MATRIX.items(), ids=list(API_MATRIX))
@pytest.mark.parametrize("role_index,role", enumerate(ROLES), ids=ROLES)
def test_api_role_matrix(api_as, path, expected, role_index, role):
    response = api_as(role).get(
        path, HTTP_ACCEPT="text/html" if path.endswith("doc/") or path.endswith("docs/") else "application/json"
    )
    assert response.status_code == expected[role_index]
    if response.status_code in (401, 404) and response["Content-Type"] == "application/json":
        assert response.json()["code"] in ("not_authenticated", "not_found")


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
@pytest.mark.parametrize("path", ["/api/v1/me/", "/api/v1/nodes/"])
def test_read_only_endpoints_refuse_writes_for_every_role(api_as, method, path):
    for role in ("student", "teacher", "admin"):
        response = getattr(api_as(role), method)(path, {}, format="json")
        assert response.status_code == 405
        assert response.json()["code"] == "method_not_allowed"


@pytest.mark.django_db
@pytest.mark.parametrize("path,expected", PAGE_MATRIX.items(), ids=list(PAGE_MATRIX))
@pytest.mark.parametrize("role_index,role", enumerate(ROLES), ids=ROLES)
def test_page_role_matrix(browser_client, path, expected, role_index, role):
    response = browser_client(role).get(path)
    assert response.status_code == expected[role_index]
    if response.status_code == 302 and role == "anonymous":
        assert "/login/" in response["Location"]


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["student", "teacher", "admin"])
def test_dashboard_is_the_one_for_the_role(browser_client, role):
    page = browser_client(role).get("/").content.decode()
    marker = {"student": "Here is what you can use this week", "teacher": "Courses you teach", "admin": "Lab overview"}
    assert marker[role] in page
    assert ("Admin console" in page) is (role == "admin")


WRITE_MATRIX = {
    # (method, path): expected status for anonymous, student, teacher, admin (with an empty JSON body)
    ("post", "/api/v1/reservations/"): (401, 403, 400, 400),
    ("delete", "/api/v1/reservations/999999/"): (401, 403, 404, 404),
    ("post", "/api/v1/reservations/999999/approve/"): (401, 403, 403, 404),
    ("post", "/api/v1/reservations/999999/reject/"): (401, 403, 403, 404),
    ("post", "/api/v1/notebooks/"): (401, 400, 400, 400),
    ("delete", "/api/v1/notebooks/999999/"): (401, 404, 404, 404),
    ("post", "/api/v1/notebooks/999999/extend/"): (401, 404, 404, 404),
}


@pytest.mark.django_db
@pytest.mark.parametrize("call,expected", WRITE_MATRIX.items(), ids=[f"{m} {p}" for m, p in WRITE_MATRIX])
@pytest.mark.parametrize("role_index,role", enumerate(ROLES), ids=ROLES)
def test_api_write_role_matrix(api_as, call, expected, role_index, role):
    method, path = call
    response = getattr(api_as(role), method)(path, {}, format="json")
    assert response.status_code == expected[role_index]
    codes = {400: "invalid", 401: "not_authenticated", 403: "permission_denied", 404: "not_found"}
    assert response.json()["code"] == codes[response.status_code]


PAGE_WRITE_MATRIX = {
    # path: expected status of a POST for anonymous (302 = sent to sign in), student, teacher, admin
    "/notebooks/": (302, 400, 400, 400),  # no profile chosen
    "/notebooks/999999/stop/": (302, 404, 404, 404),
    "/notebooks/999999/extend/": (302, 404, 404, 404),
    "/notebooks/course/NO-SUCH/stop/": (302, 403, 404, 404),
    "/notebooks/profiles/new/": (302, 403, 400, 400),  # an empty form
    "/notebooks/profiles/no-such/edit/": (302, 403, 404, 404),
    "/notebooks/profiles/no-such/deactivate/": (302, 403, 404, 404),
    "/notebooks/profiles/no-such/activate/": (302, 403, 404, 404),
}


@pytest.mark.django_db
@pytest.mark.parametrize("path,expected", PAGE_WRITE_MATRIX.items(), ids=list(PAGE_WRITE_MATRIX))
@pytest.mark.parametrize("role_index,role", enumerate(ROLES), ids=ROLES)
def test_page_write_role_matrix(browser_client, path, expected, role_index, role):
    response = browser_client(role).post(path, {})
    assert response.status_code == expected[role_index]
    if response.status_code == 302:
        assert "/login/" in response["Location"]
