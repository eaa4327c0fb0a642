"""Course material and assignments through the API and the pages, with the local spawner's homes (a folder per hub
user on disk): publish from a local git repository and from a zip, the student finds it in their home, their edits
survive a second hand-out, the deadline collects an immutable snapshot, a late hand-in is marked, extensions, and
who may do what (every role)."""

from __future__ import annotations

import datetime as dt
import io
import os
import stat
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.selectors import hub_username
from accounts.services import token_issue
from labs.coursework.services import coursework_tick, extension_grant, handouts_deliver_to
from labs.models import Handout, Submission
from tests.factories import PASSWORD, CourseFactory, EnrollmentFactory, UserFactory


def client_for(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)}")
    return client


def make_repo(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    for command in (
        ["git", "init", "-q", "-b", "main"],
        ["git", "add", "."],
        ["git", "-c", "user.name=T", "-c", "user.email=t@example.edu", "commit", "-q", "-m", "week 1"],
    ):
        subprocess.run(command, cwd=path, env=env, check=True)  # noqa: S603
    return path


def zip_of(members: dict[str, bytes], links: dict[str, str] | None = None) -> io.BytesIO:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, target)
    buffer.seek(0)
    buffer.name = "folder.zip"
    return buffer


@pytest.fixture
def lab(db, tmp_path, settings):
    settings.NOTEBOOKS_HOMES_DIR = str(tmp_path / "homes")
    settings.COURSEWORK_DIR = tmp_path / "store"
    settings.COURSEWORK_GIT_LOCAL_ROOTS = [str(tmp_path / "repos")]
    course = CourseFactory(code="DL-101")
    teacher = UserFactory(username="grace", role="teacher")
    course.teachers.add(teacher)
    ada = UserFactory(username="ada")
    EnrollmentFactory(user=ada, course=course)
    alan = UserFactory(username="alan")
    EnrollmentFactory(user=alan, course=course)
    tina = UserFactory(username="tina")
    EnrollmentFactory(user=tina, course=course, role="assistant")
    repo = make_repo(tmp_path / "repos" / "week1", {"intro.ipynb": '{"cells": []}', "data/readme.txt": "hello"})

    class Lab:
        pass

    lab = Lab()
    lab.__dict__.update(course=course, teacher=teacher, ada=ada, alan=alan, tina=tina, repo=repo, tmp=tmp_path)
    lab.home = lambda user: tmp_path / "homes" / hub_username(user)
    return lab


def publish(lab, kind="assignments", **body):
    now = timezone.now()
    data = {
        "title": "Week 1",
        "source": "git",
        "git_url": str(lab.repo),
        "release_at": (now - dt.timedelta(minutes=1)).isoformat(),
        **({"due_at": (now + dt.timedelta(hours=1)).isoformat()} if kind == "assignments" else {}),
        **body,
    }
    return client_for(lab.teacher).post(f"/api/v1/courses/DL-101/{kind}/", data, format="json")


def test_material_from_git_lands_in_every_students_home_and_keeps_their_edits(lab):
    answer = publish(lab, kind="materials", git_url=f"file://{lab.repo}")
    assert answer.status_code == 201, answer.json()
    body = answer.json()
    assert body["kind"] == "material" and body["folder"] == "DL-101/week-1" and body["released"] is True
    assert body["files"] == 2 and body["due_at"] is None
    intro = lab.home(lab.ada) / "DL-101" / "week-1" / "intro.ipynb"
    assert intro.read_text() == '{"cells": []}'
    assert (lab.home(lab.alan) / "DL-101" / "week-1" / "data" / "readme.txt").read_text() == "hello"
    assert not (lab.home(lab.tina) / "DL-101").exists()  # assistants are not handed material to do
    # Ada edits; a second hand-out (her next notebook start) keeps her edit and restores what she deleted.
    intro.write_text("my work")
    (lab.home(lab.ada) / "DL-101" / "week-1" / "data" / "readme.txt").unlink()
    assert handouts_deliver_to(user=lab.ada) == 1
    assert intro.read_text() == "my work"
    assert (lab.home(lab.ada) / "DL-101" / "week-1" / "data" / "readme.txt").read_text() == "hello"
    # Everyone in the course sees it listed; the git source's nbgitpuller link is only for reachable repositories.
    for user in (lab.ada, lab.tina, lab.teacher):
        listed = client_for(user).get("/api/v1/courses/DL-101/materials/").json()
        assert [m["title"] for m in listed] == ["Week 1"]
        assert listed[0]["nbgitpuller_url"] is None


