"""Notebooks end to end against a real JupyterHub on loopback (echo spawner): start, ready, open through the
proxy, stop, quotas, the queue, idle culling, session length, weekly GPU-hours, reservations, and a hub that is
down or slow."""

from __future__ import annotations

import datetime as dt
import socket
import threading
import time
from decimal import Decimal

import pytest
import requests
from django.db import connection
from django.utils import timezone

from accounts.errors import Conflict, InvalidInput, NotFound, NotPermitted, QuotaExceeded
from accounts.models import Notice, Quota
from labs.ledger import week_gpu_hours
from labs.models import Allocation, NotebookProfile, NotebookSession, NotebookStatus
from labs.notebooks.hub_client import hub
from labs.notebooks.passes import HUB_DOWN, notebooks_pass
from labs.notebooks.selectors import queue_positions
from labs.notebooks.services import notebook_extend, notebook_request, notebook_stop, notebooks_stop_course
from labs.telemetry import store
from labs.telemetry.samples import gpu_key
from tests.factories import CourseFactory, EnrollmentFactory, NodeFactory, UserFactory

# On the lab's default image allow-list (JOBS_IMAGE_ALLOW), which notebook profiles keep to.
IMAGE = "quay.io/jupyter/base-notebook:latest"

pytestmark = pytest.mark.usefixtures("hub_settings")


@pytest.fixture(autouse=True)
def _clean_hub(hub):
    """Each test starts with no server in the hub (the hub outlives the tests' databases)."""
    yield
    client = hub_client(hub)
    for (user, server), _state in client.active_servers().items():
        client.stop(user, server)


def hub_client(hub_process):
    from django.conf import settings

    from labs.notebooks.hub_client import HubClient

    return HubClient(hub_process.api_url, settings.NOTEBOOKS_HUB_TOKEN, timeout_s=10)


@pytest.fixture
def course(db):
    return CourseFactory(code="DL-101")


@pytest.fixture
def quarter(course):
    profile = NotebookProfile.objects.create(
        slug="quarter", name="Quarter GPU", image="quay.io/jupyter/base-notebook:latest", gpu_share=Decimal("0.25")
    )
    profile.courses.add(course)
    return profile


@pytest.fixture
def half(course):
    profile = NotebookProfile.objects.create(
        slug="half", name="Half GPU", image="quay.io/jupyter/base-notebook:latest", gpu_share=Decimal("0.5")
    )
    profile.courses.add(course)
    Quota.objects.create(course=course, notebook_gpu_share=Decimal("0.5"))
    return profile


def student(course, name: str):
    user = UserFactory(username=name)
    EnrollmentFactory(user=user, course=course)
    return user


