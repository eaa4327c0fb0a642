"""Course work with a real JupyterHub on loopback (local spawner: real JupyterLab in the sandbox): a teacher
publishes an assignment, the student's notebook finds it in its home, the student edits it through the notebook's
own contents API, the deadline collects the snapshot with the edit, the teacher downloads the archive, and a hand-in
after the deadline is marked late."""

from __future__ import annotations

import datetime as dt
import io
import tarfile
import time
from decimal import Decimal

import pytest
import requests
from django.utils import timezone

from labs.models import NotebookProfile, NotebookSession, NotebookStatus, Submission
from labs.notebooks.localhub import HubFailed, HubNotInstalled, LocalHub
from labs.notebooks.passes import notebooks_pass
from labs.notebooks.services import notebook_request
from tests.factories import CourseFactory, EnrollmentFactory, NodeFactory, UserFactory
from tests.labs.coursework.test_coursework import client_for, make_repo


@pytest.fixture(scope="module")
def local_hub():
    hub = LocalHub(spawner="local", portal_url="http://127.0.0.1:9")
    try:
        hub.start(timeout=90)
    except (HubNotInstalled, HubFailed) as problem:
        hub.close()
        pytest.fail(str(problem), pytrace=False)
    yield hub
    hub.close()


def run_until(condition, *, timeout: float = 90.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        notebooks_pass(upkeep=False)
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError("timed out waiting for the notebook")


def test_material_reaches_a_real_notebook_and_the_deadline_collects_the_students_edit(
    db, local_hub, settings, tmp_path, frozen_now
):
    settings.NOTEBOOKS_HUB_API_URL = local_hub.api_url
    settings.NOTEBOOKS_HUB_PUBLIC_URL = local_hub.public_url
    settings.NOTEBOOKS_HOMES_DIR = str(local_hub.data_dir / "homes")
    settings.COURSEWORK_DIR = tmp_path / "store"
    settings.COURSEWORK_GIT_LOCAL_ROOTS = [str(tmp_path / "repos")]
    course = CourseFactory(code="DL-101")
    teacher = UserFactory(username="grace", role="teacher")
    course.teachers.add(teacher)
    ada, alan = UserFactory(username="ada"), UserFactory(username="alan")
    for person in (ada, alan):
        EnrollmentFactory(user=person, course=course)
    profile = NotebookProfile.objects.create(
        slug="quarter", name="Quarter GPU", image="quay.io/jupyter/base-notebook:latest", gpu_share=Decimal("0.25")
    )
    profile.courses.add(course)
    NodeFactory(name="gpu01")
    repo = make_repo(tmp_path / "repos" / "week1", {"task.py": "# write your answer below\n"})

    start = timezone.now()
    published = client_for(teacher).post(
        "/api/v1/courses/DL-101/assignments/",
        {
            "title": "Week 1",
            "source": "git",
            "git_url": f"file://{repo}",
            "release_at": start.isoformat(),
            "due_at": (start + dt.timedelta(hours=1)).isoformat(),
        },
        format="json",
    )
    assert published.status_code == 201, published.content
    assignment = published.json()["id"]

    # Ada starts a notebook through the portal; her JupyterLab finds the assignment in its home.
    session = notebook_request(user=ada, profile="quarter")
    run_until(lambda: NotebookSession.objects.get(pk=session.pk).status == NotebookStatus.READY)
    session.refresh_from_db()
    admin = requests.Session()
    admin.headers["Authorization"] = f"token {local_hub.admin_token}"
    token = admin.post(f"{local_hub.api_url}/users/u{ada.pk}/tokens", json={"note": "test"}, timeout=10).json()
    contents = requests.Session()
    contents.headers["Authorization"] = f"token {token['token']}"
    base = f"{session.url}api/contents/DL-101/week-1"
    listing = contents.get(base, timeout=30)
    assert listing.status_code == 200, listing.text
    assert [item["name"] for item in listing.json()["content"]] == ["task.py"]
    # She edits it in her notebook (the server writes the file, as her uid).
    answer = "# write your answer below\nprint(42)\n"
    saved = contents.put(f"{base}/task.py", json={"type": "file", "format": "text", "content": answer}, timeout=30)
    assert saved.status_code == 200, saved.text

    # The deadline: the tick collects every student's folder.
    frozen_now(start + dt.timedelta(hours=1, seconds=5))
    from labs.coursework.services import coursework_tick

    assert coursework_tick()["collected"] == 2
    snapshot = Submission.objects.get(user=ada)
    assert snapshot.late is False and snapshot.files == 1

    # The teacher downloads Ada's archive: her edit, with the sha256 recorded.
    download = client_for(teacher).get(f"/api/v1/assignments/{assignment}/submissions/ada/archive")
    assert download.status_code == 200 and download["X-Content-SHA256"] == snapshot.sha256
    with tarfile.open(fileobj=io.BytesIO(b"".join(download.streaming_content))) as tar:
        assert tar.extractfile("task.py").read().decode() == answer

    # Alan hands in after the deadline: marked late, on the teacher's list.
    frozen_now(start + dt.timedelta(hours=2))
    assert client_for(alan).post(f"/api/v1/assignments/{assignment}/submissions/").json()["late"] is True
    rows = client_for(teacher).get(f"/api/v1/assignments/{assignment}/submissions/").json()
    assert {(row["username"], row["late"]) for row in rows} == {("ada", False), ("alan", True)}
