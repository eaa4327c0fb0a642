"""Telemetry routes: the live grid page (`urlpatterns`), the v1 API (`api_urlpatterns`) and the live stream
(`websocket_urlpatterns`), included by portal/urls.py and portal/routing.py. The node pages are the core's."""

from django.urls import path

from labs.telemetry import api, views
from labs.telemetry.consumers import GpuStatusConsumer

urlpatterns = [
    path("lab/gpus/", views.gpu_board, name="gpus"),
]

api_urlpatterns = [
    path("gpus/", api.GpuListApi.as_view(), name="gpus"),
    path("agent/samples/", api.AgentSamplesApi.as_view(), name="agent-samples"),
]

websocket_urlpatterns = [
    path("ws/gpus/", GpuStatusConsumer.as_asgi()),
]