def run_until(condition, *, timeout: float = 30.0, now=None):
    """Run passes (as the worker does) until `condition()` holds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        notebooks_pass(upkeep=True, now=now() if callable(now) else now)
        result = condition()
        if result:
            return result
        time.sleep(0.1)
    raise AssertionError("timed out waiting")


def reload(session):
    return NotebookSession.objects.select_related("profile", "user").get(pk=session.pk)


def ready(session):
    return reload(session).status == NotebookStatus.READY


def open_allocations(session):
    return list(Allocation.objects.filter(ref=session.ref, ends_at__isnull=True))


# --- The happy path -------------------------------------------------------------------------------


def test_start_ready_open_through_the_proxy_and_stop(course, quarter):
    NodeFactory(name="gpu01")
    ada = student(course, "ada")
    session = notebook_request(user=ada, profile="quarter")
    assert session.status == NotebookStatus.QUEUED
    assert queue_positions([session]) == {session.pk: 1}

    report = notebooks_pass()
    assert report.started == 1
    session = reload(session)
    assert session.status == NotebookStatus.STARTING and session.node == "gpu01"
    (allocation,) = open_allocations(session)
    assert allocation.kind == "notebook" and allocation.share == Decimal("0.25") and allocation.course == course

    run_until(lambda: ready(session))
    session = reload(session)
    assert session.url.startswith(hub().api_url.split("/hub/api")[0].rsplit(":", 1)[0])
    assert session.url.endswith(f"/user/u{ada.pk}/nb{session.pk}/")  # the hub user: u<account id>
    # Open it through the hub's proxy: the echo responder answers.
    answer = requests.get(session.url, timeout=10, allow_redirects=False)
    assert answer.status_code == 200
    assert session.ends_at is not None and session.ends_at > timezone.now() + dt.timedelta(hours=3)

    notebook_stop(user=ada, session=session)
    assert reload(session).status == NotebookStatus.STOPPING
    run_until(lambda: reload(session).status == NotebookStatus.STOPPED)
    assert open_allocations(session) == []
    assert hub().server(f"u{ada.pk}", session.server_name) is None
    assert requests.get(session.url, timeout=10, allow_redirects=False).status_code != 200


def test_the_portal_makes_hub_users_without_admin_rights(course, quarter):
    """Hub admin rights come only from the login (portal admins, by the OAuth groups claim)."""
    NodeFactory(name="gpu01")
    ada = student(course, "Ada")
    session = notebook_request(user=ada, profile="quarter")
    run_until(lambda: ready(session))
    assert reload(session).hub_user == f"u{ada.pk}"  # from the account's id, never its (lowercased) name
    assert hub()._call("GET", f"/users/u{ada.pk}").json()["admin"] is False


def test_the_hub_user_follows_the_account_through_a_rename_and_never_goes_with_a_reused_name(course, quarter):
    NodeFactory(name="gpu01")
    ada = student(course, "ada")
    first = notebook_request(user=ada, profile="quarter")
    run_until(lambda: ready(first))

    ada.username = "ada-old"  # an admin renames her; someone else is then given "ada"
    ada.save()
    newcomer = student(course, "ada")
    theirs = notebook_request(user=newcomer, profile="quarter")
    run_until(lambda: ready(theirs))

    assert reload(theirs).hub_user == f"u{newcomer.pk}" != reload(first).hub_user == f"u{ada.pk}"
    # Each has a hub user of their own, with only their own server; the renamed account's next one joins hers.
    assert set(hub()._call("GET", f"/users/u{ada.pk}").json()["servers"]) == {first.server_name}
    assert set(hub()._call("GET", f"/users/u{newcomer.pk}").json()["servers"]) == {theirs.server_name}
    notebook_stop(user=ada, session=reload(first))
    run_until(lambda: reload(first).status == NotebookStatus.STOPPED)
    assert notebook_request(user=ada, profile="quarter").hub_user == f"u{ada.pk}"


# --- Bad input and quotas -------------------------------------------------------------------------


def test_unknown_and_forbidden_profiles_read_the_same_and_leave_nothing(course, quarter):
    NodeFactory(name="gpu01")
    other_course = CourseFactory(code="CV-210")
    secret = NotebookProfile.objects.create(slug="cv-only", name="CV", image=IMAGE)
    secret.courses.add(other_course)
    ada = student(course, "ada")
    for slug in ("nope", "cv-only", "", "   "):
        with pytest.raises(InvalidInput) as caught:
            notebook_request(user=ada, profile=slug)
        assert "profile" in caught.value.fields
    assert NotebookSession.objects.count() == 0


def test_a_profile_over_the_share_quota_is_refused_with_the_limit(course, quarter):
    whole = NotebookProfile.objects.create(
        slug="whole", name="Whole", image=IMAGE, roles=["student"], gpu_share=Decimal("1")
    )
    ada = student(course, "ada")
    with pytest.raises(QuotaExceeded) as caught:
        notebook_request(user=ada, profile=whole.slug)
    assert caught.value.extra == {
        "limit": "notebook_gpu_share",
        "used": 1.0,
        "allowed": 0.25,
        "help": "/help/#limit-notebook_gpu_share",
    }
    assert caught.value.message == "“Whole” takes 1 of a GPU; your quota allows 0.25."


def test_a_second_notebook_over_the_quota_is_refused(course, quarter):
    NodeFactory(name="gpu01")
    ada = student(course, "ada")
    notebook_request(user=ada, profile="quarter")
    with pytest.raises(QuotaExceeded) as caught:
        notebook_request(user=ada, profile="quarter")
    assert caught.value.extra["limit"] == "max_notebooks" and caught.value.extra["allowed"] == 1
    assert NotebookSession.objects.filter(user=ada).count() == 1


@pytest.mark.django_db(transaction=True)
def test_twenty_parallel_requests_from_one_student_leave_exactly_one_session():
    course = CourseFactory(code="DL-101")
    profile = NotebookProfile.objects.create(slug="quarter", name="Quarter", image=IMAGE)
    profile.courses.add(course)
    NodeFactory(name="gpu01")
    ada = student(course, "ada")
    barrier = threading.Barrier(20)
    outcomes: list = [None] * 20

    def press(n: int) -> None:
        try:
            barrier.wait()
            outcomes[n] = notebook_request(user=ada, profile="quarter").status
        except QuotaExceeded as exc:
            outcomes[n] = exc.code
        finally:
            connection.close()

    threads = [threading.Thread(target=press, args=(n,)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["queued"] + ["quota_exceeded"] * 19
    assert NotebookSession.objects.filter(user=ada).count() == 1


def test_the_weekly_gpu_hours_refuse_a_start_when_used_up(course, quarter):
    gpu = NodeFactory(name="gpu01").gpus.get()
    ada = student(course, "ada")
    Quota.objects.create(user=ada, gpu_hours_week=Decimal("1"))
    now = timezone.now()
    Allocation.objects.create(
        user=ada, kind="job", ref="job:1#1", gpu=gpu, starts_at=now - dt.timedelta(minutes=61), ends_at=now
    )
    with pytest.raises(QuotaExceeded) as caught:
        notebook_request(user=ada, profile="quarter")
    assert caught.value.extra["limit"] == "gpu_hours_week"
    assert "come back on Monday" in caught.value.message


# --- The queue ------------------------------------------------------------------------------------


def test_a_full_lab_queues_with_true_positions_and_starts_them_by_itself(course, half):
    NodeFactory(name="gpu01")  # one GPU: two half-GPU notebooks
    people = [student(course, name) for name in ("ada", "bob", "cyd", "dee")]
    sessions = []
    for person in people:
        sessions.append(notebook_request(user=person, profile="half"))
        time.sleep(0.01)
    run_until(lambda: ready(sessions[0]) and ready(sessions[1]))
    waiting = [reload(s) for s in sessions[2:]]
    assert [s.status for s in waiting] == ["queued", "queued"]
    assert queue_positions() == {sessions[2].pk: 1, sessions[3].pk: 2}
    assert "Waiting for a GPU" in waiting[0].reason

    # The first leaves: the next in line starts without anyone pressing anything.
    notebook_stop(user=people[0], session=reload(sessions[0]))
    run_until(lambda: ready(sessions[2]))
    assert queue_positions() == {sessions[3].pk: 1}
    # Taking yourself out of the queue frees your quota at once.
    notebook_stop(user=people[3], session=reload(sessions[3]))
    assert reload(sessions[3]).status == NotebookStatus.STOPPED
    assert "out of the queue" in reload(sessions[3]).reason


def test_no_more_spawns_in_flight_than_the_setting_allows(course, quarter, settings):
    settings.NOTEBOOKS_MAX_STARTING = 2
    NodeFactory(name="gpu01")
    NodeFactory(name="gpu02")
    sessions = [notebook_request(user=student(course, f"s{n}"), profile="quarter") for n in range(5)]
    report = notebooks_pass()
    assert report.started == 2
    assert NotebookSession.objects.filter(status=NotebookStatus.STARTING).count() == 2
    run_until(lambda: all(ready(s) for s in sessions))


# --- Who may stop what ----------------------------------------------------------------------------


def test_stopping_someone_elses_notebook(course, quarter):
    NodeFactory(name="gpu01")
    ada, bob = student(course, "ada"), student(course, "bob")
    teacher = UserFactory(username="grace", role="teacher")
    course.teachers.add(teacher)
    outsider = UserFactory(username="alan", role="teacher")
    session = notebook_request(user=ada, profile="quarter")
    run_until(lambda: ready(session))
    with pytest.raises(NotPermitted):
        notebook_stop(user=bob, session=reload(session))
    with pytest.raises(NotPermitted):
        notebook_stop(user=outsider, session=reload(session))
    with pytest.raises(NotPermitted):
        notebook_extend(user=teacher, session=reload(session))
    assert reload(session).status == NotebookStatus.READY

    notebook_stop(user=teacher, session=reload(session))
    assert reload(session).status == NotebookStatus.STOPPING and reload(session).stopped_by == teacher
    assert Notice.objects.filter(user=ada, text__contains="stopped by grace").exists()


def test_a_teacher_stops_all_of_a_course(course, quarter):
    NodeFactory(name="gpu01")
    teacher = UserFactory(username="grace", role="teacher")
    course.teachers.add(teacher)
    sessions = [notebook_request(user=student(course, f"s{n}"), profile="quarter") for n in range(3)]
    run_until(lambda: ready(sessions[0]))
    with pytest.raises(NotFound):
        notebooks_stop_course(user=UserFactory(username="alan", role="teacher"), course=course)
    assert notebooks_stop_course(user=teacher, course=course) == 3
    run_until(lambda: all(reload(s).status == NotebookStatus.STOPPED for s in sessions))
    assert Allocation.objects.filter(kind="notebook", ends_at__isnull=True).count() == 0


# --- Idle culling, session length, weekly quota ---------------------------------------------------


def write_gpu(node: str, util: float, at: dt.datetime) -> None:
    store.write_latest(
        seq=1,
        at=at.timestamp(),
        gpus={gpu_key(node, 0): {"util_pct": util, "sampled_at": at.isoformat(), "node": node, "index": 0}},
    )


def later(minutes: float):
    return lambda: timezone.now() + dt.timedelta(minutes=minutes)


def test_idle_means_no_activity_and_a_quiet_gpu_with_a_warning_first(course, quarter, settings):
    settings.NOTEBOOKS_IDLE_MIN, settings.NOTEBOOKS_WARN_MIN = 60, 10
    NodeFactory(name="gpu01")
    ada = student(course, "ada")
    session = notebook_request(user=ada, profile="quarter")
    run_until(lambda: ready(session))

    # 52 minutes on, nobody typed and the GPU is quiet: warned, not stopped.
    write_gpu("gpu01", 1.0, later(52)())
    notebooks_pass(now=later(52)())
    session = reload(session)
    assert session.status == NotebookStatus.READY and session.idle_warned_at is not None
    assert Notice.objects.filter(user=ada, text__contains="looks idle").exists()

    # A long training cell with no browser open: the GPU is busy, so it is not idle.
    write_gpu("gpu01", 97.0, later(55)())
    notebooks_pass(now=later(55)())
    write_gpu("gpu01", 0.0, later(70)())
    notebooks_pass(now=later(70)())
    assert reload(session).status == NotebookStatus.READY

    # Quiet from minute 55 on: stopped at 55 + 60.
    write_gpu("gpu01", 0.0, later(116)())
    notebooks_pass(now=later(116)())
    session = reload(session)
    assert session.status in (NotebookStatus.STOPPING, NotebookStatus.STOPPED)
    assert "idle" in session.reason


def test_keep_running_resets_the_idle_clock(course, quarter, settings):
    settings.NOTEBOOKS_IDLE_MIN = 60
    NodeFactory(name="gpu01")
    ada = student(course, "ada")
    session = notebook_request(user=ada, profile="quarter")
    run_until(lambda: ready(session))
    write_gpu("gpu01", 0.0, later(52)())
    notebooks_pass(now=later(52)())
    notebook_extend(user=ada, session=reload(session), now=later(53)())
    write_gpu("gpu01", 0.0, later(65)())
    notebooks_pass(now=later(65)())
    assert reload(session).status == NotebookStatus.READY


def test_activity_reported_by_the_hub_keeps_it(course, quarter, settings):
    settings.NOTEBOOKS_IDLE_MIN = 60
    NodeFactory(name="gpu01")
    ada = student(course, "ada")
    session = notebook_request(user=ada, profile="quarter")
    run_until(lambda: ready(session))
    # The single-user server reports activity (someone typed) 50 minutes in... as the hub tells it.
    hub().record_activity(session.hub_user, session.server_name, later(50)())
    write_gpu("gpu01", 0.0, later(70)())
    notebooks_pass(now=later(70)())
    session = reload(session)
    assert session.status == NotebookStatus.READY
    assert session.last_activity_at is not None and session.last_activity_at > timezone.now() + dt.timedelta(minutes=40)


def test_no_fresh_gpu_sample_never_culls(course, quarter, settings):
    settings.NOTEBOOKS_IDLE_MIN = 60
    NodeFactory(name="gpu01")
    session = notebook_request(user=student(course, "ada"), profile="quarter")
    run_until(lambda: ready(session))
    write_gpu("gpu01", 0.0, timezone.now())  # goes stale
    notebooks_pass(now=later(90)())
    assert reload(session).status == NotebookStatus.READY


def test_the_session_length_warns_ends_and_can_be_extended_within_the_quota(course, quarter, settings):
    settings.NOTEBOOKS_EXTEND_MIN, settings.NOTEBOOKS_WARN_MIN = 60, 10
    quarter.max_session_h = Decimal("1")
    quarter.save()
    NodeFactory(name="gpu01")
    ada = student(course, "ada")
    session = notebook_request(user=ada, profile="quarter")
    run_until(lambda: ready(session))
    ends = reload(session).ends_at
    write_gpu("gpu01", 90.0, later(52)())
    notebooks_pass(now=later(52)())
    assert Notice.objects.filter(user=ada, text__contains="ends at").exists()

    extended = notebook_extend(user=ada, session=reload(session), now=later(53)())
    assert extended.ends_at > ends and extended.extensions == 1

    # Over the weekly quota, nothing more may be added. 54 minutes of a quarter GPU are 0.225 GPU-hours, but the
    # week may have begun (Monday 00:00) in those minutes: the quota is half of what this week's ledger holds then.
    at = later(54)()
    used = week_gpu_hours(ada, now=at)
    assert used > 0
    Quota.objects.create(user=ada, gpu_hours_week=used / 2)
    with pytest.raises(QuotaExceeded):
        notebook_extend(user=ada, session=reload(session), now=at)

    write_gpu("gpu01", 90.0, later(200)())
    notebooks_pass(now=later(200)())
    assert "end of its session" in reload(session).reason


def test_weekly_gpu_hours_warn_at_80_and_stop_after_the_grace_period(course, quarter, settings):
    settings.NOTEBOOKS_QUOTA_GRACE_MIN = 15
    node = NodeFactory(name="gpu01")
    ada = student(course, "ada")
    Quota.objects.create(user=ada, gpu_hours_week=Decimal("2"))
    session = notebook_request(user=ada, profile="quarter")
    run_until(lambda: ready(session))
    # 1.7 GPU-hours of jobs earlier this week: 85 %.
    now = timezone.now()
    Allocation.objects.create(
        user=ada, kind="job", ref="job:9#1", gpu=node.gpus.get(), starts_at=now - dt.timedelta(hours=1.7), ends_at=now
    )
    notebooks_pass()
    assert Notice.objects.filter(user=ada, text__contains="of your 2.0 GPU-hours").exists()
    assert reload(session).status == NotebookStatus.READY

    Allocation.objects.create(
        user=ada, kind="job", ref="job:9#2", gpu=node.gpus.get(), starts_at=now - dt.timedelta(hours=3), ends_at=now
    )
    notebooks_pass()
    session = reload(session)
    assert session.status == NotebookStatus.READY and session.quota_over_at is not None
    assert Notice.objects.filter(user=ada, text__contains="used up").exists()
    write_gpu("gpu01", 90.0, later(16)())
    notebooks_pass(now=later(16)())
    assert "used up" in reload(session).reason
    run_until(lambda: reload(session).status == NotebookStatus.STOPPED)


def test_a_reservation_taking_the_node_stops_the_notebook_at_its_start(
    course, quarter, django_capture_on_commit_callbacks
):
    from labs.reservations.services import NodeRequest, reservation_create
    from labs.reservations.tick import reservations_tick

    NodeFactory(name="gpu01")
    ada = student(course, "ada")
    session = notebook_request(user=ada, profile="quarter")
    run_until(lambda: ready(session))
    teacher = UserFactory(username="grace", role="teacher")
    start = timezone.now() + dt.timedelta(hours=2)
    (reservation,) = reservation_create(
        by=teacher,
        title="Other class",
        starts_at=start,
        ends_at=start + dt.timedelta(hours=2),
        nodes=NodeRequest(names=("gpu01",)),
    )
    with django_capture_on_commit_callbacks(execute=True):
        reservations_tick(now=start + dt.timedelta(seconds=1))
    session = reload(session)
    assert session.status == NotebookStatus.STOPPING and "Other class" in session.reason
    run_until(lambda: reload(session).status == NotebookStatus.STOPPED)
    assert reservation.pk


def test_a_notebook_on_a_node_reserved_later_must_end_by_then(course, quarter):
    from labs.reservations.services import NodeRequest, reservation_create

    NodeFactory(name="gpu01")
    teacher = UserFactory(username="grace", role="teacher")
    start = timezone.now() + dt.timedelta(hours=1)
    reservation_create(
        by=teacher,
        title="Other class",
        starts_at=start,
        ends_at=start + dt.timedelta(hours=2),
        nodes=NodeRequest(names=("gpu01",)),
    )
    ada = student(course, "ada")
    session = notebook_request(user=ada, profile="quarter")
    run_until(lambda: ready(session))
    session = reload(session)
    assert session.must_end_by == start and session.ends_at == start
    assert "must end by" in session.reason or session.reason == ""
    with pytest.raises(Conflict):
        notebook_extend(user=ada, session=session, now=start - dt.timedelta(minutes=1))


# --- A hub that is down or slow -------------------------------------------------------------------


def test_hub_down_keeps_the_queue_and_recovers_by_itself(course, quarter, settings, tmp_path):
    from django.conf import settings as live

    from labs.notebooks.localhub import LocalHub

    NodeFactory(name="gpu01")
    own = LocalHub(spawner="echo", portal_url="http://127.0.0.1:9")
    own.start(timeout=90)
    try:
        settings.NOTEBOOKS_HUB_API_URL, settings.NOTEBOOKS_HUB_PUBLIC_URL = own.api_url, own.public_url
        ada, bob = student(course, "ada"), student(course, "bob")
        first = notebook_request(user=ada, profile="quarter")
        run_until(lambda: ready(first))

        own.stop()
        second = notebook_request(user=bob, profile="quarter")
        report = notebooks_pass()
        assert report.hub_down
        second = reload(second)
        assert second.status == NotebookStatus.QUEUED and second.reason == HUB_DOWN
        assert open_allocations(second) == []
        # A stop asked for while the hub is down waits, then happens.
        notebook_stop(user=ada, session=reload(first))
        assert notebooks_pass().hub_down and reload(first).status == NotebookStatus.STOPPING

        own.start(timeout=90)
        assert own.api_url == live.NOTEBOOKS_HUB_API_URL
        run_until(lambda: ready(second) and reload(first).status == NotebookStatus.STOPPED)
    finally:
        own.stop()


@pytest.fixture
def silent_hub():
    """A port that accepts connections and never answers: a hung hub."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    accepted = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/hub/api"
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    server.close()


def test_a_slow_hub_is_a_clear_wait_not_an_error(course, quarter, settings, silent_hub):
    settings.NOTEBOOKS_HUB_API_URL, settings.NOTEBOOKS_HUB_TIMEOUT_S = silent_hub, 1
    NodeFactory(name="gpu01")
    session = notebook_request(user=student(course, "ada"), profile="quarter")
    began = time.monotonic()
    report = notebooks_pass()
    assert report.hub_down and time.monotonic() - began < 10
    session = reload(session)
    assert session.status == NotebookStatus.QUEUED and session.reason == HUB_DOWN
    assert open_allocations(session) == []