def test_an_unreleased_assignment_is_hidden_from_students_until_the_tick_releases_it(lab, frozen_now):
    now = timezone.now()
    answer = publish(
        lab, release_at=(now + dt.timedelta(hours=1)).isoformat(), due_at=(now + dt.timedelta(hours=3)).isoformat()
    )
    assert answer.status_code == 201 and answer.json()["released"] is False
    assert client_for(lab.ada).get("/api/v1/courses/DL-101/assignments/").json() == []
    assert len(client_for(lab.teacher).get("/api/v1/courses/DL-101/assignments/").json()) == 1
    assert not lab.home(lab.ada).exists()
    frozen_now(now + dt.timedelta(hours=1, minutes=1))
    assert coursework_tick() == {"released": 1, "collected": 0}
    assert (lab.home(lab.ada) / "DL-101" / "week-1" / "intro.ipynb").exists()
    assert [a["title"] for a in client_for(lab.ada).get("/api/v1/courses/DL-101/assignments/").json()] == ["Week 1"]


def test_the_deadline_collects_snapshots_and_a_hand_in_after_it_is_late(lab, frozen_now):
    start = timezone.now()
    assignment = publish(lab).json()
    folder = lab.home(lab.ada) / "DL-101" / "week-1"
    (folder / "answer.py").write_text("print(42)\n")
    os.symlink("/etc/passwd", folder / "sneaky")  # never followed, never collected
    frozen_now(start + dt.timedelta(hours=1, seconds=1))
    assert coursework_tick()["collected"] == 2  # ada and alan; not the assistant
    assert coursework_tick()["collected"] == 0  # once
    snap = Submission.objects.get(user=lab.ada)
    assert (snap.late, snap.trigger, snap.files) == (False, "deadline", 3)
    assert "sneaky" in snap.skipped
    stored = Path(lab.tmp / "store" / snap.path)
    assert stat.S_IMODE(stored.stat().st_mode) == 0o444
    with tarfile.open(stored) as tar:
        assert sorted(tar.getnames()) == ["answer.py", "data/readme.txt", "intro.ipynb"]
    # Edits after the deadline do not touch the snapshot.
    (folder / "answer.py").write_text("print(43)\n")
    with tarfile.open(stored) as tar:
        assert tar.extractfile("answer.py").read() == b"print(42)\n"
    # Alan hands in late.
    frozen_now(start + dt.timedelta(hours=2))
    late = client_for(lab.alan).post(f"/api/v1/assignments/{assignment['id']}/submissions/")
    assert late.status_code == 201 and late.json()["late"] is True
    rows = {
        r["username"]: r
        for r in client_for(lab.teacher).get(f"/api/v1/assignments/{assignment['id']}/submissions/").json()
    }
    assert rows["alan"]["late"] is True and rows["alan"]["trigger"] == "hand_in" and rows["alan"]["snapshots"] == 2
    assert rows["ada"]["late"] is False and rows["ada"]["sha256"] == snap.sha256
    assert set(rows) == {"ada", "alan"}
    # The teacher (and the assistant) download one archive; its sha256 is the one recorded.
    archive = client_for(lab.tina).get(rows["ada"]["archive_url"])
    assert archive.status_code == 200 and archive["X-Content-SHA256"] == snap.sha256
    with tarfile.open(fileobj=io.BytesIO(b"".join(archive.streaming_content))) as tar:
        assert tar.extractfile("answer.py").read() == b"print(42)\n"
    # A student reads their own, not another's (404 as for one that does not exist).
    assert client_for(lab.ada).get(f"/api/v1/assignments/{assignment['id']}/submissions/ada/archive").status_code == 200
    assert (
        client_for(lab.ada).get(f"/api/v1/assignments/{assignment['id']}/submissions/alan/archive").status_code == 404
    )


