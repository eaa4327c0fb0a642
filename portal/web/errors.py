"""Error pages: JSON under /api/, a page a person can act on elsewhere."""

from django.http import JsonResponse
from django.shortcuts import render

from portal.api.errors import json_not_found, json_server_error


def not_found(request, exception=None):
    if request.path.startswith("/api/"):
        return json_not_found(request, exception)
    return render(request, "errors/404.html", status=404)


def server_error(request):
    if request.path.startswith("/api/"):
        return json_server_error(request)
    return render(request, "errors/500.html", status=500)


def permission_denied(request, exception=None):
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "You may not do this.", "code": "permission_denied"}, status=403)
    reason = str(exception) if exception and str(exception) else "Your role may not open this page."
    return render(request, "errors/403.html", {"reason": reason}, status=403)
