"""Nobody reaches someone else's notebook through the hub: a real JupyterHub (the local spawner: real JupyterLab, which
asks the hub who may use it) signing people in through a live portal, as a browser would (requests following the
redirects: hub -> portal -> hub -> the notebook server).

The hub knows people as u<account id> (accounts.selectors.hub_username), so a name given to someone else —
freed by a rename here; a name differing only in case can no longer be made at all — never brings that person into
the first one's hub account, servers or home."""

from __future__ import annotations

import time
from decimal import Decimal

import pytest
import requests

from labs.models import NotebookProfile, NotebookSession, NotebookStatus
from labs.notebooks.localhub import LocalHub
from labs.notebooks.passes import notebooks_pass
from labs.notebooks.services import notebook_request
from portal.oauth.services import hub_client_sync
from tests.factories import PASSWORD, CourseFactory, EnrollmentFactory, NodeFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def real_hub(live_server, settings):
    """JupyterHub with the local-process spawner (real JupyterLab), logging people in through this portal."""
    hub = LocalHub(spawner="local", portal_url=live_server.url)
    hub.start(timeout=120)
    settings.NOTEBOOKS_HUB_API_URL, settings.NOTEBOOKS_HUB_PUBLIC_URL = hub.api_url, hub.public_url
    hub_client_sync()
    yield hub
    hub.close()


def signed_in(live_server, username: str) -> requests.Session:
    """A browser signed in to the portal with a password."""
    http = requests.Session()
    login = f"{live_server.url}/login/"
    http.get(login, timeout=30)
    form = {"username": username, "password": PASSWORD, "csrfmiddlewaretoken": http.cookies["csrftoken"]}
    answer = http.post(login, data=form, headers={"Referer": login}, allow_redirects=False, timeout=30)
    assert answer.status_code == 302, answer.text[:500]
    return http


def reach(http: requests.Session, hub: LocalHub, server_path: str) -> tuple[int, int]:
    """Open the notebook's page (signing in to the hub through the portal, then to the server through the hub) and
    then its files API, as JupyterLab does: their two statuses."""
    page = http.get(f"{hub.public_url}{server_path}lab", timeout=90)
    files = http.get(f"{hub.public_url}{server_path}api/contents", timeout=30)
    return page.status_code, files.status_code


def test_an_account_given_a_freed_name_cannot_reach_the_first_persons_notebook(live_server, real_hub):
    course = CourseFactory(code="DL-101")
    profile = NotebookProfile.objects.create(
        slug="quarter", name="Quarter GPU", image="quay.io/jupyter/base-notebook:latest", gpu_share=Decimal("0.25")
    )
    profile.courses.add(course)
    NodeFactory(name="gpu01")
    ada = UserFactory(username="ada")
    EnrollmentFactory(user=ada, course=course)
    session = notebook_request(user=ada, profile="quarter")
    deadline = time.monotonic() + 120
    while NotebookSession.objects.get(pk=session.pk).status != NotebookStatus.READY:
        assert time.monotonic() < deadline, f"the notebook did not start\n{real_hub.log_tail()}"
        notebooks_pass()
        time.sleep(0.5)
    session.refresh_from_db()
    server_path = session.url.removeprefix(real_hub.public_url)
    assert server_path == f"/user/u{ada.pk}/{session.server_name}/"
    assert (real_hub.data_dir / "homes" / f"u{ada.pk}").is_dir()  # her home, by her account's id

    # She reaches it (the way in works), and still does after an admin renames her: her hub user did not change.
    assert reach(signed_in(live_server, "ada"), real_hub, server_path) == (200, 200)
    ada.username = "ada-old"
    ada.save()
    assert reach(signed_in(live_server, "ada-old"), real_hub, server_path) == (200, 200)

    # Someone else is given "ada": signed in to the hub through the portal, they are another hub user.
    newcomer = UserFactory(username="ada")
    intruder = signed_in(live_server, "ada")
    page, files = reach(intruder, real_hub, server_path)
    assert page == 403 and files == 403, (page, files)
    users = requests.get(
        f"{real_hub.api_url}/users", headers={"Authorization": f"token {real_hub.token}"}, timeout=10
    ).json()
    assert sorted(user["name"] for user in users) == sorted([f"u{ada.pk}", f"u{newcomer.pk}"])
