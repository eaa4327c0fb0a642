"""Every route, every method, every role: the status each one gets, generated from the URL configuration.

The matrix below has one row per route of `portal/urls.py` (the admin console's routes are generated from its
registry). A route added without a row fails `test_every_route_has_a_row`, and each row is checked for anonymous,
student, teacher, admin and teaching assistant (a student who assists a course of their own, with no students: what
an assistant may do to a course's students is in tests/portal/test_teaching_assistants.py) with GET, POST, PUT,
PATCH and DELETE (an empty body; objects that do not exist).
A method a row does not name gets its kind's default: pages send the anonymous to sign in and answer 405 to the
rest; the API answers 401 to the anonymous and 405 to the rest.

The rules the rows follow: a thing the caller may not see is 404 (page and API alike); a role that may not do
something at all is 403 before any object is looked up; the anonymous are sent to sign in (pages) or get 401 (API).
"""

from __future__ import annotations

import re

import pytest
from django.contrib import admin
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from rest_framework.test import APIClient

from accounts.services import token_issue
from tests.conftest import ROLES_WITH_ASSISTANT as ROLES
from tests.factories import PASSWORD, CourseFactory, EnrollmentFactory, UserFactory

METHODS = ("get", "post", "put", "patch", "delete")
PAGE = (302, 405, 405, 405, 405)  # a page's default for a method it does not take: sign in first, then 405
API = (401, 405, 405, 405, 405)
PUBLIC = (405, 405, 405, 405, 405)  # public endpoints: 405 for everyone

