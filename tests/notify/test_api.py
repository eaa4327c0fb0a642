"""GET|PUT /api/v1/me/notifications/, POST /api/v1/me/notifications/test/ for each role; chat addresses inside the
lab refused (SSRF); a slow or dead webhook never delays the request that caused the message."""

from __future__ import annotations

import pytest
from celery import current_app

from accounts.models import ChatTarget, DeliveryState, Notice, Notification
from accounts.tasks import notify_deliver
from tests.factories import CourseFactory, UserFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/me/notifications/"


@pytest.mark.parametrize("role", ["student", "teacher", "admin", "assistant"])
def test_everyone_signed_in_reads_and_sets_their_choices(role, api_as):
    client = api_as(role)
    body = client.get(URL).json()
    choices = {row["event"]: row["channels"] for row in body["events"]}
    assert choices["job.succeeded"] == {"portal": False, "email": True, "chat": False}  # job end by e-mail
    assert choices["notebook.cull"] == {"portal": True, "email": False, "chat": False}  # cull warnings in the portal
    assert body["chat_url"] == "" and body["failures"] == []
    answer = client.put(URL, {"events": {"job.succeeded": {"email": False, "portal": True}}}, format="json")
    assert answer.status_code == 200
    changed = {row["event"]: row["channels"] for row in answer.json()["events"]}
    assert changed["job.succeeded"] == {"portal": True, "email": False, "chat": False}
    assert {row["event"]: row["channels"] for row in client.get(URL).json()["events"]} == changed


def test_the_anonymous_get_401(api):
    assert api.get(URL).status_code == 401
    assert api.put(URL, {}, format="json").status_code == 401
    assert api.post(URL + "test/").status_code == 401


@pytest.mark.parametrize(
    "body",
    [
        {"events": {"job.nope": {"email": True}}},
        {"events": {"job.failed": {"pager": True}}},
        {"events": {"job.failed": {"email": "yes please"}}},
        {"events": ["job.failed"]},
    ],
)
def test_bad_choices_are_a_400_and_change_nothing(body, api_as):
    client = api_as("student")
    before = client.get(URL).json()
    answer = client.put(URL, body, format="json")
    assert answer.status_code == 400, answer.content
    assert client.get(URL).json() == before


@pytest.mark.parametrize(
    "url",
    [
        "json://127.0.0.1/hook",  # loopback
        "json://localhost:8000/hook",
        "jsons://10.1.2.3/hook",  # the lab's network
        "json://192.168.0.10/hook",
        "json://169.254.169.254/latest/meta-data",  # a cloud's metadata service
        "json://[::1]/hook",
        "matrix://user:pass@172.16.0.5/!room",
        "file:///etc/passwd",
        "windows://",  # a desktop notification on the server itself
        "syslog://",
        "not a url",
    ],
)
def test_chat_addresses_inside_the_lab_are_refused(url, api_as):
    client = api_as("student")
    answer = client.put(URL, {"chat_url": url}, format="json")
    assert answer.status_code == 400, answer.content
    assert "url" in answer.json().get("fields", answer.json())
    assert not ChatTarget.objects.exists()


def test_loopback_is_allowed_when_the_admin_says_so(api_as, webhook):
    client = api_as("student")
    answer = client.put(URL, {"chat_url": webhook.url()}, format="json")
    assert answer.status_code == 200 and answer.json()["chat_url"] == webhook.url()
    assert client.put(URL, {"chat_url": ""}, format="json").json()["chat_url"] == ""


def test_a_test_message_reaches_each_channel(user_of_role, smtp_server, webhook, on_commit):
    from rest_framework.test import APIClient

    ada = UserFactory(username="ada", email="ada@lab.example")
    client = APIClient()
    client.force_authenticate(ada)
    client.put(URL, {"chat_url": webhook.url()}, format="json")
    with on_commit():
        answer = client.post(URL + "test/")
    assert answer.status_code == 202 and answer.json() == {"queued": ["portal", "email", "chat"]}
    assert "This is a test notification from the portal." in smtp_server.wait_for(1)[0].get_content()
    assert webhook.wait_for(1)[0]["message"].startswith("This is a test notification")
    assert Notice.objects.get(user=ada).text == "This is a test notification from the portal."


