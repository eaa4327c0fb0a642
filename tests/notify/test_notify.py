"""notify(): each event reaches the channels a person chose, once; a burst is one message; a failing webhook is
retried and then shown on the account page; chat addresses inside the lab are refused."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import transaction

from accounts.models import ChatTarget, DeliveryState, Notice, Notification, NotifyPreference
from accounts.notify import EVENTS, notify
from tests.factories import CourseFactory, UserFactory

pytestmark = pytest.mark.django_db

CONTEXTS = {
    "job.started": {"name": "train", "id": 7, "detail": "node01"},
    "job.succeeded": {"name": "train", "id": 7},
    "job.failed": {"name": "train", "id": 7, "detail": "exit code 1"},
    "job.preempted": {"name": "train", "id": 7, "detail": "the node is reserved"},
    "job.stuck": {"name": "train", "id": 7, "detail": "waits for 4 GPUs"},
    "notebook.cull": {"name": "Small", "at": "2026-11-27T15:00:00+00:00"},
    "notebook.session_end": {"name": "Small", "at": "2026-11-27T15:00:00+00:00"},
    "reservation.approved": {"title": "DL lab", "at": "2026-11-28T10:00:00+00:00"},
    "reservation.rejected": {"title": "DL lab", "reason": "exams week"},
    "reservation.starting": {"title": "DL lab", "at": "2026-11-28T10:00:00+00:00", "minutes": 30},
    "reservation.no_show": {"title": "DL lab", "minutes": 20},
    "budget.threshold": {"name": "DL-101", "threshold": 80},
    "request.decided": {"what": "10 GPU-hours", "decision": "approved", "reason": "fine"},
    "maintenance.announced": {
        "nodes": "node01",
        "starts_at": "2026-11-28T08:00:00+00:00",
        "ends_at": "2026-11-28T12:00:00+00:00",
        "reason": "new drivers",
    },
}


def test_every_event_has_a_test_context():
    assert set(CONTEXTS) == set(EVENTS)


def _wants(user, event, *channels):
    for channel in ("portal", "email", "chat"):
        NotifyPreference.objects.update_or_create(
            user=user, event=event, channel=channel, defaults={"enabled": channel in channels}
        )


@pytest.mark.parametrize("event", sorted(CONTEXTS))
def test_each_event_reaches_email_and_webhook_once(event, smtp_server, webhook, on_commit):
    ada = UserFactory(username="ada", email="ada@lab.example")
    ChatTarget.objects.create(user=ada, url=webhook.url())
    _wants(ada, event, "email", "chat")
    with on_commit(), transaction.atomic():
        assert notify([ada], event, CONTEXTS[event]) == 2
    (mail,) = smtp_server.wait_for(1)
    (hook,) = webhook.wait_for(1)
    sentence = mail.get_content().splitlines()[0]
    assert sentence and sentence in hook["message"]
    assert Notification.objects.filter(state=DeliveryState.SENT).count() == 2
    assert not Notice.objects.exists()  # the portal was not chosen
    assert len(smtp_server.messages) == 1 and len(webhook.messages) == 1


def test_defaults_job_end_by_email_and_cull_warnings_in_the_portal(smtp_server, on_commit):
    ada = UserFactory(username="ada", email="ada@lab.example")
    with on_commit():
        notify([ada], "job.failed", CONTEXTS["job.failed"])
        notify([ada], "notebook.cull", CONTEXTS["notebook.cull"])
    (mail,) = smtp_server.wait_for(1)
    assert "Your job “train” (#7) failed: exit code 1" in mail.get_content()
    (notice,) = Notice.objects.filter(user=ada)
    assert notice.text.startswith("Your notebook “Small” looks idle and will be stopped at")


def test_email_speaks_the_persons_language(smtp_server, on_commit):
    ada = UserFactory(username="ada", email="ada@lab.example")
    ada.language = "pt-br"
    ada.save()
    with on_commit():
        notify([ada], "job.succeeded", CONTEXTS["job.succeeded"])
    (mail,) = smtp_server.wait_for(1)
    assert "train" in mail.get_content()


def test_a_burst_is_one_message_per_person_and_channel(smtp_server, webhook, on_commit):
    ada = UserFactory(username="ada", email="ada@lab.example")
    bob = UserFactory(username="bob", email="bob@lab.example")
    ChatTarget.objects.create(user=ada, url=webhook.url())
    _wants(ada, "job.succeeded", "email", "chat")
    with on_commit(), transaction.atomic():  # a sweep of 20 jobs ending
        for n in range(20):
            notify([ada, bob], "job.succeeded", {"name": f"run-{n}", "id": n})
    smtp_server.wait_for(2)
    (to_ada,) = smtp_server.to("ada@lab.example")
    (to_bob,) = smtp_server.to("bob@lab.example")
    assert " ".join(str(to_ada["Subject"]).split()) == "[GPU Lab] 20 notifications"
    assert to_ada.get_content().count("- Your job “run-") == 20
    assert to_bob.get_content().count("- Your job “run-") == 20
    (hook,) = webhook.wait_for(1)
    assert hook["title"] == "[GPU Lab] 20 notifications"
    assert len(webhook.messages) == 1 and len(smtp_server.messages) == 2


def test_a_failing_webhook_is_retried_then_shown_on_the_account_page(webhook, on_commit, client, settings):
    webhook.status = 500
    ada = UserFactory(username="ada", email="")
    ChatTarget.objects.create(user=ada, url=webhook.url())
    _wants(ada, "job.failed", "chat")
    with on_commit():
        notify([ada], "job.failed", CONTEXTS["job.failed"])
    assert len(webhook.wait_for(3)) == 1 + settings.NOTIFY_RETRIES  # the first try and each retry
    (row,) = Notification.objects.all()
    assert row.state == DeliveryState.FAILED and row.attempts == 1 + settings.NOTIFY_RETRIES
    client.force_login(ada)
    page = client.get("/account/").content.decode()
    assert "These messages could not be delivered:" in page
    assert "Your job “train” (#7) failed: exit code 1" in page


def test_a_webhook_that_recovers_gets_the_message_once(webhook, on_commit, monkeypatch):
    from accounts.notify import delivery

    calls = []
    real = delivery.send_chat

    def flaky(url, subject, body):
        calls.append(subject)
        if len(calls) == 1:
            raise delivery.DeliveryFailed("down for a moment")
        return real(url, subject, body)

    monkeypatch.setattr(delivery, "send_chat", flaky)
    ada = UserFactory(username="ada", email="")
    ChatTarget.objects.create(user=ada, url=webhook.url())
    _wants(ada, "job.failed", "chat")
    with on_commit():
        notify([ada], "job.failed", CONTEXTS["job.failed"])
    assert len(webhook.wait_for(1)) == 1
    (row,) = Notification.objects.all()
    assert row.state == DeliveryState.SENT and row.attempts == 1


def test_a_rolled_back_change_tells_nobody(smtp_server, on_commit):
    ada = UserFactory(username="ada", email="ada@lab.example")
    with on_commit(), pytest.raises(RuntimeError), transaction.atomic():
        notify([ada], "job.failed", CONTEXTS["job.failed"])
        raise RuntimeError("the write failed")
    assert not Notification.objects.exists()
    assert smtp_server.messages == []


def test_the_course_channel_hears_its_reservations(webhook, on_commit):
    course = CourseFactory(code="DL-101")
    ChatTarget.objects.create(course=course, url=webhook.url("class"))
    tess = UserFactory(username="tess", role="teacher", email="")
    _wants(tess, "reservation.starting")
    with on_commit():
        notify([tess], "reservation.starting", CONTEXTS["reservation.starting"], course=course)
    (hook,) = webhook.wait_for(1)
    assert hook["path"] == "/class"
    assert "The reservation “DL lab” starts at" in hook["message"]


def test_without_a_broker_the_periodic_sweep_sends_what_is_due(smtp_server, on_commit, settings, frozen_now):
    """The embedded run (tasks would run inside the request): nothing is sent from the request; the periodic
    runner's sweep sends it once the digest window is over, once."""
    from accounts.tasks import notify_sweep

    settings.NOTIFY_SEND_FROM_PERIODIC = True
    settings.NOTIFY_DIGEST_WINDOW_S = 30
    now = frozen_now("2026-11-27 10:00")
    ada = UserFactory(username="ada", email="ada@lab.example")
    with on_commit():
        notify([ada], "job.failed", CONTEXTS["job.failed"])
        notify([ada], "job.succeeded", CONTEXTS["job.succeeded"])
    assert smtp_server.messages == [] and notify_sweep() == 0  # inside the window
    frozen_now(now + dt.timedelta(seconds=30))
    assert notify_sweep() == 1
    (mail,) = smtp_server.wait_for(1)
    assert " ".join(str(mail["Subject"]).split()) == "[GPU Lab] 2 notifications"
    assert notify_sweep() == 0 and len(smtp_server.messages) == 1
