"""The API docs (Swagger UI at /api/v1/docs/, Redoc at /api/v1/redoc/) load everything from the portal itself
(drf-spectacular-sidecar's static files): no CDN, no web fonts, so they work without the internet."""

import re

import pytest
from django.contrib.staticfiles import finders

from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db
EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", re.I)


@pytest.fixture
def signed_in(client):
    UserFactory(username="sam", role="student")
    assert client.login(username="sam", password=PASSWORD)
    return client


@pytest.mark.parametrize("path", ["/api/v1/docs/", "/api/v1/docs/?script=", "/api/v1/redoc/"])
def test_the_docs_reference_no_outside_address(signed_in, path):
    response = signed_in.get(path)
    assert response.status_code == 200
    body = response.content.decode()
    assert not EXTERNAL.search(body), EXTERNAL.search(body).group(0)
    for host in ("cdn.jsdelivr.net", "unpkg.com", "fonts.googleapis.com", "fonts.gstatic.com"):
        assert host not in body
    csp = response.get("Content-Security-Policy") or response.get("Content-Security-Policy-Report-Only") or ""
    assert "cdn.jsdelivr.net" not in csp and "fonts.g" not in csp


def test_the_scripts_they_name_are_our_static_files(signed_in):
    page = signed_in.get("/api/v1/docs/").content.decode() + signed_in.get("/api/v1/redoc/").content.decode()
    page += signed_in.get("/api/v1/docs/?script=").content.decode()
    assets = set(re.findall(r"/static/(drf_spectacular_sidecar/[^\"'?\s]+)", page))
    assert any("swagger-ui-bundle.js" in asset for asset in assets), assets
    assert any("redoc.standalone.js" in asset for asset in assets), assets
    for asset in assets:
        assert finders.find(asset), asset