def test_an_extension_moves_one_students_collection(lab, frozen_now):
    start = timezone.now()
    handout = Handout.objects.get(pk=publish(lab).json()["id"])
    extension_grant(user=lab.teacher, handout=handout, student=lab.alan, due_at=start + dt.timedelta(hours=3))
    frozen_now(start + dt.timedelta(hours=1, seconds=1))
    assert coursework_tick()["collected"] == 1
    assert list(Submission.objects.values_list("user__username", flat=True)) == ["ada"]
    # Before his own deadline a hand-in is on time.
    frozen_now(start + dt.timedelta(hours=2))
    assert client_for(lab.alan).post(f"/api/v1/assignments/{handout.pk}/submissions/").json()["late"] is False
    frozen_now(start + dt.timedelta(hours=3, seconds=1))
    assert coursework_tick()["collected"] == 1
    assert Submission.objects.filter(user=lab.alan, trigger="deadline").count() == 1


@pytest.mark.parametrize(
    ("members", "links", "sentence"),
    [
        ({"../evil.py": b"x"}, None, "unsafe path"),
        ({"/etc/cron.d/evil": b"x"}, None, "unsafe path"),
        ({"ok.txt": b"x"}, {"link": "/etc/passwd"}, "link or special file"),
        ({"big.bin": b"\0" * (2 * 1024 * 1024)}, None, "more than 1 MB"),
    ],
)
def test_an_unsafe_course_folder_is_a_400_sentence_and_leaves_nothing(lab, settings, members, links, sentence):
    settings.COURSEWORK_UPLOAD_MAX_MB = 1
    answer = client_for(lab.teacher).post(
        "/api/v1/courses/DL-101/materials/",
        {
            "title": "Folder",
            "source": "folder",
            "release_at": timezone.now().isoformat(),
            "archive": zip_of(members, links),
        },
        format="multipart",
    )
    assert answer.status_code == 400, answer.content
    assert sentence in answer.json()["detail"]
    assert not Handout.objects.exists()
    assert list((lab.tmp / "store" / "staging").iterdir()) == []
    assert not (lab.tmp / "homes").exists()


def test_a_course_folder_upload_is_handed_out(lab):
    answer = client_for(lab.teacher).post(
        "/api/v1/courses/DL-101/materials/",
        {
            "title": "Slides",
            "source": "folder",
            "release_at": timezone.now().isoformat(),
            "archive": zip_of({"slides/week1.md": b"# Week 1", "notes.txt": b"n"}),
        },
        format="multipart",
    )
    assert answer.status_code == 201, answer.content
    assert (lab.home(lab.ada) / "DL-101" / "slides" / "slides" / "week1.md").read_text() == "# Week 1"


@pytest.mark.parametrize(
    ("git_url", "sentence"),
    [
        ("/work/main", "portal's own disk"),
        ("file:///etc", "portal's own disk"),
        ("ext::sh%20-c%20touch", "Only https://"),
        ("--upload-pack=touch /tmp/pwned", "Give the repository"),
        ("https://", "no host"),
    ],
)
def test_a_repository_the_lab_may_not_use_is_a_400(lab, git_url, sentence):
    answer = publish(lab, kind="materials", git_url=git_url)
    assert answer.status_code == 400
    assert sentence in answer.json()["detail"] and "git_url" in answer.json()["fields"]


def test_bad_times_and_titles_are_400s(lab):
    now = timezone.now()
    assert publish(lab, due_at=(now - dt.timedelta(hours=1)).isoformat()).json()["fields"] == {
        "due_at": ["The deadline must come after the release."]
    }
    assert "due_at" in publish(lab, due_at=None).json()["fields"]
    assert publish(lab, title="!!!").status_code == 400
    assert publish(lab).status_code == 201
    assert "already has" in publish(lab).json()["detail"]


