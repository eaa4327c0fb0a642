"""Django's ASGI handler, with the middleware chain and the view of a request run in one hop to its thread.

Django's own handler builds the chain for async: every middleware that can be async runs on the event loop, and
Django's built-in ones (MiddlewareMixin) then hop into the request's thread and back for each process_request and
process_response; one sync-only middleware in the middle turns the hop around again, and the (sync) view is one
more. Each hop waits for the event loop, which under load also carries the WebSockets. Here the chain is built
sync, as under WSGI, and called with one `sync_to_async` in the request's thread-sensitive context
(ThreadSensitiveContext: a thread of its own per request): the same middleware, the same order, one round trip.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIHandler


class OneHopASGIHandler(ASGIHandler):
    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)
        self._middleware_chain = sync_to_async(self._middleware_chain, thread_sensitive=True)