# route: {method: (anonymous, student, teacher, admin, assistant), "other": default for the methods not named}
MATRIX: dict[str, dict[str, tuple[int, int, int, int, int]]] = {
    # --- pages ---------------------------------------------------------------------------------------------------
    "": {"get": (302, 200, 200, 200, 200)},
    "dashboard/live/": {"get": (302, 200, 200, 200, 200)},  # the dashboard's live parts (static/js/dashboard.js)
    "login/": {"get": (200, 302, 302, 302, 302), "post": (400, 302, 302, 302, 302), "other": (405, 302, 302, 302, 302)},
    "logout/": {"post": (302, 302, 302, 302, 302), "other": PUBLIC},
    "jsi18n/": {"get": (200, 200, 200, 200, 200), "other": PUBLIC},  # the scripts' strings
    # The university's sign-in (OpenID Connect): not configured in the tests' settings, so not there (404); with a
    # provider, tests/portal/test_signin_oidc.py drives them (302 to the IdP; the callback's pages for each failure).
    "login/oidc/": {"get": (404, 404, 404, 404, 404), "other": PUBLIC},
    "login/oidc/callback/": {"get": (404, 404, 404, 404, 404), "other": PUBLIC},
    "account/": {
        "get": (302, 200, 200, 200, 200),
        "post": (302, 200, 200, 200, 200),
    },  # POST makes a token (shown once)
    "account/tokens/<int:token_id>/revoke/": {"get": (302, 404, 404, 404, 404), "post": (302, 404, 404, 404, 404)},
    "account/sign-out-everywhere/": {
        "get": (302, 200, 200, 200, 200),
        "post": (302, 400, 400, 400, 400),
    },  # unconfirmed
    "account/password/": {"get": (302, 200, 200, 200, 200), "post": (302, 400, 400, 400, 400)},
    "notices/<int:notice_id>/dismiss/": {"post": (302, 404, 404, 404, 404)},
    # The lab machines' seat: every role may start the profile KIOSK_PROFILE, which does not exist here (400).
    "kiosk/": {"get": (302, 200, 200, 200, 200), "post": (302, 400, 400, 400, 400)},
    "kiosk/sign-out/": {"post": (302, 302, 302, 302, 302), "other": PUBLIC},
    "lab/nodes/": {"get": (302, 200, 200, 200, 200)},
    "lab/nodes/<str:name>/": {"get": (302, 404, 404, 404, 404)},
    "lab/gpus/": {"get": (302, 200, 200, 200, 200)},
    "lab/reservations/": {"get": (302, 200, 200, 200, 200)},
    "lab/reservations/new/": {"get": (302, 403, 200, 200, 403), "post": (302, 403, 400, 400, 403)},
    "lab/reservations/approvals/": {"get": (302, 403, 403, 200, 403)},
    "lab/reservations/<int:reservation_id>/": {"get": (302, 403, 404, 404, 403)},
    "lab/reservations/<int:reservation_id>/cancel/": {
        "get": (302, 403, 404, 404, 403),
        "post": (302, 403, 404, 404, 403),
    },
    "lab/reservations/<int:reservation_id>/decide/": {"post": (302, 403, 403, 404, 403)},
    "jobs/": {"get": (302, 200, 200, 200, 200)},
    "jobs/new/": {"get": (302, 200, 200, 200, 200), "post": (302, 400, 400, 400, 400)},
    "jobs/<int:job_id>/": {"get": (302, 404, 404, 404, 404)},
    "jobs/<int:job_id>/cancel/": {"get": (302, 404, 404, 404, 404), "post": (302, 404, 404, 404, 404)},
    # Course job templates: a course that does not exist is 404 for everyone (per role: tests/jobs/test_template*.py).
    "jobs/new/template/<int:template_id>/": {"get": (302, 404, 404, 404, 404), "post": (302, 404, 404, 404, 404)},
    "courses/<str:code>/job-templates/": {"get": (302, 404, 404, 404, 404)},
    "courses/<str:code>/job-templates/new/": {"get": (302, 404, 404, 404, 404), "post": (302, 404, 404, 404, 404)},
    "courses/<str:code>/job-templates/<int:template_id>/": {
        "get": (302, 404, 404, 404, 404),
        "post": (302, 404, 404, 404, 404),
    },
    "courses/<str:code>/job-templates/<int:template_id>/delete/": {"post": (302, 404, 404, 404, 404)},
    "jobs/<int:job_id>/resume/": {"post": (302, 404, 404, 404, 404)},
    "notebooks/": {"get": (302, 200, 200, 200, 200), "post": (302, 400, 400, 400, 400)},  # POST without a profile
    "notebooks/<int:notebook_id>/stop/": {"get": (302, 404, 404, 404, 404), "post": (302, 404, 404, 404, 404)},
    "notebooks/<int:notebook_id>/extend/": {"post": (302, 404, 404, 404, 404)},
    "notebooks/course/": {"get": (302, 403, 200, 200, 200)},  # assistants see their courses' notebooks
    "notebooks/course/<str:code>/stop/": {"get": (302, 403, 404, 404, 404), "post": (302, 403, 404, 404, 404)},
    # --- rosters: a course's teachers and admins; assistants see its students but change no roster --------------
    "courses/<str:code>/roster/": {"get": (302, 403, 404, 404, 403)},
    "courses/<str:code>/roster/preview/": {"post": (302, 403, 404, 404, 403)},
    "courses/<str:code>/roster/import/": {"post": (302, 403, 404, 404, 403)},
    "courses/<str:code>/roster.csv": {"get": (302, 403, 404, 404, 403)},
    "courses/<str:code>/roster/<str:username>/invite/": {"post": (302, 403, 404, 404, 403)},
    # --- course work: a course's people read it; its teachers (and admins) publish; its staff read submissions ----
    "courses/<str:code>/coursework/": {"get": (302, 404, 404, 404, 404), "post": (302, 403, 404, 404, 403)},
    "assignments/<int:assignment_id>/submissions/": {"get": (302, 403, 404, 404, 404)},
    "assignments/<int:assignment_id>/submissions.csv": {"get": (302, 403, 404, 404, 404)},
    "assignments/<int:assignment_id>/submissions.zip": {"get": (302, 403, 404, 404, 404)},
    "assignments/<int:assignment_id>/submissions/<str:username>/": {"get": (302, 404, 404, 404, 404)},
    "assignments/<int:assignment_id>/hand-in/": {"post": (302, 404, 404, 404, 404)},
    "assignments/<int:assignment_id>/extensions/": {"post": (302, 403, 404, 404, 403)},
    # An invitation's one-time link: open to anyone holding it; an unknown (or used, or expired) one is 404.
    "invite/<str:token>/": {"get": (404, 404, 404, 404, 404), "post": (404, 404, 404, 404, 404), "other": PUBLIC},
    # A request to join a course: its person only, signed in; anyone else's (or none) is 404.
    "invitations/<int:invitation_id>/": {"get": (302, 404, 404, 404, 404), "post": (302, 404, 404, 404, 404)},
    "notebooks/profiles/": {"get": (302, 403, 200, 200, 403)},
    "notebooks/profiles/new/": {"get": (302, 403, 200, 200, 403), "post": (302, 403, 400, 400, 403)},
    "notebooks/profiles/<slug:slug>/edit/": {"get": (302, 403, 404, 404, 403), "post": (302, 403, 404, 404, 403)},
    "notebooks/profiles/<slug:slug>/deactivate/": {"get": (302, 403, 404, 404, 403), "post": (302, 403, 404, 404, 403)},
    "notebooks/profiles/<slug:slug>/activate/": {"post": (302, 403, 404, 404, 403)},
    "usage/": {"get": (302, 200, 200, 200, 200)},
    "usage/courses/": {"get": (302, 403, 200, 200, 200)},  # assistants see their courses' usage
    "usage/lab/": {"get": (302, 403, 403, 200, 403)},
    "usage/csv/<slug:table>/": {"get": (302, 404, 404, 404, 404)},  # no such table
    # --- help: open to everyone (someone who cannot sign in needs to know whom to ask); an unknown role is 404 -----
    "help/": {"get": (200, 200, 200, 200, 200), "other": PUBLIC},
    "help/<str:role>/": {"get": (404, 404, 404, 404, 404), "other": PUBLIC},
    # --- the operations console: admins only (403 before any node or person is looked up) -----------------------
    "console/": {"get": (302, 403, 403, 200, 403)},
    "console/nodes/": {"get": (302, 403, 403, 200, 403)},
    "console/nodes/<str:name>/cordon/": {"get": (302, 403, 403, 404, 403), "post": (302, 403, 403, 404, 403)},
    "console/nodes/<str:name>/drain/": {"get": (302, 403, 403, 404, 403), "post": (302, 403, 403, 404, 403)},
    "console/nodes/<str:name>/uncordon/": {"get": (302, 403, 403, 404, 403), "post": (302, 403, 403, 404, 403)},
    "console/people/": {"get": (302, 403, 403, 200, 403)},
    "console/people/<str:username>/": {"get": (302, 403, 403, 404, 403)},
    "console/people/<str:username>/role/": {"post": (302, 403, 403, 404, 403)},
    "console/people/<str:username>/quota/": {"post": (302, 403, 403, 404, 403)},
    "console/budgets/": {"get": (302, 403, 403, 200, 403)},
    # The audit trail: all of it for admins (console), a teacher's courses' entries; requests for more.
    "console/audit/": {"get": (302, 403, 403, 200, 403)},
    "courses/audit/": {"get": (302, 403, 200, 200, 403)},
    "requests/": {"get": (302, 200, 200, 200, 200)},
    "requests/new/": {"get": (302, 200, 200, 200, 200), "post": (302, 400, 400, 400, 400)},
    "requests/<int:request_id>/decide/": {"get": (302, 404, 404, 404, 404), "post": (302, 404, 404, 404, 404)},
    "console/announcements/": {"get": (302, 403, 403, 200, 403), "post": (302, 403, 403, 400, 403)},
    # --- the hub's one login (django-oauth-toolkit): a sign-in request without a client is refused ----------------
    # The authorize view renders its own error page (200) for a POST without a client, and takes PUT as POST.
    "o/authorize/": {
        "get": (302, 400, 400, 400, 400),
        "post": (302, 200, 200, 200, 200),
        "put": (302, 200, 200, 200, 200),
    },
    "o/token/": {"post": (400, 400, 400, 400, 400), "other": PUBLIC},
    "o/revoke_token/": {"post": (400, 400, 400, 400, 400), "other": PUBLIC},
    "o/userinfo/": {
        "get": (401, 401, 401, 401, 401),
        "post": (401, 401, 401, 401, 401),
        "other": PUBLIC,
    },  # bearer only
    r"o/^\.well-known/openid-configuration/?$": {"get": (200, 200, 200, 200, 200), "other": PUBLIC},
    "o/.well-known/jwks.json": {"get": (200, 200, 200, 200, 200), "other": PUBLIC},
    "o/.well-known/oauth-authorization-server": {"get": (200, 200, 200, 200, 200), "other": PUBLIC},
    # --- operations: outside DEBUG (as pytest-django runs) and without METRICS_TOKEN, /metrics is closed ----------
    "healthz": {"get": (200, 200, 200, 200, 200), "other": PUBLIC},
    "readyz": {"get": (200, 200, 200, 200, 200), "other": PUBLIC},
    "metrics": {"get": (403, 403, 403, 403, 403), "other": PUBLIC},
    # --- the API (v1) --------------------------------------------------------------------------------------------
    "api/v1/me/": {"get": (401, 200, 200, 200, 200)},
    # Everyone signed in chooses what they are told (an empty PUT changes nothing; a test message to each channel).
    "api/v1/me/notifications/": {"get": (401, 200, 200, 200, 200), "put": (401, 200, 200, 200, 200)},
    "api/v1/me/notifications/test/": {"post": (401, 202, 202, 202, 202)},
    "api/v1/maintenance/": {
        "get": (401, 403, 403, 200, 403),
        "post": (401, 403, 403, 400, 403),
        "other": (401, 403, 403, 405, 403),  # admins only: 403 before the method
    },
    "api/v1/announcements/": {"get": (401, 200, 200, 200, 200)},
    "api/v1/token/": {"post": (400, 400, 400, 400, 400), "other": PUBLIC},  # a password for a token: open to all
    "api/v1/nodes/": {"get": (401, 200, 200, 200, 200)},
    "api/v1/audit/": {"get": (401, 403, 200, 200, 403)},
    "api/v1/requests/": {"get": (401, 200, 200, 200, 200), "post": (401, 400, 400, 400, 400)},
    "api/v1/requests/<int:request_id>/decide/": {"post": (401, 404, 404, 404, 404)},
    "api/v1/courses/<str:code>/roster/": {
        "get": (401, 403, 404, 404, 403),
        "post": (401, 403, 404, 404, 403),
        "other": (401, 405, 405, 405, 405),
    },
    "api/v1/courses/<str:code>/roster/preview/": {"post": (401, 403, 404, 404, 403)},
    "api/v1/courses/<str:code>/materials/": {"get": (401, 404, 404, 404, 404), "post": (401, 403, 404, 404, 403)},
    "api/v1/courses/<str:code>/assignments/": {"get": (401, 404, 404, 404, 404), "post": (401, 403, 404, 404, 403)},
    # GET: the course's staff (403 to students); POST: a student hands in (404: no such assignment of theirs)
    "api/v1/assignments/<int:assignment_id>/submissions/": {
        "get": (401, 403, 404, 404, 404),
        "post": (401, 404, 404, 404, 404),
    },
    "api/v1/assignments/<int:assignment_id>/submissions/<str:username>/archive": {"get": (401, 404, 404, 404, 404)},
    "api/v1/reservations/": {
        "get": (401, 403, 200, 200, 403),
        "post": (401, 403, 400, 400, 403),
        "other": (401, 403, 405, 405, 403),
    },
    "api/v1/reservations/<int:reservation_id>/": {
        "get": (401, 403, 404, 404, 403),
        "delete": (401, 403, 404, 404, 403),
        "other": (401, 403, 405, 405, 403),
    },
    "api/v1/reservations/<int:reservation_id>/approve/": {
        "post": (401, 403, 403, 404, 403),
        "other": (401, 403, 403, 405, 403),
    },
    "api/v1/reservations/<int:reservation_id>/reject/": {
        "post": (401, 403, 403, 404, 403),
        "other": (401, 403, 403, 405, 403),
    },
    "api/v1/availability/": {"get": (401, 400, 400, 400, 400)},  # without a window
    "api/v1/gpus/": {"get": (401, 200, 200, 200, 200)},
    "api/v1/agent/samples/": {
        "post": (401, 401, 401, 401, 401),
        "other": (401, 401, 401, 401, 401),
    },  # node agent keys only
    "api/v1/profiles/": {"get": (401, 200, 200, 200, 200)},
    "api/v1/notebooks/": {"get": (401, 200, 200, 200, 200), "post": (401, 400, 400, 400, 400)},
    "api/v1/notebooks/<int:notebook_id>/": {"get": (401, 404, 404, 404, 404), "delete": (401, 404, 404, 404, 404)},
    "api/v1/notebooks/<int:notebook_id>/extend/": {"post": (401, 404, 404, 404, 404)},
    "api/v1/images/": {"get": (401, 200, 200, 200, 200)},
    "api/v1/courses/<str:code>/job-templates/": {"get": (401, 404, 404, 404, 404), "post": (401, 404, 404, 404, 404)},
    "api/v1/jobs/": {"get": (401, 200, 200, 200, 200), "post": (401, 400, 400, 400, 400)},
    "api/v1/jobs/preview/": {"post": (401, 400, 400, 400, 400)},
    "api/v1/jobs/<int:job_id>/": {"get": (401, 404, 404, 404, 404)},
    "api/v1/jobs/<int:job_id>/cancel/": {"post": (401, 404, 404, 404, 404)},
    "api/v1/jobs/<int:job_id>/logs/": {"get": (401, 404, 404, 404, 404)},
    "api/v1/jobs/<int:job_id>/outputs/": {"get": (401, 404, 404, 404, 404)},
    "api/v1/jobs/<int:job_id>/outputs/<path:path>": {"get": (401, 404, 404, 404, 404)},
    "api/v1/jobs/<int:job_id>/resume/": {"post": (401, 404, 404, 404, 404)},
    # Datasets: everyone lists what they may mount; teachers (their courses) and admins define them.
    "api/v1/datasets/": {"get": (401, 200, 200, 200, 200), "post": (401, 403, 400, 400, 403)},
    # Budgets: everyone reads what they may see; only admins write (403 before any budget is looked up).
    "api/v1/budgets/": {
        "get": (401, 200, 200, 200, 200),
        "post": (401, 403, 403, 400, 403),
        "other": (401, 403, 403, 405, 403),
    },
    "api/v1/budgets/<int:budget_id>/": {
        "get": (401, 404, 404, 404, 404),
        "patch": (401, 403, 403, 404, 403),
        "delete": (401, 403, 403, 404, 403),
        "other": (401, 403, 403, 405, 403),
    },
    "api/v1/usage/": {"get": (401, 200, 200, 200, 200)},
    "api/v1/usage/efficiency/": {"get": (401, 200, 200, 200, 200)},
    "api/v1/schema/": {"get": (401, 200, 200, 200, 200)},
    "api/v1/docs/": {"get": (401, 200, 200, 200, 200)},
    "api/v1/redoc/": {"get": (401, 200, 200, 200, 200)},
    "api/v1/^.*$": {method: (404, 404, 404, 404, 404) for method in METHODS},  # unknown API paths, in JSON
}

