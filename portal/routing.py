"""WebSocket routes; any other path is refused at the handshake."""

from channels.security.websocket import WebsocketDenier
from django.urls import path, re_path

from labs.consumers import GpuStatusConsumer

websocket_urlpatterns: list = [
    path("ws/gpus/", GpuStatusConsumer.as_asgi()),
    re_path(r"", WebsocketDenier.as_asgi()),
]
