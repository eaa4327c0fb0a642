"""Error pages: JSON under /api/, a page a person can act on elsewhere."""

from django.http import JsonResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from accounts.errors import PortalError
from portal.api.errors import json_not_found, json_server_error

BAD_REQUEST = gettext_noop("The request was malformed; check the address and what you typed, and try again.")


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
        return JsonResponse({"detail": _("You may not do this."), "code": "permission_denied"}, status=403)
    reason = str(exception) if exception and str(exception) else _("Your role may not open this page.")
    return render(request, "errors/403.html", {"reason": reason}, status=403)


def bad_request(request, exception=None, *, reason: str = ""):
    """400 for a request no view could read (handler400, and the malformed-input middleware)."""
    reason = reason or _(BAD_REQUEST)
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": reason, "code": "parse_error"}, status=400)
    return render(request, "errors/400.html", {"reason": reason}, status=400)


def portal_error_page(request, exc: PortalError):
    """A PortalError a page view did not catch: its sentence on the page of its status (400, 403, 404, 409...)."""
    if exc.status == 404:
        return render(request, "errors/404.html", status=404)
    if exc.status == 403:
        return render(request, "errors/403.html", {"reason": exc.message, "help": exc.extra.get("help")}, status=403)
    return render(request, "errors/400.html", {"reason": exc.message, "help": exc.extra.get("help")}, status=exc.status)


def csrf_failure(request, reason=""):
    """CSRF_FAILURE_VIEW: a form sent without its token (or from elsewhere), in the error format of its side."""
    if request.path.startswith("/api/"):
        detail = _("CSRF check failed: browser sessions send the X-CSRFToken header; scripts use a Token header.")
        return JsonResponse({"detail": detail, "code": "permission_denied"}, status=403)
    reason = _("This form expired or came from another site. Reload the page and send it again.")
    return render(request, "errors/403.html", {"reason": reason}, status=403)
