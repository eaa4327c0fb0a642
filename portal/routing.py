"""WebSocket routes. The live GPU status consumer joins here with its issue."""

websocket_urlpatterns: list = []
