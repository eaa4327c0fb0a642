"""The notebooks' reconcile steps against a real JupyterHub on loopback: a notebook whose server vanished is ended and
its owner told; a server the portal does not run is stopped after the grace; a hub that is down (killed with
sessions running) ends nothing until it answers again. Each ends with the ledger clean and a second pass idle."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from accounts.models import Notice
from labs.ledger import Ref, allocations_close
from labs.ledger_check import ledger_violations
from labs.models import Allocation, NotebookProfile, NotebookSession, NotebookStatus
from labs.notebooks.hub_client import hub
from labs.notebooks.services import SERVER_GONE, notebook_request
from labs.reconcile import reconcile
from tests.factories import CourseFactory, NodeFactory
from tests.jobs.factories import wait_until
from tests.notebooks.test_notebooks import (  # noqa: F401 - the hub is emptied after each test
    _clean_hub,
    ready,
    reload,
    run_until,
    student,
)

pytestmark = pytest.mark.usefixtures("hub_settings")
GRACE = dt.timedelta(seconds=300)


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


@pytest.fixture(autouse=True)
def _settings(settings, tmp_path):
    settings.JOBS_BACKEND = "local"
    settings.JOBS_LOCAL_DIR = tmp_path / "jobs"
    settings.RECONCILE_GRACE_S = int(GRACE.total_seconds())


def gone_from_hub(user: str, server: str) -> bool:
    client = hub()
    client.stop(user, server)
    return client.server(user, server) is None


def test_a_notebook_whose_server_vanished_is_ended_and_its_owner_told(course, quarter):
    NodeFactory(name="gpu01")
    ada = student(course, "ada")
    session = notebook_request(user=ada, profile="quarter")
    run_until(lambda: ready(session))
    wait_until(lambda: gone_from_hub(session.hub_user, session.server_name))  # the hub lost it (a node died, a restart)

    dry = reconcile(dry_run=True)
    assert [(a.kind, a.target, a.done) for a in dry.actions] == [("lost_notebook", session.ref, False)]
    assert reload(session).status == NotebookStatus.READY

    report = reconcile()
    assert [(a.kind, a.target) for a in report.actions] == [("lost_notebook", session.ref)]
    session = reload(session)
    assert session.status == NotebookStatus.STOPPED and session.reason == SERVER_GONE
    (notice,) = Notice.objects.filter(user=ada)
    assert notice.text == SERVER_GONE and notice.level == "warning"
    assert not Allocation.objects.filter(ref=session.ref, ends_at__isnull=True).exists()
    assert reconcile().actions == []
    assert ledger_violations() == []


def test_a_server_the_portal_does_not_run_is_stopped_after_the_grace(course, quarter):
    NodeFactory(name="gpu01")
    ada = student(course, "ada")
    session = notebook_request(user=ada, profile="quarter")
    run_until(lambda: ready(session))
    # The portal ended the session but its stop never reached the hub (a worker died in between).
    now = timezone.now()
    NotebookSession.objects.filter(pk=session.pk).update(status=NotebookStatus.STOPPED, stopped_at=now)
    allocations_close(ref=Ref.notebook(session.pk), at=now)

    assert reconcile(now=now).actions == []  # within the grace: the pass may be stopping it
    assert hub().server(session.hub_user, session.server_name) is not None
    later = now + GRACE
    report = reconcile(now=later)
    target = f"{session.hub_user}/{session.server_name}"
    assert [(a.kind, a.target) for a in report.actions] == [("unknown_server", target)]
    assert report.actions[0].sentence.endswith("that the portal does not run (notebook stopped)")
    wait_until(lambda: gone_from_hub(session.hub_user, session.server_name))
    assert reconcile(now=later).actions == []
    assert ledger_violations() == []


def test_drill_the_hub_killed_with_sessions_running(course, quarter, settings):
    from labs.notebooks.localhub import LocalHub

    NodeFactory(name="gpu01")
    own = LocalHub(spawner="echo", portal_url="http://127.0.0.1:9")
    own.start(timeout=90)
    try:
        settings.NOTEBOOKS_HUB_API_URL, settings.NOTEBOOKS_HUB_PUBLIC_URL = own.api_url, own.public_url
        ada, bob = student(course, "ada"), student(course, "bob")
        first = notebook_request(user=ada, profile="quarter")
        second = notebook_request(user=bob, profile="quarter")
        run_until(lambda: ready(first) and ready(second))

        own.stop()  # killed: its echo servers go with it
        report = reconcile()
        assert report.actions == [] and any("notebooks-" in error for error in report.errors)
        assert reload(first).status == reload(second).status == NotebookStatus.READY  # down is not gone
        assert Allocation.objects.filter(ends_at__isnull=True).count() == 2

        own.start(timeout=90)
        report = reconcile()
        assert sorted(a.target for a in report.actions if a.kind == "lost_notebook") == sorted([first.ref, second.ref])
        for session in (first, second):
            assert reload(session).status == NotebookStatus.STOPPED
            assert Notice.objects.filter(user=session.user, ref=f"{session.ref}:gone").count() == 1
        assert reconcile().actions == []
        assert ledger_violations() == []
    finally:
        own.stop()
