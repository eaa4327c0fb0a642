"""`GET /api/v1/jobs/{id}/logs/?follow=1` under ASGI, answered before Django's handler (portal/asgi.py routes it).

Why not the Django view: Django's ASGI handler runs a request's sync code (the middleware, DRF) in a thread of the
request's own and keeps that thread until the response is over, so a stream that lasts as long as a job would hold
one idle thread per follower. Here the follower is a coroutine: it signs the caller in as the WebSocket does
(session cookie or `Authorization: Token`, portal.ws_auth), checks the request with the view's own code
(jobs.api.log_request: the same 400/404 answers; its own refusals are the API's, headers and all) in a thread of the
shared pool, gives its database connection back, and then streams jobs.log_follow.follow_log, stopping when the
client goes away, or when the token or session it signed in with ends (looked at again every CREDENTIAL_RECHECK_S:
revoked, signed out everywhere, a new password; the client that resumes gets the API's 401 saying why). Under WSGI
(and the test client) the DRF view (jobs.api.JobLogsApi) answers ?follow=1 itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from types import SimpleNamespace
from urllib.parse import parse_qs

from asgiref.sync import sync_to_async
from channels.auth import AuthMiddlewareStack
from django.http import HttpResponse, JsonResponse, QueryDict
from rest_framework import exceptions, serializers

from accounts.credentials import Credential, Ended, credential_of_scope, credentials_ended
from accounts.errors import PortalError
from jobs.api import follow_headers, log_request
from jobs.log_follow import Follow, follow_log, release_connection
from portal.api.auth import ExpiringTokenAuthentication
from portal.api.errors import exception_handler, json_server_error
from portal.web.errors import bad_request
from portal.ws_auth import TokenAuthMiddleware, own_origin

log = logging.getLogger("portal.api")
PATH = re.compile(r"^/api/v1/jobs/(?P<job_id>[0-9]{1,15})/logs/$")
TRUE = {value for value in serializers.BooleanField.TRUE_VALUES if isinstance(value, str)}  # as the view reads it


def is_follow(scope) -> bool:
    if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD") or not PATH.match(scope["path"]):
        return False
    try:
        query = parse_qs(scope.get("query_string", b"").decode("utf-8"), keep_blank_values=True)
    except UnicodeDecodeError:
        return False  # Django's view answers what is malformed
    follow = query.get("follow", [])
    return bool(follow) and follow[-1] in TRUE  # the last one counts, as the view's QueryDict reads it


def _check(scope, job_id: int, query_string: str) -> tuple[Follow, Credential | None]:
    try:
        job, values, attempt = log_request(scope["user"], job_id, QueryDict(query_string))
        return Follow(job.pk, attempt, values["rank"], values.get("since", 0)), credential_of_scope(scope)
    finally:
        release_connection()


def _ended(credential: Credential) -> Ended | None:
    try:
        return credentials_ended([credential]).get(credential)
    finally:
        release_connection()


async def _answer(send, response: HttpResponse) -> None:
    """Send a whole Django response: its status, headers and body."""
    headers = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in response.items()]
    headers.append((b"content-length", str(len(response.content)).encode()))
    await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": response.content})


def _api_error(exc: Exception) -> JsonResponse:
    """What the API answers for `exc` (portal.api.errors), with its headers (Retry-After, WWW-Authenticate)."""
    if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        exc.auth_header = ExpiringTokenAuthentication().authenticate_header(None)  # as DRF's view sets it
    error = exception_handler(exc, {})
    headers = {name: value for name, value in error.items() if name.lower() != "content-type"}
    return JsonResponse(error.data, status=error.status_code, headers=headers)


async def follow_app(scope, receive, send) -> None:
    if own_origin(scope) is None:  # the Host is not one of ALLOWED_HOSTS: Django's 400 (handler400) for the API
        await _answer(send, bad_request(SimpleNamespace(path=scope["path"])))
        return
    user = scope.get("user")
    if user is None or not user.is_authenticated:
        if scope.get("auth") == "token":  # a token that did not sign in: the API's 401 with the token's refusal
            await _answer(send, _api_error(exceptions.AuthenticationFailed(scope.get("auth_refusal"))))
        else:
            await _answer(send, _api_error(exceptions.NotAuthenticated()))
        return
    job_id = int(PATH.match(scope["path"])["job_id"])
    try:
        query_string = scope.get("query_string", b"").decode("utf-8")
        follow, credential = await sync_to_async(_check, thread_sensitive=False)(scope, job_id, query_string)
    except (exceptions.APIException, PortalError, UnicodeDecodeError) as exc:
        await _answer(send, _api_error(exceptions.ParseError() if isinstance(exc, UnicodeDecodeError) else exc))
        return
    except Exception:  # the database gone, say: the API's 500, logged, never a bare one from the server
        log.exception("Following the log of job %s failed", job_id)
        await _answer(send, json_server_error(None))
        return
    if credential is None:  # signed in, yet by nothing that can be looked at again: not followed
        await _answer(send, _api_error(exceptions.NotAuthenticated()))
        return

    async def still_holds() -> bool:
        ended = await sync_to_async(_ended, thread_sensitive=False)(credential)
        if ended is not None:
            log.info("Stopped following the log of job %s for %s: %s", job_id, user.username, ended.detail)
        return ended is None

    headers = [(name.lower().encode(), value.encode()) for name, value in follow_headers(follow).items()]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    gone = asyncio.Event()

    async def watch_disconnect() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        gone.set()

    watcher = asyncio.create_task(watch_disconnect())
    try:
        if scope["method"] == "GET":
            async for chunk in follow_log(follow, stop=gone, still_holds=still_holds):
                if gone.is_set():
                    return
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher


class LogFollowRouter:
    """HTTP: a followed log to the follower above, everything else to Django."""

    def __init__(self, django_app) -> None:
        self.django_app = django_app
        self.follower = AuthMiddlewareStack(TokenAuthMiddleware(follow_app))

    async def __call__(self, scope, receive, send):
        if is_follow(scope):
            return await self.follower(scope, receive, send)
        return await self.django_app(scope, receive, send)
