"""/ws/gpus/ ends when the credential it was opened with ends: a sign-out everywhere, a new password, signing out of
that browser, a revoked API token. Each open connection is looked at again every CREDENTIAL_RECHECK_S (made short
here); the client is told why, then the connection is closed with 4401."""

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from django.test import Client

from accounts.models import ApiToken
from accounts.services import token_create
from tests.factories import PASSWORD
from tests.labs.telemetry import test_websocket
from tests.labs.telemetry.test_collector import clean_store  # noqa: F401  (fixture)
from tests.labs.telemetry.test_websocket import ORIGIN, WAIT_S, collector, connect

pytestmark = pytest.mark.django_db(transaction=True)
lab = test_websocket.lab  # the fixture: four nodes, DL-101 and its people


@pytest.fixture(autouse=True)
def quick_recheck(settings):
    settings.CREDENTIAL_RECHECK_S = 0.2


def browser(user) -> tuple[Client, list]:
    """A signed-in browser, and the handshake headers of its live page."""
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client, [ORIGIN, (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())]


def token_socket_headers(user) -> tuple[ApiToken, list]:
    token, key = token_create(user=user, name="script")
    return token, [(b"authorization", f"Token {key}".encode())]


async def closed_after(socket) -> tuple[dict, dict]:
    """What the client sees once its credential ended: the closing message, then the close (waited for, never
    slept: within WAIT_S, which only a failing test reaches)."""
    while True:
        message = await socket.receive_output(WAIT_S)
        if message["type"] == "websocket.close":
            raise AssertionError(f"closed without saying why: {message}")
        if '"closing"' in message.get("text", ""):
            break
    import json

    return json.loads(message["text"]), await socket.receive_output(WAIT_S)


def scenario(headers, end, bystander_headers):
    """Open a socket with each of `headers` (one, or a list), end their credential with `end` (sync, in a thread),
    and collect what each client sees; a bystander's connection stays open."""
    tick = collector()
    many = isinstance(headers, tuple)

    async def run():
        await tick.tick()
        sockets = []
        for opened_with in headers if many else (headers,):
            socket, connected = await connect(opened_with)
            assert connected
            await socket.receive_json_from()
            sockets.append(socket)
        bystander, connected = await connect(bystander_headers)
        assert connected
        await bystander.receive_json_from()
        await database_sync_to_async(end)()
        seen = [await closed_after(socket) for socket in sockets]
        await bystander.send_to(text_data='{"type": "ping"}')
        pong = await bystander.receive_json_from()
        await bystander.disconnect()
        return seen, pong

    seen, pong = async_to_sync(run)()
    return (seen, pong) if many else (*seen[0], pong)


def test_sign_out_everywhere_closes_the_live_page_of_every_browser(lab):
    student = lab["student"]
    laptop, _ = browser(student)
    _, headers = browser(student)  # the phone, left signed in (or stolen)
    _, bystander = browser(lab["teacher"])

    def sign_out_everywhere():
        assert laptop.post("/account/sign-out-everywhere/", {"confirm": "yes"}).status_code == 302

    closing, close, pong = scenario(headers, sign_out_everywhere, bystander)
    assert closing == {"type": "closing", "code": 4401, "detail": closing["detail"]}
    assert "signed out" in closing["detail"] and "sign in again" in closing["detail"]
    assert close["type"] == "websocket.close" and close["code"] == 4401
    assert pong == {"type": "pong"}


def test_a_new_password_closes_the_live_page_and_the_scripts_socket(lab):
    student = lab["student"]
    _, headers = browser(student)
    _, token_headers = token_socket_headers(student)
    _, bystander = browser(lab["admin"])

    def new_password():
        student.set_password("a-new-long-pass-4090")
        student.save()

    seen, pong = scenario((headers, token_headers), new_password, bystander)
    for closing, close in seen:
        assert closing["code"] == close["code"] == 4401
    assert seen[0][0]["detail"] == "You were signed out (everywhere, or by a new password): sign in again."
    assert seen[1][0]["detail"].startswith("This API token was revoked on ")  # a new password revokes them all
    assert pong == {"type": "pong"}


def test_revoking_the_token_closes_the_socket_it_opened_and_says_why(lab):
    token, headers = token_socket_headers(lab["other"])
    _, other_token = token_socket_headers(lab["other"])  # the same person's other token stays

    def revoke():
        from accounts.services import token_revoke

        token_revoke(user=lab["other"], token_id=token.pk)

    closing, close, pong = scenario(headers, revoke, other_token)
    assert closing["detail"].startswith("This API token was revoked on ")
    assert close["code"] == 4401 and close["reason"].startswith("This API token was revoked")
    assert len(close["reason"].encode()) <= 123
    assert pong == {"type": "pong"}


def test_signing_out_of_that_browser_closes_its_live_page(lab):
    laptop, headers = browser(lab["teacher"])
    _, bystander = browser(lab["teacher"])  # the same person in another browser stays

    closing, close, pong = scenario(headers, lambda: laptop.post("/logout/"), bystander)
    assert closing["detail"] == "Your session ended: sign in again." and close["code"] == 4401
    assert pong == {"type": "pong"}


def test_a_switched_off_account_is_closed_with_4403(lab):
    _, headers = browser(lab["student"])
    _, bystander = browser(lab["teacher"])

    def switch_off():
        lab["student"].is_active = False
        lab["student"].save()

    closing, close, _ = scenario(headers, switch_off, bystander)
    assert closing["detail"] == "This account is switched off; ask the lab staff." and close["code"] == 4403
