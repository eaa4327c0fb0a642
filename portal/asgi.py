"""ASGI entry point: Django for HTTP (a followed job log streams beside it), Channels for WebSockets (same sessions
or API tokens, origin checked).

The lifespan events start the embedded telemetry collector on the server's own event loop when
there is no Redis (the in-memory channel layer lives in this process); with Redis it runs apart.

uvicorn runs no system checks: the app refuses to load on a check error (settings that are wrong together).
"""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
django.setup(set_prefix=False)

from portal.asgi_handler import OneHopASGIHandler  # noqa: E402  (needs Django set up first)

django_asgi_app = OneHopASGIHandler()

from django.core.exceptions import ImproperlyConfigured  # noqa: E402

from portal.checks import asgi_database_problem, refuse_to_start_misconfigured  # noqa: E402  (needs Django set up)

refuse_to_start_misconfigured()
if (problem := asgi_database_problem()) is not None:
    raise ImproperlyConfigured(problem)

from channels.auth import AuthMiddlewareStack  # noqa: E402  (needs Django set up first)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from labs.telemetry.collector import ensure_embedded_collector, stop_embedded_collector  # noqa: E402
from portal.log_follow_app import LogFollowRouter  # noqa: E402
from portal.routing import websocket_urlpatterns  # noqa: E402
from portal.ws_auth import OriginCheck, TokenAuthMiddleware  # noqa: E402


async def lifespan(scope, receive, send):
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            ensure_embedded_collector()
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await stop_embedded_collector()
            await send({"type": "lifespan.shutdown.complete"})
            return


application = ProtocolTypeRouter(
    {
        # A followed job log streams from a coroutine, not from a request thread of Django's (see that module).
        "http": LogFollowRouter(django_asgi_app),
        "websocket": OriginCheck(AuthMiddlewareStack(TokenAuthMiddleware(URLRouter(websocket_urlpatterns)))),
        "lifespan": lifespan,
    }
)
