"""A followed log (`GET /api/v1/jobs/{id}/logs/?follow=1`, answered under ASGI by portal/log_follow_app.py) ends when
the token or session it was opened with ends: a revoked token, a new password, a sign-out everywhere. The follower
looks again every CREDENTIAL_RECHECK_S (made short here); resuming then gets the API's 401 that says why.

The job runs and writes nothing: without the credential ending, its stream would last JOBS_LOG_FOLLOW_MAX_S."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import async_to_sync
from asgiref.testing import ApplicationCommunicator
from channels.db import database_sync_to_async
from django.test import Client
from django.utils import timezone

import jobs.backends.local
from accounts.services import sessions_end_everywhere, token_create, token_revoke
from jobs.backends.base import LogPage
from jobs.backends.local import LocalJobs
from jobs.models import JobState
from portal.asgi import application
from tests.asgi_scope import http_get
from tests.factories import PASSWORD, UserFactory
from tests.jobs.factories import JobFactory

pytestmark = pytest.mark.django_db(transaction=True)  # the follower reads from threads of its own
WAIT_S = 30  # only a failing test waits this long


class Quiet(LocalJobs):
    """A running job that has written nothing yet: every read finds no new bytes."""

    def logs(self, ref, *, rank=0, tail_lines=None, offset=None, limit_bytes=None) -> LogPage:
        return LogPage(b"", offset, offset, offset)


@pytest.fixture(autouse=True)
def quiet_job_backend(settings, monkeypatch):
    monkeypatch.setattr(jobs.backends.local, "LocalJobs", Quiet)
    settings.JOBS_BACKEND = "local"
    settings.JOBS_LOG_FOLLOW_POLL_S = 0.05
    settings.JOBS_LOG_FOLLOW_STATE_S = 0.1
    settings.JOBS_LOG_FOLLOW_MAX_S = 3600
    settings.CREDENTIAL_RECHECK_S = 0.2


def follower(job_id: int, headers: list[tuple[bytes, bytes]]) -> ApplicationCommunicator:
    scope = http_get(f"/api/v1/jobs/{job_id}/logs/", query=b"follow=1", headers=headers)
    return ApplicationCommunicator(application, scope)


async def stream_until_it_ends(communicator: ApplicationCommunicator, end) -> tuple[int, bytes]:
    """Open the stream, end the credential (`end`, in a thread), and wait for the stream's last piece."""
    await communicator.send_input({"type": "http.request", "body": b"", "more_body": False})
    start = await communicator.receive_output(WAIT_S)
    assert start["type"] == "http.response.start", start
    await database_sync_to_async(end)()
    body = b""
    while True:
        message = await communicator.receive_output(WAIT_S)
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    await communicator.wait(WAIT_S)
    return start["status"], body


def resumed(job_id: int, headers) -> tuple[int, dict]:
    async def run():
        communicator = follower(job_id, headers)
        await communicator.send_input({"type": "http.request", "body": b"", "more_body": False})
        start = await communicator.receive_output(WAIT_S)
        body = await communicator.receive_output(WAIT_S)
        await communicator.wait(WAIT_S)
        return start["status"], json.loads(body["body"])

    return async_to_sync(run)()


def running_job(owner):
    return JobFactory(owner=owner, state=JobState.RUNNING, node_names=["gpu01"], started_at=timezone.now())


def browser_cookie(user) -> tuple[Client, list]:
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client, [(b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())]


def test_revoking_the_token_ends_the_log_it_follows():
    ada = UserFactory(username="ada")
    job = running_job(ada)
    token, key = token_create(user=ada, name="laptop")
    headers = [(b"authorization", f"Token {key}".encode())]

    status, body = async_to_sync(stream_until_it_ends)(
        follower(job.pk, headers), lambda: token_revoke(user=ada, token_id=token.pk)
    )

    assert status == 200 and body == b""
    again, answer = resumed(job.pk, headers)
    assert again == 401 and answer["detail"].startswith("This API token was revoked on ")


@pytest.mark.parametrize("credential", ["token", "session"])
def test_a_new_password_ends_the_followed_log(credential):
    ada = UserFactory(username="ada")
    job = running_job(ada)
    if credential == "token":
        headers = [(b"authorization", f"Token {token_create(user=ada)[1]}".encode())]
    else:
        headers = browser_cookie(ada)[1]

    def new_password():
        ada.set_password("a-new-long-pass-4090")
        ada.save()

    status, _ = async_to_sync(stream_until_it_ends)(follower(job.pk, headers), new_password)

    assert status == 200
    assert resumed(job.pk, headers)[0] == 401


def test_sign_out_everywhere_ends_the_followed_log_of_another_browser_and_not_bobs():
    ada, bob = UserFactory(username="ada"), UserFactory(username="bob", role="admin")
    job = running_job(ada)
    _, phone = browser_cookie(ada)
    _, bobs = browser_cookie(bob)

    async def run():
        bobs_stream = follower(job.pk, bobs)
        await bobs_stream.send_input({"type": "http.request", "body": b"", "more_body": False})
        assert (await bobs_stream.receive_output(WAIT_S))["status"] == 200
        ended = await stream_until_it_ends(follower(job.pk, phone), lambda: sessions_end_everywhere(user=ada))
        # bob's stream is still open: his next message is not the end (the job's end would end it; it runs on)
        assert bobs_stream.output_queue.empty() and not bobs_stream.future.done()
        await bobs_stream.send_input({"type": "http.disconnect"})
        await bobs_stream.wait(WAIT_S)
        return ended

    status, body = async_to_sync(run)()
    assert status == 200 and body == b""
    again, answer = resumed(job.pk, phone)
    assert again == 401 and answer["code"] == "not_authenticated"