# Paths with a query that changes who may do what: (path, expected GET for each role).
VARIANTS = {
    "/api/v1/availability/?starts_at=2030-01-07T14:00&ends_at=2030-01-07T16:00": (401, 200, 200, 200, 200),
    "/api/v1/notebooks/?mine=true": (401, 200, 200, 200, 200),
    "/lab/reservations/?week=2030-01-07": (302, 200, 200, 200, 200),
    "/api/v1/usage/?group_by=planet": (401, 400, 400, 400, 400),
    "/api/v1/usage/?from=2026-03-10&to=2026-03-01": (401, 400, 400, 400, 400),
    "/api/v1/usage/?course=NO-SUCH": (401, 403, 404, 404, 404),
    "/api/v1/usage/?user=no-such": (401, 404, 404, 404, 404),
    "/api/v1/usage/?format=csv": (401, 200, 200, 200, 200),
    "/api/v1/usage/efficiency/?course=NO-SUCH": (401, 403, 404, 404, 404),
    "/usage/csv/my-sessions/": (302, 200, 200, 200, 200),
    "/usage/csv/course-students/": (302, 403, 200, 200, 200),
    "/usage/csv/lab-courses/": (302, 403, 403, 200, 403),
}

JSON_CODES = {400: "invalid", 401: "not_authenticated", 403: "permission_denied", 404: "not_found"}


