"""Under ASGI the whole middleware chain and the (sync) view of a request run in one thread, reached in one hop
from the event loop (portal.asgi_handler), and the chain still does everything it does under WSGI."""

import asyncio
import threading

import asgiref.sync
import pytest
from asgiref.testing import ApplicationCommunicator
from django.http import HttpResponse
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


urlpatterns = [path("where/", where_am_i)]


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
    # The request_started signal, the chain with its view, the response's close; Django's own handler takes 9.
    assert hops == ["thread"] * 3
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
