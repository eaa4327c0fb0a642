"""WebSocket routes; any other path is refused at the handshake."""

from channels.security.websocket import WebsocketDenier
from django.urls import re_path

from labs.telemetry import urls as telemetry_urls

websocket_urlpatterns: list = [
    *telemetry_urls.websocket_urlpatterns,
    re_path(r"", WebsocketDenier.as_asgi()),
]
