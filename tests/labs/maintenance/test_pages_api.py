"""The banner on every page (shown and hidden by time), GET|POST /api/v1/maintenance/ (admins),
GET /api/v1/announcements/ (everyone signed in) and the console's page where admins announce, per role."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.cache import cache
from django.utils import timezone

from labs.maintenance.selectors import BANNERS_KEY, BANNERS_VERSION_KEY, banners
from labs.maintenance.services import announcement_create, maintenance_create
from labs.models import Announcement, Maintenance
from tests.factories import NodeFactory, UserFactory

pytestmark = pytest.mark.django_db

T0 = timezone.make_aware(dt.datetime(2026, 12, 1, 8, 0))


@pytest.fixture
def root():
    return UserFactory(username="root", role="admin")


def test_an_announcement_shows_on_every_page_until_its_end(client, root, frozen_now):
    frozen_now(T0)
    announcement_create(
        by=root, text="The cluster moves on Friday.", severity="warning", ends_at=T0 + dt.timedelta(hours=1)
    )
    client.force_login(UserFactory(username="ada"))
    for path in ("/", "/account/", "/lab/nodes/", "/jobs/"):
        page = client.get(path).content.decode()
        assert "The cluster moves on Friday." in page and 'class="msg msg-warning" role="alert"' in page, path
    client.logout()
    assert "The cluster moves on Friday." in client.get("/login/").content.decode()  # signed in or not
    frozen_now(T0 + dt.timedelta(hours=1))
    assert "The cluster moves on Friday." not in client.get("/").content.decode()


def test_the_maintenance_banner_shows_from_its_lead_until_its_end(client, root, frozen_now, settings):
    settings.MAINTENANCE_BANNER_LEAD_H = 48
    NodeFactory(name="gpu01")
    frozen_now(T0)
    maintenance_create(
        by=root,
        starts_at=T0 + dt.timedelta(hours=50),
        ends_at=T0 + dt.timedelta(hours=52),
        reason="New drivers",
        nodes=["gpu01"],
    )
    ada = UserFactory(username="ada")
    client.force_login(ada)
    assert "New drivers" not in client.get("/").content.decode()  # 50 h ahead: not yet
    frozen_now(T0 + dt.timedelta(hours=3))
    page = client.get("/").content.decode()
    assert "Maintenance on gpu01 from " in page and "New drivers. Work there is stopped at its start." in page
    frozen_now(T0 + dt.timedelta(hours=51))
    client.force_login(ada)  # (the session of two days ago has expired)
    assert "Maintenance now on gpu01 until " in client.get("/").content.decode()
    frozen_now(T0 + dt.timedelta(hours=52))
    assert "New drivers" not in client.get("/").content.decode()


def test_pages_keep_the_banners_and_show_a_new_one_at_once(client, root, frozen_now, django_assert_num_queries):
    # Every page shows the banners: they are kept in the cache, and any write shows on the very next page.
    frozen_now(T0)
    client.force_login(UserFactory(username="ada"))
    assert 'data-testid="banners"' not in client.get("/account/").content.decode()
    with django_assert_num_queries(0):
        assert banners() == []  # kept: no query
    announcement_create(by=root, text="Coffee in room 2.", ends_at=T0 + dt.timedelta(hours=1))
    assert "Coffee in room 2." in client.get("/account/").content.decode()
    # One that begins in half a minute: not yet, then shown by its time alone, from what was kept.
    announcement_create(
        by=root,
        text="Back up your notebooks.",
        starts_at=T0 + dt.timedelta(seconds=30),
        ends_at=T0 + dt.timedelta(hours=1),
    )
    assert "Back up your notebooks." not in client.get("/account/").content.decode()
    frozen_now(T0 + dt.timedelta(seconds=40))
    with django_assert_num_queries(0):
        assert [b["text"] for b in banners()] == ["Back up your notebooks.", "Coffee in room 2."]
    # What is kept is never read for a moment before it was read (a clock set back) nor past a minute.
    frozen_now(T0 - dt.timedelta(seconds=5))
    with django_assert_num_queries(2):
        assert banners() == []
    frozen_now(T0 + dt.timedelta(seconds=61))
    with django_assert_num_queries(2):
        assert len(banners()) == 2


def test_a_page_that_read_the_banners_before_a_commit_does_not_keep_them(
    root, frozen_now, django_capture_on_commit_callbacks
):
    frozen_now(T0)
    with django_capture_on_commit_callbacks() as commits:
        announcement_create(by=root, text="Power cut at noon.", ends_at=T0 + dt.timedelta(hours=1))
        # Another page reading the rows now would keep them under the moved-on version; the commit moves it again.
        cache.set(BANNERS_KEY, {"version": cache.get(BANNERS_VERSION_KEY), "read_at": T0,
                                "until": T0 + dt.timedelta(minutes=1), "rows": []})  # fmt: skip
        assert banners() == []
    for callback in commits:
        callback()
    assert [b["text"] for b in banners()] == ["Power cut at noon."]


@pytest.mark.parametrize("role", ["student", "teacher", "admin", "assistant"])
def test_everyone_signed_in_reads_the_announcements(role, api_as, root):
    announcement_create(by=root, text="Quiet hours tonight", ends_at=timezone.now() + dt.timedelta(hours=2))
    Announcement.objects.create(
        text="Over", created_by=root, starts_at=timezone.now() - dt.timedelta(hours=2), ends_at=timezone.now()
    )
    body = api_as(role).get("/api/v1/announcements/").json()
    assert [a["text"] for a in body] == ["Quiet hours tonight"] and body[0]["severity"] == "info"


@pytest.mark.parametrize("role,status", [("anonymous", 401), ("student", 403), ("teacher", 403), ("assistant", 403)])
def test_only_admins_use_the_maintenance_api(role, status, api_as):
    client = api_as(role)
    assert client.get("/api/v1/maintenance/").status_code == status
    body = {"all": True, "starts_at": "2030-01-01T08:00", "ends_at": "2030-01-01T10:00", "reason": "x"}
    assert client.post("/api/v1/maintenance/", body, format="json").status_code == status
    assert not Maintenance.objects.exists()


def test_an_admin_schedules_maintenance_through_the_api(api_as):
    NodeFactory(name="gpu01")
    NodeFactory(name="gpu02")
    client = api_as("admin")
    start = timezone.localtime() + dt.timedelta(days=2)
    body = {
        "nodes": ["gpu02", "gpu01"],
        "starts_at": start.isoformat(),
        "ends_at": (start + dt.timedelta(hours=3)).isoformat(),
        "reason": "Firmware",
    }
    made = client.post("/api/v1/maintenance/", body, format="json")
    assert made.status_code == 201, made.content
    assert made.json()["nodes"] == ["gpu01", "gpu02"] and made.json()["all"] is False
    listed = client.get("/api/v1/maintenance/").json()
    assert [(m["reason"], m["started_at"]) for m in listed] == [("Firmware", None)]


@pytest.mark.parametrize(
    "body",
    [
        {"starts_at": "2030-01-01T08:00", "ends_at": "2030-01-01T10:00", "reason": "x"},  # neither nodes nor all
        {
            "all": True,
            "nodes": ["gpu01"],
            "starts_at": "2030-01-01T08:00",
            "ends_at": "2030-01-01T10:00",
            "reason": "x",
        },
        {"nodes": ["gpu99"], "starts_at": "2030-01-01T08:00", "ends_at": "2030-01-01T10:00", "reason": "x"},
        {"all": True, "starts_at": "2030-01-01T10:00", "ends_at": "2030-01-01T08:00", "reason": "x"},
        {"all": True, "starts_at": "soon", "ends_at": "2030-01-01T08:00", "reason": "x"},
        {"all": True, "starts_at": "2030-01-01T08:00", "ends_at": "2030-01-01T10:00", "reason": ""},
        {"nodes": ["../etc"], "starts_at": "2030-01-01T08:00", "ends_at": "2030-01-01T10:00", "reason": "x"},
    ],
)
def test_bad_maintenance_is_a_400_and_writes_nothing(body, api_as):
    NodeFactory(name="gpu01")
    answer = api_as("admin").post("/api/v1/maintenance/", body, format="json")
    assert answer.status_code == 400, answer.content
    assert not Maintenance.objects.exists()


def test_an_admin_announces_in_the_console(client, root):
    client.force_login(root)
    page = client.get("/console/announcements/").content.decode()
    assert "No announcement is shown or coming." in page
    ends = (timezone.localtime() + dt.timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M")
    done = client.post(
        "/console/announcements/",
        {"action": "announcement", "text": "Cluster upgrade tonight", "severity": "critical", "ends_at": ends},
        follow=True,
    )
    assert "The announcement is shown on every page." in done.content.decode()
    assert 'class="msg msg-critical" role="alert"' in done.content.decode()
    refused = client.post("/console/announcements/", {"action": "announcement", "text": "", "ends_at": ends})
    assert refused.status_code == 400 and Announcement.objects.count() == 1


def test_an_admin_schedules_maintenance_in_the_console(client, root):
    NodeFactory(name="gpu01")
    client.force_login(root)
    start = timezone.localtime() + dt.timedelta(days=1)
    done = client.post(
        "/console/announcements/",
        {
            "action": "maintenance",
            "nodes": "gpu01",
            "starts_at": start.strftime("%Y-%m-%dT%H:%M"),
            "ends_at": (start + dt.timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M"),
            "reason": "Cooling",
        },
        follow=True,
    )
    assert "The maintenance was scheduled." in done.content.decode()
    assert Maintenance.objects.get().reason == "Cooling"


@pytest.mark.parametrize("role", ["student", "teacher", "assistant"])
def test_others_may_not_announce(role, browser_client):
    client = browser_client(role)
    assert client.get("/console/announcements/").status_code == 403
    assert client.post("/console/announcements/", {"action": "announcement", "text": "x"}).status_code == 403
    assert not Announcement.objects.exists()
