"""The Django admin groups the system's internals apart from the lab's objects, and points to the console."""

import pytest

from portal.web.admin_site import is_internal
from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db


def sections(page: str) -> dict[str, str]:
    """The admin index's app sections by their caption's text: {caption: the section's HTML}."""
    found = {}
    for chunk in page.split('<div class="app-')[1:]:
        caption = chunk.split("<caption>", 1)[1].split("</caption>", 1)[0]
        name = caption.split(">", 1)[1].split("<", 1)[0].strip()
        found[name] = chunk
    return found


def test_the_internals_are_one_section_at_the_end_and_the_lab_comes_first(client):
    UserFactory(username="ada", role="admin")
    assert client.login(username="ada", password=PASSWORD)
    page = client.get("/admin/").content.decode()
    found = sections(page)
    names = list(found)
    assert names[-1] == "System internals", names
    internals = found["System internals"]
    for model in ("Access attempts", "Applications", "Access tokens", "Groups", "Node agent tokens"):
        assert model in internals, model
    assert "Access attempts" not in "".join(found[name] for name in names[:-1])
    assert "Nodes" in found["The lab"] and "Node agent tokens" not in found["The lab"]
    assert "Users" in found["People and quotas"]
    assert 'href="/console/"' in page and "operations console" in page


def test_which_models_are_internal():
    assert is_internal("axes", "AccessAttempt") and is_internal("oauth2_provider", "Application")
    assert is_internal("labs", "NodeAgentToken") and not is_internal("labs", "Node")
    assert not is_internal("accounts", "User")
