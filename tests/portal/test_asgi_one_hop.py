"""Under ASGI the whole middleware chain and the (sync) view of a request run in one thread, reached in one hop
from the event loop (portal.asgi_handler), and the chain still does everything it does under WSGI. The thread is
kept for the next request; a stream is closed after it is sent, and a request whose client left is closed once."""

import asyncio
import threading

import asgiref.sync
import pytest
from asgiref.testing import ApplicationCommunicator
from django.core import signals
from django.http import HttpResponse, StreamingHttpResponse
from django.urls import path

from portal.asgi_handler import OneHopASGIHandler
from tests.asgi_scope import http_get

pytestmark = pytest.mark.django_db(transaction=True)
SEEN: dict[str, int] = {}


class RecordThread:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        SEEN["top"] = threading.get_ident()
        return self.get_response(request)


def where_am_i(request):
    SEEN["view"] = threading.get_ident()
    return HttpResponse(f"hello {request.user.is_authenticated}")


def stream(request):
    def chunks():
        SEEN["streamed"] = threading.get_ident()
        yield b"one "
        yield b"two"

    return StreamingHttpResponse(chunks())


VIEW_STARTED, VIEW_RELEASED = threading.Event(), threading.Event()


def slow(request):
    SEEN["view"] = threading.get_ident()
    VIEW_STARTED.set()
    VIEW_RELEASED.wait(timeout=30)
    return HttpResponse("too late")


urlpatterns = [path("where/", where_am_i), path("stream/", stream), path("slow/", slow)]


def _get(app, path_: str) -> tuple[int, dict, bytes]:
    async def run():
        SEEN["loop"] = threading.get_ident()
        scope = http_get(path_, host="localhost")
        talk = ApplicationCommunicator(app, scope)
        await talk.send_input({"type": "http.request", "body": b"", "more_body": False})
        start = await talk.receive_output(timeout=20)
        body = await talk.receive_output(timeout=20)
        await talk.wait(timeout=20)
        return start["status"], {k.decode().lower(): v.decode() for k, v in start["headers"]}, body["body"]

    return asyncio.run(run())


@pytest.mark.urls(__name__)
def test_the_chain_and_the_view_share_one_thread_off_the_loop(settings, monkeypatch):
    settings.MIDDLEWARE = ["tests.portal.test_asgi_one_hop.RecordThread", *settings.MIDDLEWARE]
    hops = []
    to_thread, to_loop = asgiref.sync.SyncToAsync.__call__, asgiref.sync.AsyncToSync.__call__

    async def into_thread(self, *args, **kwargs):
        hops.append("thread")
        return await to_thread(self, *args, **kwargs)

    def onto_loop(self, *args, **kwargs):
        hops.append("loop")
        return to_loop(self, *args, **kwargs)

    monkeypatch.setattr(asgiref.sync.SyncToAsync, "__call__", into_thread)
    monkeypatch.setattr(asgiref.sync.AsyncToSync, "__call__", onto_loop)
    status, headers, body = _get(OneHopASGIHandler(), "/where/")
    # The request_started signal, the chain with its view and the response's close in one; Django's own takes 11.
    assert hops == ["thread"]
    assert status == 200 and body == b"hello False"
    assert SEEN["top"] == SEEN["view"] != SEEN["loop"]
    # The portal's middleware ran around it: the request id, the security headers.
    assert headers["x-request-id"] and headers["x-frame-options"] == "DENY"
    assert "content-security-policy" in headers


def test_the_portals_pages_answer_through_it():
    # portal/asgi.py serves Django with this handler (the live-server tests run it under uvicorn).
    app = OneHopASGIHandler()
    status, _, body = _get(app, "/healthz")
    assert status == 200, body
    status, _, body = _get(app, "/no-such-page/")
    assert status == 404 and b"<html" in body.lower()


@pytest.fixture
def signals_seen():
    """(signal name, thread) in the order the request's signals fired."""
    seen = []

    def started(**kwargs):
        seen.append(("started", threading.get_ident()))

    def finished(**kwargs):
        seen.append(("finished", threading.get_ident()))

    signals.request_started.connect(started)
    signals.request_finished.connect(finished)
    yield seen
    signals.request_started.disconnect(started)
    signals.request_finished.disconnect(finished)


@pytest.mark.urls(__name__)
def test_the_next_request_runs_on_the_same_thread_with_its_own_signals(signals_seen):
    app = OneHopASGIHandler()
    assert _get(app, "/where/")[2] == b"hello False"
    first = SEEN["view"]
    assert _get(app, "/where/")[2] == b"hello False"
    assert SEEN["view"] == first  # no thread started (and joined) per request
    assert signals_seen == [("started", first), ("finished", first)] * 2


@pytest.mark.urls(__name__)
def test_a_stream_is_closed_after_it_is_sent_in_the_requests_thread(signals_seen):
    app = OneHopASGIHandler()

    async def run():
        talk = ApplicationCommunicator(app, http_get("/stream/", host="localhost"))
        await talk.send_input({"type": "http.request", "body": b"", "more_body": False})
        start = await talk.receive_output(timeout=20)
        body = b""
        while True:
            message = await talk.receive_output(timeout=20)
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        assert [name for name, _ in signals_seen] == ["started"]  # not closed before it was sent
        await talk.wait(timeout=20)
        return start["status"], body

    assert asyncio.run(run()) == (200, b"one two")
    assert [name for name, _ in signals_seen] == ["started", "finished"]
    assert signals_seen[0][1] == signals_seen[1][1]


@pytest.mark.urls(__name__)
def test_a_request_whose_client_left_is_closed_once_in_its_thread(signals_seen):
    VIEW_STARTED.clear()
    VIEW_RELEASED.clear()
    app = OneHopASGIHandler()

    async def run():
        talk = ApplicationCommunicator(app, http_get("/slow/", host="localhost"))
        await talk.send_input({"type": "http.request", "body": b"", "more_body": False})
        assert await asyncio.to_thread(VIEW_STARTED.wait, 20)
        await talk.send_input({"type": "http.disconnect"})
        VIEW_RELEASED.set()
        await talk.wait(timeout=20)
        assert talk.output_queue.empty()  # nothing was sent to nobody

    asyncio.run(run())
    assert signals_seen == [("started", SEEN["view"]), ("finished", SEEN["view"])]
    assert _get(app, "/where/")[2] == b"hello False"  # and the next request is served