def routes(resolver=None) -> dict[str, URLPattern]:
    """Every route of the URL configuration but the admin console's, by its pattern."""

    def walk(patterns, prefix=""):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            else:
                yield prefix + str(pattern.pattern), pattern

    found = walk((resolver or get_resolver()).url_patterns)
    return {route: pattern for route, pattern in found if not route.startswith("admin/")}


def missing_rows(resolver=None) -> set[str]:
    return set(routes(resolver)) - set(MATRIX)


def sample_path(route: str) -> str:
    """A path the route matches, naming objects that do not exist."""
    path = re.sub(r"<int:[^>]+>", "999999", route)
    path = re.sub(r"<(?:str|slug|path):[^>]+>", "no-such", path)
    path = path.replace("^.*$", "no-such-thing/").replace("/?$", "").replace("\\.", ".").replace("^", "")
    return "/" + path


def expected(route: str, method: str) -> tuple[int, int, int, int]:
    row = MATRIX[route]
    return row.get(method) or row.get("other") or (API if route.startswith("api/") else PAGE)


def client_for(role: str, *, api: bool):
    if role == "anonymous":
        return APIClient() if api else Client()
    if role == "assistant":  # a student who assists a course
        user = UserFactory(username="assistant-matrix", role="student")
        EnrollmentFactory(user=user, course=CourseFactory(), role="assistant")
    else:
        user = UserFactory(username=f"{role}-matrix", role=role)
    if api:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)}")
        return client
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