def test_who_may_publish_list_and_read_submissions(lab):
    handout = publish(lab).json()
    outsider, other_teacher = UserFactory(username="bob"), UserFactory(username="linus", role="teacher")
    admin = UserFactory(username="root-x", role="admin")
    url = "/api/v1/courses/DL-101/assignments/"
    body = {"title": "W2", "source": "git", "git_url": str(lab.repo), "release_at": timezone.now().isoformat()}
    assert APIClient().get(url).status_code == 401
    assert client_for(lab.ada).post(url, body, format="json").status_code == 403
    assert client_for(lab.tina).post(url, body, format="json").status_code == 403
    assert client_for(other_teacher).post(url, body, format="json").status_code == 404
    assert client_for(outsider).get(url).status_code == 404
    assert client_for(other_teacher).get(url).status_code == 404
    assert client_for(admin).get(url).status_code == 200
    subs = f"/api/v1/assignments/{handout['id']}/submissions/"
    assert client_for(lab.ada).get(subs).status_code == 403
    assert client_for(lab.tina).get(subs).status_code == 200
    assert client_for(other_teacher).get(subs).status_code == 404
    assert client_for(admin).get(subs).status_code == 200
    assert client_for(outsider).post(subs).status_code == 404  # hand in to a course not theirs
    assert client_for(lab.teacher).post(subs).status_code == 404  # teachers hand nothing in


def test_the_teachers_pages_list_open_download_and_export(lab, frozen_now):
    start = timezone.now()
    handout = publish(lab).json()
    (lab.home(lab.ada) / "DL-101" / "week-1" / "answer.py").write_text("print('<b>42</b>')\n")
    frozen_now(start + dt.timedelta(hours=1, seconds=1))
    coursework_tick()
    frozen_now(start + dt.timedelta(hours=2))
    page = Client()
    assert page.login(username="alan", password=PASSWORD)
    assert page.post(f"/assignments/{handout['id']}/hand-in/").status_code == 302
    assert "late" in page.get("/courses/DL-101/coursework/").content.decode()
    assert page.get(f"/assignments/{handout['id']}/submissions/").status_code == 403
    teacher = Client()
    assert teacher.login(username="grace", password=PASSWORD)
    listing = teacher.get(f"/assignments/{handout['id']}/submissions/").content.decode()
    assert 'data-username="ada"' in listing and 'data-testid="late"' in listing
    snapshot = teacher.get(f"/assignments/{handout['id']}/submissions/ada/?file=answer.py").content.decode()
    assert "answer.py" in snapshot and "&lt;b&gt;42&lt;/b&gt;" in snapshot
    assert teacher.get(f"/assignments/{handout['id']}/submissions/ada/?file=nope").status_code == 404
    csv_text = teacher.get(f"/assignments/{handout['id']}/submissions.csv").content.decode()
    assert csv_text.splitlines()[0].startswith("username,handed_in,taken_at,late")
    assert any(line.startswith("alan,yes,") and ",yes,hand_in," in line for line in csv_text.splitlines())
    everything = teacher.get(f"/assignments/{handout['id']}/submissions.zip")
    with zipfile.ZipFile(io.BytesIO(b"".join(everything.streaming_content))) as archive:
        assert sorted(archive.namelist()) == ["SHA256SUMS", "ada.tar.gz", "alan.tar.gz"]
    # Publishing from the page, and an extension.
    form = teacher.post(
        "/courses/DL-101/coursework/",
        {"kind": "material", "title": "Slides", "source": "folder", "release_at": "2026-01-01 10:00",
         "archive": zip_of({"a.md": b"a"})},
    )  # fmt: skip
    assert form.status_code == 302 and Handout.objects.filter(title="Slides").exists()
    bad_form = {"kind": "material", "title": "X", "source": "folder", "release_at": "2026-01-01 10:00"}
    bad = teacher.post("/courses/DL-101/coursework/", {**bad_form, "archive": zip_of({"../x": b""})})
    assert bad.status_code == 400 and "unsafe path" in bad.content.decode()
    granted = teacher.post(
        f"/assignments/{handout['id']}/extensions/", {"username": "ada", "due_at": "2099-01-01 10:00"}
    )
    assert granted.status_code == 302
    assert Handout.objects.get(pk=handout["id"]).extensions.get().user == lab.ada
    assistant = Client()
    assert assistant.login(username="tina", password=PASSWORD)
    assert assistant.post(f"/assignments/{handout['id']}/extensions/", {"username": "ada"}).status_code == 403
    assert assistant.post("/courses/DL-101/coursework/", {}).status_code == 403
