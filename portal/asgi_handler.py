"""Django's ASGI handler, with the middleware chain and the view of a request run in one hop to its thread, and that
thread kept for later requests.

Django's own handler builds the chain for async: every middleware that can be async runs on the event loop, and
Django's built-in ones (MiddlewareMixin) then hop into the request's thread and back for each process_request and
process_response; one sync-only middleware in the middle turns the hop around again, and the (sync) view is one
more; the request_started signal and the response's closing (request_finished) are two more. Each hop waits for the
event loop, which under load also carries the WebSockets. Here the chain is built sync, as under WSGI, and the
signal, the chain and the closing of a response in memory run in one `sync_to_async` in the request's
thread-sensitive context: the same middleware, the same order, one round trip. A streamed response is closed after
it is sent, as Django does, in the same thread; so is a request whose client went away before its answer.

Django gives each request's context a thread of its own: it starts one (the event loop waits until it runs) and, at
the end, starts another to join it. Here the context runs on a thread lent from a stack of idle ones
(`ThreadSensitiveContext(executor=...)`, asgiref's way to own the thread): still one thread per request at a time,
everything a request runs in sync (its signals, chain, view, closing) on that one thread, but no thread started or
joined per request, and the thread's database connection object (Django's per-thread `connections`) is reused as
under WSGI (the connection itself still goes back to the pool, or is closed, at the end of each request). A thread
still busy when its request ends (a client that went away mid-view) is not lent again: it finishes and exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from concurrent.futures import Future, ThreadPoolExecutor

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.http import FileResponse
from django.urls import set_script_prefix

IDLE_THREADS_KEPT = 16  # beyond this many idle request threads, a returning one exits


class RequestThread(ThreadPoolExecutor):
    """One thread, running one call at a time, that knows whether it is idle."""

    def __init__(self) -> None:
        super().__init__(max_workers=1, thread_name_prefix="request")
        self._lock = threading.Lock()
        self._pending = 0

    def submit(self, fn, /, *args, **kwargs) -> Future:
        with self._lock:
            self._pending += 1
        future = super().submit(fn, *args, **kwargs)
        future.add_done_callback(self._done)
        return future

    def _done(self, _future: Future) -> None:
        with self._lock:
            self._pending -= 1

    @property
    def idle(self) -> bool:
        with self._lock:
            return self._pending == 0


class OneHopASGIHandler(ASGIHandler):
    def __init__(self) -> None:
        super().__init__()
        self._idle: list[RequestThread] = []  # touched only on the event loop

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)  # get_response (sync) calls the chain, in _respond

    def _respond(self, scope, request, error_response, served: dict):
        """In the request's thread: the request_started signal, the answer, and (kept in memory) its closing."""
        signals.request_started.send(sender=self.__class__, scope=scope)
        if request is None:
            response = error_response
        else:
            response = self.get_response(request)
            response._handler_class = self.__class__
            if isinstance(response, FileResponse):
                response.block_size = self.chunk_size  # the server chunks what it sends
        served["response"] = response
        if not response.streaming:
            response.close()  # request_finished: the thread's database connection goes back before the bytes go out
            served["closed"] = True
        return response

    @staticmethod
    def _finish(served: dict) -> None:
        """In the request's thread, after _respond: close what it did not (a stream; or an answer nobody waited for,
        whose closing _respond already did unless it failed)."""
        if served.get("closed"):
            return
        response = served.get("response")
        if response is not None:
            response.close()
        else:
            signals.request_finished.send(sender=OneHopASGIHandler)

    async def handle(self, scope, receive, send) -> None:
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        set_script_prefix(get_script_prefix(scope))
        request, error_response = self.create_request(scope, body_file)
        if request is None:
            body_file.close()
        served: dict = {}

        async def answer() -> None:
            response = await sync_to_async(self._respond, thread_sensitive=True)(scope, request, error_response, served)
            with contextlib.suppress(asyncio.CancelledError):  # the client went away while it was sent
                await self.send_response(response, send)

        tasks = [asyncio.create_task(self.listen_for_disconnect(receive)), asyncio.create_task(answer())]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:  # the disconnect listener first: it never fails but with RequestAborted
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                continue
            try:
                task.result()
            except RequestAborted:
                pass
            except AssertionError:
                body_file.close()
                raise
        if not served.get("closed"):
            await sync_to_async(self._finish, thread_sensitive=True)(served)
        body_file.close()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        thread = self._idle.pop() if self._idle else RequestThread()
        try:
            async with ThreadSensitiveContext(executor=thread):
                await self.handle(scope, receive, send)
        finally:
            if thread.idle and len(self._idle) < IDLE_THREADS_KEPT:
                self._idle.append(thread)
            else:
                thread.shutdown(wait=False)