@pytest.fixture
def broker_queue(settings):
    """Tasks go to the broker (Redis) as in production, not run in the request; purged after."""
    settings.CELERY_TASK_ALWAYS_EAGER = False  # Celery reads Django's settings as they are now
    yield settings
    settings.CELERY_TASK_ALWAYS_EAGER = True
    current_app.control.purge()


@pytest.mark.parametrize("trouble", ["slow", "unreachable"])
def test_a_slow_or_dead_webhook_never_delays_the_request(trouble, webhook, broker_queue, on_commit):
    from rest_framework.test import APIClient

    ada = UserFactory(username="ada", email="")
    url = webhook.url() if trouble == "slow" else "json://127.0.0.1:9/hook"  # port 9 (discard): nobody listens
    webhook.delay_s = 3 if trouble == "slow" else 0
    ChatTarget.objects.create(user=ada, url=url)
    client = APIClient()
    client.force_authenticate(ada)
    with on_commit():
        answer = client.post(URL + "test/")
    assert answer.status_code == 202
    # The request is answered with the chat message still waiting for a worker: nothing was sent from it.
    assert webhook.messages == []
    chat = Notification.objects.get(channel="chat")
    assert chat.state == DeliveryState.PENDING and chat.attempts == 0
    if trouble == "unreachable":  # the worker's turn (here, in-process): a failed try, then the failure is shown
        broker_queue.CELERY_TASK_ALWAYS_EAGER = True
        broker_queue.NOTIFY_RETRIES = 0
        assert notify_deliver.run(ada.pk, None, "chat") == {"sent": 0, "retry_in": None, "failed": 1}
        chat.refresh_from_db()
        assert chat.state == DeliveryState.FAILED and chat.attempts == 1


def test_a_teacher_sets_their_course_channel_on_the_account_page(client, webhook):
    tess = UserFactory(username="tess", role="teacher")
    course = CourseFactory(code="DL-101")
    course.teachers.add(tess)
    other = CourseFactory(code="ML-200")
    client.force_login(tess)
    page = client.get("/account/").content.decode()
    assert "Channel of DL-101 for its reservations" in page and "ML-200" not in page
    answer = client.post("/account/", {"action": "course-channel", "course": "DL-101", "url": webhook.url("c")})
    assert answer.status_code == 302
    assert ChatTarget.objects.get(course=course).url == webhook.url("c")
    refused = client.post("/account/", {"action": "course-channel", "course": "ML-200", "url": webhook.url("c")})
    assert refused.status_code == 403 and not ChatTarget.objects.filter(course=other).exists()
    inside = client.post("/account/", {"action": "course-channel", "course": "DL-101", "url": "json://10.0.0.1/x"})
    assert inside.status_code == 400


def test_a_student_sets_no_course_channel(client, webhook):
    ada = UserFactory(username="ada")
    course = CourseFactory(code="DL-101")
    client.force_login(ada)
    answer = client.post("/account/", {"action": "course-channel", "course": "DL-101", "url": webhook.url()})
    assert answer.status_code == 403 and not ChatTarget.objects.filter(course=course).exists()


def test_the_account_page_saves_the_choices(client, webhook):
    ada = UserFactory(username="ada")
    client.force_login(ada)
    answer = client.post("/account/", {"action": "notifications", "job.failed:chat": "on", "chat_url": webhook.url()})
    assert answer.status_code == 302
    body = client.get("/account/").content.decode()
    assert 'name="job.failed:chat" value="on" aria-label' in body
    assert ChatTarget.objects.get(user=ada).url == webhook.url()


def test_test_messages_are_rate_limited(api_as, settings):
    settings.RATE_LIMIT_NOTIFY_TEST = 2
    client = api_as("student")
    assert [client.post(URL + "test/").status_code for _ in range(3)] == [202, 202, 429]