def test_every_route_has_a_row():
    assert not missing_rows(), f"add rows to MATRIX in tests/test_role_matrix.py for {sorted(missing_rows())}"
    assert not set(MATRIX) - set(routes()), "rows for routes that no longer exist"


def test_a_new_route_without_a_row_fails_the_matrix(settings):
    """The check is real: a URL configuration with one more route is reported until the route has a row."""
    from django.urls import path

    import portal.urls

    class UrlConf:
        urlpatterns = [*portal.urls.urlpatterns, path("lab/new-thing/", lambda request: None, name="new-thing")]

    from django.urls.resolvers import RegexPattern, URLResolver

    resolver = URLResolver(RegexPattern(r"^/"), UrlConf)
    assert missing_rows(resolver) == {"lab/new-thing/"}


@pytest.mark.django_db
@pytest.mark.parametrize("route", list(MATRIX), ids=[route or "/" for route in MATRIX])
def test_role_matrix(route):
    api = route.startswith("api/")
    path = sample_path(route)
    got, want = {}, {}
    for role_index, role in enumerate(ROLES):
        client = client_for(role, api=api)
        for method in METHODS:
            if api and method != "get":
                response = getattr(client, method)(path, {}, format="json")
            else:
                response = getattr(client, method)(path, {} if method != "get" else None)
            got[(role, method)] = response.status_code
            want[(role, method)] = expected(route, method)[role_index]
            if response.status_code == 302 and role == "anonymous" and route not in ("logout/",):
                assert "/login/" in response["Location"], (method, path)
            if api and response.get("Content-Type") == "application/json" and response.status_code in JSON_CODES:
                body = response.json()
                assert body["code"] in (JSON_CODES[response.status_code], "parse_error", "authentication_failed"), (
                    method,
                    role,
                    body,
                )
                assert body.get("detail"), (method, role, body)
    wrong = {key: (got[key], want[key]) for key in got if got[key] != want[key]}
    assert not wrong, f"{path}: (role, method): (got, expected) {wrong}"


