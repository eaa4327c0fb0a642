"""The notebook pages for every role: start, follow, stop and extend my notebooks; my courses' notebooks; profiles.

No hub runs here: a press of Start writes a queued row, and the pass that talks to the hub is kicked on commit,
which these tests leave unexecuted (but one, where the hub is not answering).
"""

import datetime as dt
import math
from decimal import Decimal

import pytest
from django.utils import timezone

from accounts.errors import InvalidInput
from accounts.models import Notice
from labs.ledger import week_start
from labs.models import NotebookProfile, NotebookSession, NotebookStatus
from labs.notebooks.passes import HUB_DOWN, notebooks_pass
from labs.notebooks.profiles import profile_save
from tests.factories import PASSWORD, AllocationFactory, CourseFactory, EnrollmentFactory, NodeFactory, UserFactory

pytestmark = pytest.mark.django_db

IMAGE = "quay.io/jupyter/pytorch-notebook:cuda12-latest"


def signed_in(client, username, role):
    user = UserFactory(username=username, role=role)
    assert client.login(username=username, password=PASSWORD)
    return user


def make_profile(
    slug="pytorch-quarter", *, name="PyTorch, a quarter", share="0.25", roles=("student", "teacher"), **kw
):
    return NotebookProfile.objects.create(
        slug=slug, name=name, image=IMAGE, gpu_share=Decimal(share), roles=list(roles), **kw
    )


def make_session(user, profile, status=NotebookStatus.QUEUED, **kw):
    now = timezone.now()
    fields = {"hub_user": f"u{user.pk}", "reason": "Waiting for a GPU.", "requested_at": now}
    if status == NotebookStatus.READY:
        fields.update(
            node="gpu07",
            gpu_index=0,
            url=f"http://127.0.0.1:8001/user/u{user.pk}/nb/",
            reason="",
            ready_at=now,
            ends_at=now + dt.timedelta(hours=2),
        )
    elif status == NotebookStatus.STARTING:
        fields.update(node="gpu07", gpu_index=0, reason="Starting on gpu07.", starting_at=now)
    fields.update(kw)
    return NotebookSession.objects.create(user=user, profile=profile, status=status, **fields)


@pytest.fixture
def course_setup():
    """DL-101 taught by ada, with students bo and cy; CV-201 taught by eve, with student dan."""
    ada = UserFactory(username="ada", role="teacher")
    eve = UserFactory(username="eve", role="teacher")
    dl, cv = CourseFactory(code="DL-101"), CourseFactory(code="CV-201")
    dl.teachers.add(ada)
    cv.teachers.add(eve)
    bo, cy, dan = (UserFactory(username=name, role="student") for name in ("bo", "cy", "dan"))
    EnrollmentFactory(user=bo, course=dl)
    EnrollmentFactory(user=cy, course=dl)
    EnrollmentFactory(user=dan, course=cv)
    return {"ada": ada, "eve": eve, "dl": dl, "cv": cv, "bo": bo, "cy": cy, "dan": dan}


# --- My notebooks ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/notebooks/",
        "/notebooks/1/stop/",
        "/notebooks/course/",
        "/notebooks/course/DL-101/stop/",
        "/notebooks/profiles/",
        "/notebooks/profiles/new/",
        "/notebooks/profiles/x/edit/",
        "/notebooks/profiles/x/deactivate/",
    ],
)
def test_anonymous_is_sent_to_sign_in(client, path):
    response = client.get(path)
    assert response.status_code == 302 and response["Location"].startswith("/login/")


