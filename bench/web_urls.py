"""The portal's urls and the bare-stack baseline of bench_portal: a token-authenticated DRF endpoint doing one
query, served by the same processes, middleware and settings as the portal's own API (bench.web_settings)."""

from django.urls import path
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import User
from portal.urls import handler400, handler403, handler404, handler500
from portal.urls import urlpatterns as portal_urlpatterns

__all__ = ["handler400", "handler403", "handler404", "handler500", "urlpatterns"]


class BaselineApi(APIView):
    """The least an authenticated API answer costs here: DRF's token authentication and one query."""

    def get(self, request):
        return Response({"username": User.objects.filter(pk=request.user.pk).values_list("username", flat=True)[0]})


urlpatterns = [path("bench/baseline/", BaselineApi.as_view(), name="bench-baseline"), *portal_urlpatterns]