@pytest.mark.django_db
@pytest.mark.parametrize("path,codes", VARIANTS.items(), ids=list(VARIANTS))
def test_role_matrix_variants(path, codes):
    for role_index, role in enumerate(ROLES):
        response = client_for(role, api=path.startswith("/api/")).get(path)
        assert response.status_code == codes[role_index], (role, path)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "model", [model for model in admin.site._registry], ids=[m._meta.label for m in admin.site._registry]
)
def test_admin_console_is_for_admins_only(model):
    """Every model in the admin console: its list and add pages are for admins; others are sent to sign in."""
    opts = model._meta
    for name in ("changelist", "add"):
        path = reverse(f"admin:{opts.app_label}_{opts.model_name}_{name}")
        for role in ROLES:
            response = client_for(role, api=False).get(path)
            if role == "admin":
                assert response.status_code in (200, 403), (path, response.status_code)  # 403: no adding by hand
                if name == "changelist":
                    assert response.status_code == 200, path
            else:
                assert response.status_code == 302 and "/admin/login/" in response["Location"], (role, path)


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["student", "teacher", "admin"])
def test_dashboard_is_the_one_for_the_role(browser_client, role):
    page = browser_client(role).get("/").content.decode()
    marker = {"student": "Here is what you can use this week", "teacher": "Courses you teach", "admin": "Lab overview"}
    assert marker[role] in page
    assert ("Admin console" in page) is (role == "admin")