@pytest.mark.parametrize("role", ["student", "teacher", "admin"])
def test_empty_states_and_the_nav(browser_client, role):
    page = browser_client(role).get("/notebooks/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'href="/notebooks/"' in html and 'aria-current="page">Notebooks' in html
    assert "No notebook profile is offered to you yet — ask your course's teacher" in html
    assert "Pick a profile and press Start." in html
    assert ("My courses&#x27; notebooks" in html or "My courses' notebooks" in html) is (role != "student")


@pytest.mark.parametrize("role", ["student", "teacher", "admin"])
def test_profiles_offered_are_radio_cards(browser_client, role):
    make_profile()
    make_profile("whole", name="Whole GPU", share="1", roles=["student", "teacher"])
    make_profile("staff-only", name="Staff only", roles=["teacher"])
    html = browser_client(role).get("/notebooks/").content.decode()
    assert 'value="pytorch-quarter"' in html and "¼ of an RTX 4090" in html
    assert "2 CPU cores · 8 GB memory · 6 GB GPU memory · sessions up to 4\u00a0h" in html
    if role == "student":
        # Offered, but more than a student's share: named, not startable.
        assert 'value="whole"' not in html and "1 more profile needs more than your quota of ¼ of an RTX 4090" in html
        assert "Staff only" not in html
    else:
        assert 'value="whole"' in html and "a whole RTX 4090" in html and 'value="staff-only"' in html


@pytest.mark.parametrize("role", ["student", "teacher", "admin"])
def test_start_queues_a_notebook_and_the_list_shows_its_place(browser_client, role):
    make_profile()
    client = browser_client(role)
    response = client.post("/notebooks/", {"profile": "pytorch-quarter"})
    assert response.status_code == 302 and response["Location"] == "/notebooks/"
    session = NotebookSession.objects.get()
    assert session.status == NotebookStatus.QUEUED and session.user.username == f"{role}-x"
    html = client.get("/notebooks/").content.decode()
    assert "“PyTorch, a quarter” is in the queue. Waiting for a GPU." in html
    assert "Position 1 in the queue" in html and f'data-notebook-id="{session.pk}"' in html
    assert f'href="/notebooks/{session.pk}/stop/"' in html and 'data-live="1"' in html


def test_start_with_the_hub_not_answering_keeps_the_place_in_the_queue(
    browser_client, settings, django_capture_on_commit_callbacks
):
    settings.NOTEBOOKS_HUB_API_URL = "http://127.0.0.1:9/hub/api"  # nothing listens: fails fast
    settings.NOTEBOOKS_HUB_TIMEOUT_S = 1
    NodeFactory(name="gpu01")
    make_profile()
    client = browser_client("student")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/notebooks/", {"profile": "pytorch-quarter"})
    assert response.status_code == 302
    assert NotebookSession.objects.get().status == NotebookStatus.QUEUED
    notebooks_pass()  # the periodic pass (in-process setups do not run one per press of Start)
    session = NotebookSession.objects.get()
    assert session.status == NotebookStatus.QUEUED and session.reason == HUB_DOWN
    html = client.get("/notebooks/").content.decode()
    assert "is not answering right now" in html and "Position 1 in the queue" in html


@pytest.mark.parametrize("slug", ["nope", "staff-only", ""])
def test_unknown_or_forbidden_profile_is_400_with_the_sentence(browser_client, slug):
    make_profile()
    make_profile("staff-only", name="Staff only", roles=["teacher"])
    response = browser_client("student").post("/notebooks/", {"profile": slug})
    assert response.status_code == 400
    html = response.content.decode()
    assert (f"There is no profile “{slug}” for you." if slug else "Choose a profile.") in html
    assert not NotebookSession.objects.exists()


def test_a_second_notebook_over_the_quota_is_403_and_says_the_limit(browser_client):
    make_profile()
    client = browser_client("student")
    assert client.post("/notebooks/", {"profile": "pytorch-quarter"}).status_code == 302
    response = client.post("/notebooks/", {"profile": "pytorch-quarter"})
    assert response.status_code == 403
    assert "You may run 1 notebook at a time and have 1. Stop one first." in response.content.decode()
    assert NotebookSession.objects.count() == 1


def test_a_profile_over_the_gpu_share_quota_is_403(browser_client):
    make_profile("whole", name="Whole GPU", share="1")
    response = browser_client("student").post("/notebooks/", {"profile": "whole"})
    assert response.status_code == 403
    assert "“Whole GPU” takes 1" in response.content.decode() and "your quota allows 0.25" in response.content.decode()
    assert not NotebookSession.objects.exists()


@pytest.mark.parametrize(
    ("local_now", "ends"),
    [("2026-03-30 10:00", "ends at 12:00"), ("2026-03-30 23:30", "ends at Tue 01:30")],
    ids=["ends-today", "ends-after-midnight"],
)
def test_starting_and_ready_and_ended_sessions_read_as_they_are(client, frozen_now, local_now, ends):
    frozen_now(local_now)  # a Monday in the lab's zone; the two-hour session ends today, or tomorrow
    student = signed_in(client, "bo", "student")
    profile = make_profile()
    UserFactory(username="other")  # nothing of theirs shows
    ready = make_session(student, profile, NotebookStatus.READY)
    starting = make_session(student, profile, NotebookStatus.STARTING)
    make_session(
        student,
        profile,
        NotebookStatus.FAILED,
        reason="Your notebook could not start: it broke.",
        stopped_at=timezone.now(),
    )
    html = client.get("/notebooks/").content.decode()
    assert "Open JupyterLab" in html and f'href="{ready.url}" target="_blank" rel="noopener"' in html
    assert ends in html
    assert f'action="/notebooks/{ready.pk}/extend/"' in html and "Keep running / Extend" in html
    assert "Starting on gpu07…" in html and "<progress" in html and f'data-notebook-id="{starting.pk}"' in html
    assert "Your notebook could not start: it broke." in html and ">Ended</h3>" in html
    assert html.index(f'data-notebook-id="{starting.pk}"') < html.index("could not start")  # live ones first


def test_extend_a_ready_notebook(client):
    student = signed_in(client, "bo", "student")
    session = make_session(student, make_profile(), NotebookStatus.READY)
    before = session.ends_at
    assert client.get(f"/notebooks/{session.pk}/extend/").status_code == 405
    response = client.post(f"/notebooks/{session.pk}/extend/")
    assert response.status_code == 302 and response["Location"] == "/notebooks/"
    session.refresh_from_db()
    assert session.ends_at > before and session.extensions == 1 and session.kept_at is not None
    assert "keeps running until" in client.get("/notebooks/").content.decode()


def test_extend_a_queued_notebook_is_409_with_the_sentence(client):
    student = signed_in(client, "bo", "student")
    session = make_session(student, make_profile())
    response = client.post(f"/notebooks/{session.pk}/extend/")
    assert response.status_code == 409 and "Only a running notebook can be extended." in response.content.decode()


def test_extend_someone_elses_is_404(client, course_setup):
    session = make_session(course_setup["dan"], make_profile(), NotebookStatus.READY)
    signed_in(client, "zed", "student")
    assert client.post(f"/notebooks/{session.pk}/extend/").status_code == 404


def test_meter_is_amber_at_80_percent(client):
    student = signed_in(client, "bo", "student")
    html = client.get("/notebooks/").content.decode()
    assert 'data-level="ok"' in html and "0.0 / 20" in html
    now = timezone.now()
    elapsed_h = (now - week_start(now)).total_seconds() / 3600
    if elapsed_h < 0.05:
        pytest.skip("the week began a moment ago")
    # 17 of the student's 20 GPU-hours this week, in as many parallel entries as the week's age needs.
    count = math.ceil(17 / min(elapsed_h, 17))
    gpu = NodeFactory().gpus.first()
    for _ in range(count):
        AllocationFactory(user=student, gpu=gpu, share=1, starts_at=now - dt.timedelta(hours=17 / count), ends_at=now)
    html = client.get("/notebooks/").content.decode()
    assert 'class="meter meter-warn"' in html and 'data-level="warn"' in html and "17.0 / 20" in html
    assert "You have used 85 % of your weekly GPU-hours." in html


# --- Stop ---------------------------------------------------------------------------------------


def test_stop_a_queued_notebook_after_confirming(client):
    student = signed_in(client, "bo", "student")
    session = make_session(student, make_profile())
    page = client.get(f"/notebooks/{session.pk}/stop/")
    assert page.status_code == 200 and "Leave the queue?" in page.content.decode()
    assert client.post(f"/notebooks/{session.pk}/stop/").status_code == 400  # not confirmed
    session.refresh_from_db()
    assert session.status == NotebookStatus.QUEUED
    response = client.post(f"/notebooks/{session.pk}/stop/", {"confirm": "yes"})
    assert response.status_code == 302 and response["Location"] == "/notebooks/"
    session.refresh_from_db()
    assert session.status == NotebookStatus.STOPPED and session.reason == "Taken out of the queue before it started."
    html = client.get("/notebooks/").content.decode()
    assert "Taken out of the queue before it started." in html and 'data-live="0"' in html
    # A second press changes nothing and says it is over.
    assert "It is already over" in client.get(f"/notebooks/{session.pk}/stop/").content.decode()


def test_teacher_stops_their_students_running_notebook(client, course_setup):
    session = make_session(course_setup["bo"], make_profile(), NotebookStatus.READY, course=course_setup["dl"])
    assert client.login(username="ada", password=PASSWORD)
    page = client.get(f"/notebooks/{session.pk}/stop/")
    assert page.status_code == 200 and "Stop this notebook?" in page.content.decode() and "bo" in page.content.decode()
    response = client.post(f"/notebooks/{session.pk}/stop/", {"confirm": "yes"})
    assert response.status_code == 302 and response["Location"] == "/notebooks/course/"
    session.refresh_from_db()
    assert session.status == NotebookStatus.STOPPING and session.reason == "Stopped by ada."
    assert Notice.objects.filter(user=course_setup["bo"], text__contains="was stopped by ada").exists()


@pytest.mark.parametrize("who,role", [("eve", None), ("dan", None), ("zed", "student"), ("tom", "teacher")])
def test_others_get_404_on_stop(client, course_setup, who, role):
    session = make_session(course_setup["bo"], make_profile(), course=course_setup["dl"])
    if role:
        signed_in(client, who, role)
    else:
        assert client.login(username=who, password=PASSWORD)
    assert client.get(f"/notebooks/{session.pk}/stop/").status_code == 404
    assert client.post(f"/notebooks/{session.pk}/stop/", {"confirm": "yes"}).status_code == 404
    session.refresh_from_db()
    assert session.status == NotebookStatus.QUEUED


def test_admin_stops_anyones(browser_client, course_setup):
    session = make_session(course_setup["dan"], make_profile(), NotebookStatus.STARTING)
    client = browser_client("admin")
    assert client.post(f"/notebooks/{session.pk}/stop/", {"confirm": "yes"}).status_code == 302
    session.refresh_from_db()
    assert session.status == NotebookStatus.STOPPING


# --- My courses' notebooks ------------------------------------------------------------------------


def test_course_page_for_a_teacher(client, course_setup):
    profile = make_profile()
    dl = course_setup["dl"]
    mine = make_session(course_setup["bo"], profile, NotebookStatus.READY, last_activity_at=timezone.now(), course=dl)
    personal = make_session(course_setup["bo"], profile, NotebookStatus.READY)  # booked to no course: bo's own
    other = make_session(course_setup["dan"], profile, course=course_setup["cv"])
    assert client.login(username="ada", password=PASSWORD)
    page = client.get("/notebooks/course/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-course="DL-101"' in html and 'data-course="CV-201"' not in html
    assert f'data-notebook-id="{mine.pk}"' in html and f'data-notebook-id="{other.pk}"' not in html
    assert f'data-notebook-id="{personal.pk}"' not in html
    assert "gpu07" in html and "cy" in html and "No live notebook" in html
    assert 'href="/notebooks/course/DL-101/stop/"' in html and f'href="/notebooks/{mine.pk}/stop/"' in html


def test_course_page_for_an_admin_shows_every_course(browser_client, course_setup):
    html = browser_client("admin").get("/notebooks/course/").content.decode()
    assert 'data-course="DL-101"' in html and 'data-course="CV-201"' in html
    assert "Nobody in DL-101 runs a notebook now." in html


def test_course_pages_are_not_for_students(client, course_setup):
    assert client.login(username="bo", password=PASSWORD)
    for path in ("/notebooks/course/", "/notebooks/course/DL-101/stop/"):
        response = client.get(path)
        assert (
            response.status_code == 403 and "for teachers, teaching assistants and admins" in response.content.decode()
        )


def test_a_teacher_without_courses_sees_the_empty_state(browser_client):
    html = browser_client("teacher").get("/notebooks/course/").content.decode()
    assert "You teach or assist no course yet" in html


def test_stop_all_in_a_course(client, course_setup):
    profile = make_profile()
    dl = course_setup["dl"]
    queued = make_session(course_setup["bo"], profile, course=dl)
    ready = make_session(course_setup["cy"], profile, NotebookStatus.READY, course=dl)
    elsewhere = make_session(course_setup["dan"], profile, NotebookStatus.READY, course=course_setup["cv"])
    personal = make_session(course_setup["cy"], profile, NotebookStatus.READY)  # cy's own, booked to no course
    assert client.login(username="ada", password=PASSWORD)
    page = client.get("/notebooks/course/DL-101/stop/")
    assert page.status_code == 200 and "2 notebooks</strong> of 2 students in DL-101" in page.content.decode()
    assert client.post("/notebooks/course/DL-101/stop/").status_code == 400  # not confirmed
    response = client.post("/notebooks/course/DL-101/stop/", {"confirm": "yes"})
    assert response.status_code == 302 and response["Location"] == "/notebooks/course/"
    for session in (queued, ready, elsewhere, personal):
        session.refresh_from_db()
    assert queued.status == NotebookStatus.STOPPED and ready.status == NotebookStatus.STOPPING
    assert elsewhere.status == NotebookStatus.READY and personal.status == NotebookStatus.READY
    assert "2 notebooks in DL-101 stopped." in client.get("/notebooks/course/").content.decode()


def test_stop_all_in_another_teachers_course_is_404(client, course_setup):
    session = make_session(course_setup["dan"], make_profile())
    assert client.login(username="ada", password=PASSWORD)
    assert client.get("/notebooks/course/CV-201/stop/").status_code == 404
    assert client.post("/notebooks/course/CV-201/stop/", {"confirm": "yes"}).status_code == 404
    assert client.get("/notebooks/course/NO-SUCH/stop/").status_code == 404
    session.refresh_from_db()
    assert session.status == NotebookStatus.QUEUED


# --- Profiles ------------------------------------------------------------------------------------

PROFILE_FORM = {
    "slug": "dl101-quarter",
    "name": "DL-101 quarter",
    "description": "For the labs.",
    "image": IMAGE,
    "gpu_share": "0.25",
    "gpu_mem_mb": "",
    "cpu": "2",
    "memory_gb": "8",
    "max_session_h": "3",
}


def test_profile_pages_are_not_for_students(client, course_setup):
    make_profile()
    assert client.login(username="bo", password=PASSWORD)
    for path in ("/notebooks/profiles/", "/notebooks/profiles/new/", "/notebooks/profiles/pytorch-quarter/edit/"):
        assert client.get(path).status_code == 403
    assert (
        client.post("/notebooks/profiles/new/", {**PROFILE_FORM, "courses": [course_setup["dl"].pk]}).status_code == 403
    )
    assert NotebookProfile.objects.count() == 1


def test_teacher_writes_a_profile_for_their_course_and_the_students_get_it(client, course_setup):
    ada, dl = course_setup["ada"], course_setup["dl"]
    assert client.login(username="ada", password=PASSWORD)
    form = client.get("/notebooks/profiles/new/").content.decode()
    assert 'name="roles"' not in form and "DL-101" in form and "CV-201" not in form
    # A whole role sneaked into the POST is ignored: teachers offer profiles to their courses only.
    response = client.post("/notebooks/profiles/new/", {**PROFILE_FORM, "courses": [dl.pk], "roles": ["student"]})
    assert response.status_code == 302 and response["Location"] == "/notebooks/profiles/"
    profile = NotebookProfile.objects.get(slug="dl101-quarter")
    assert profile.created_by == ada and profile.roles == [] and list(profile.courses.all()) == [dl]
    assert profile.max_session_h == Decimal("3")
    assert "dl101-quarter" in client.get("/notebooks/profiles/").content.decode()
    client.logout()
    assert client.login(username="bo", password=PASSWORD)
    assert 'value="dl101-quarter"' in client.get("/notebooks/").content.decode()
    client.logout()
    assert client.login(username="dan", password=PASSWORD)
    assert 'value="dl101-quarter"' not in client.get("/notebooks/").content.decode()


def test_teacher_cannot_offer_a_profile_to_a_course_they_do_not_teach(client, course_setup):
    assert client.login(username="ada", password=PASSWORD)
    response = client.post("/notebooks/profiles/new/", {**PROFILE_FORM, "courses": [course_setup["cv"].pk]})
    assert response.status_code == 400
    assert not NotebookProfile.objects.exists()


def test_profile_save_refuses_a_teacher_a_whole_role_or_a_foreign_course(course_setup):
    fields = {**PROFILE_FORM, "gpu_mem_mb": None, "gpu_share": Decimal("0.25")}
    with pytest.raises(InvalidInput, match="Only admins offer a profile to a whole role"):
        profile_save(user=course_setup["ada"], **{**fields, "roles": ["student"]})
    with pytest.raises(InvalidInput, match="only to courses you teach, not CV-201"):
        profile_save(user=course_setup["ada"], **{**fields, "courses": [course_setup["cv"]]})
    assert not NotebookProfile.objects.exists()


def test_teacher_edits_their_profile_and_an_admins_course_stays(client, course_setup):
    ada, dl, cv = course_setup["ada"], course_setup["dl"], course_setup["cv"]
    profile = make_profile("ada-half", name="Ada's half", share="0.5", roles=[], created_by=ada)
    profile.courses.set([dl, cv])  # CV-201 added by an admin
    make_profile("eve-one", roles=[], created_by=course_setup["eve"])
    assert client.login(username="ada", password=PASSWORD)
    listing = client.get("/notebooks/profiles/").content.decode()
    assert "ada-half" in listing and "eve-one" not in listing
    assert client.get("/notebooks/profiles/eve-one/edit/").status_code == 404
    assert client.get("/notebooks/profiles/ada-half/edit/").status_code == 200
    response = client.post(
        "/notebooks/profiles/ada-half/edit/",
        {**PROFILE_FORM, "slug": "renamed", "name": "Ada's quarter", "courses": []},
    )
    assert response.status_code == 302
    profile.refresh_from_db()
    assert profile.slug == "ada-half" and profile.name == "Ada's quarter" and profile.gpu_share == Decimal("0.25")
    assert list(profile.courses.all()) == [cv]


@pytest.mark.parametrize(
    "change,field_error",
    [
        ({"image": "my image:latest"}, "without spaces"),
        ({"image": ""}, "required"),
        ({"gpu_share": "0.01"}, "greater than or equal to 0.05"),
        ({"gpu_share": "1.5"}, "less than or equal to 1"),
        ({"memory_gb": "0"}, "greater than or equal to 0.25"),
        ({"max_session_h": "100"}, "less than or equal to 72"),
        ({"slug": "has space"}, "slug"),
    ],
)
def test_profile_form_validation_is_400(browser_client, change, field_error):
    client = browser_client("admin")
    response = client.post("/notebooks/profiles/new/", {**PROFILE_FORM, **change})
    assert response.status_code == 400
    assert field_error in response.content.decode().lower() or field_error in response.content.decode()
    assert not NotebookProfile.objects.exists()


def test_admin_offers_a_profile_to_a_role_and_any_course(browser_client, course_setup):
    client = browser_client("admin")
    form = client.get("/notebooks/profiles/new/").content.decode()
    assert 'name="roles"' in form and "CV-201" in form
    data = {**PROFILE_FORM, "roles": ["student"], "courses": [course_setup["cv"].pk]}
    assert client.post("/notebooks/profiles/new/", data).status_code == 302
    profile = NotebookProfile.objects.get()
    assert profile.roles == ["student"] and list(profile.courses.all()) == [course_setup["cv"]]
    assert profile.created_by.username == "admin-x"
    # A slug is one profile's.
    response = client.post("/notebooks/profiles/new/", data)
    assert response.status_code == 400 and not NotebookProfile.objects.exclude(pk=profile.pk).exists()


def test_deactivate_after_confirming_then_reactivate(client, course_setup):
    ada = course_setup["ada"]
    profile = make_profile("ada-q", roles=[], created_by=ada)
    profile.courses.set([course_setup["dl"]])
    assert client.login(username="ada", password=PASSWORD)
    page = client.get("/notebooks/profiles/ada-q/deactivate/")
    assert page.status_code == 200 and "Deactivate this profile?" in page.content.decode()
    assert client.post("/notebooks/profiles/ada-q/deactivate/").status_code == 400
    assert client.post("/notebooks/profiles/ada-q/deactivate/", {"confirm": "yes"}).status_code == 302
    profile.refresh_from_db()
    assert not profile.is_active and NotebookProfile.objects.filter(slug="ada-q").exists()
    client.logout()
    assert client.login(username="bo", password=PASSWORD)
    assert 'value="ada-q"' not in client.get("/notebooks/").content.decode()
    client.logout()
    assert client.login(username="ada", password=PASSWORD)
    assert client.get("/notebooks/profiles/ada-q/activate/").status_code == 405
    assert client.post("/notebooks/profiles/ada-q/activate/").status_code == 302
    profile.refresh_from_db()
    assert profile.is_active


# --- Dashboards -----------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["student", "teacher", "admin"])
def test_dashboard_card(browser_client, role):
    client = browser_client(role)
    html = client.get("/").content.decode()
    assert 'data-testid="dashboard-notebooks"' in html and "No notebook is running." in html
    from accounts.models import User

    user = User.objects.get(username=f"{role}-x")
    profile = make_profile()
    make_session(user, profile, NotebookStatus.STOPPED, reason="Stopped by you.")
    ready = make_session(user, profile, NotebookStatus.READY)
    html = client.get("/").content.decode()
    assert f'href="{ready.url}"' in html and ">Open</a>" in html and "No notebook is running." not in html


# --- Admin console ---------------------------------------------------------------------------------


def test_admin_console_stops_the_selected_notebooks(browser_client, course_setup):
    profile = make_profile()
    queued = make_session(course_setup["bo"], profile)
    ready = make_session(course_setup["dan"], profile, NotebookStatus.READY)
    client = browser_client("admin")
    assert client.get(f"/admin/labs/notebooksession/{ready.pk}/change/").status_code == 200
    assert client.get("/admin/labs/notebooksession/add/").status_code == 403
    response = client.post(
        "/admin/labs/notebooksession/", {"action": "stop", "_selected_action": [queued.pk, ready.pk]}, follow=True
    )
    assert response.status_code == 200 and "Asked to stop" in response.content.decode()
    queued.refresh_from_db()
    ready.refresh_from_db()
    assert queued.status == NotebookStatus.STOPPED and ready.status == NotebookStatus.STOPPING
    assert ready.stopped_by.username == "admin-x"


def test_admin_console_writes_profiles_with_courses(browser_client, course_setup):
    client = browser_client("admin")
    page = client.get("/admin/labs/notebookprofile/add/")
    assert page.status_code == 200 and "selectfilter" in page.content.decode().lower()  # filter_horizontal
    profile = make_profile()
    assert client.get(f"/admin/labs/notebookprofile/{profile.pk}/delete/").status_code == 403
    data = {
        **PROFILE_FORM,
        "image": "two words",
        "roles": '["student"]',
        "courses": [course_setup["dl"].pk],
        "is_active": "on",
    }
    response = client.post("/admin/labs/notebookprofile/add/", data)
    assert response.status_code == 200 and "without spaces" in response.content.decode()
    response = client.post("/admin/labs/notebookprofile/add/", {**data, "image": IMAGE})
    assert response.status_code == 302
    saved = NotebookProfile.objects.get(slug=PROFILE_FORM["slug"])
    assert saved.created_by.username == "admin-x" and saved.roles == ["student"]
