"""Input no part of the portal accepts, refused at the door; and the pages' answer to a PortalError.

Refusals read the same everywhere: a view calls a selector or a service and lets `NotFound` (404: the caller may not
see it, or there is no such thing) and `NotPermitted` (403: they may see it but not do this) travel up; the API's
handler and this middleware answer them with the rule's one sentence (accounts.permissions), so no page
translates a refusal by hand.

A NUL character cannot be stored by PostgreSQL (psycopg raises DataError: a 500 wherever it reaches a query),
nor used in a file name, and no field of the portal needs one. The address (path and query string) and form
posts are checked here, before any view; JSON bodies by the API's parser (portal.api.parsers).
"""

from __future__ import annotations

from django.http import JsonResponse
from django.utils.translation import gettext as _

from accounts.audit import request_begin, request_end, request_id_from
from accounts.errors import PortalError
from portal.web.errors import bad_request, portal_error_page

FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def nul_problem(request) -> str | None:
    """Where the request carries a NUL character, as a sentence; None when it does not."""
    if "\x00" in request.path or "\x00" in request.path_info:
        return _("The address holds a NUL character (%00); no page or API path has one.")
    if _has_nul(request.GET.lists()):
        return _("The query string holds a NUL character (%00); no parameter takes one.")
    if request.method == "POST" and request.content_type in FORM_TYPES:
        files = ((name, [upload.name or "" for upload in uploads]) for name, uploads in request.FILES.lists())
        if _has_nul(request.POST.lists()) or _has_nul(files):
            return _("The form holds a NUL character; no field takes one. Remove it and send the form again.")
    return None


def _has_nul(pairs) -> bool:
    return any("\x00" in key or any("\x00" in value for value in values) for key, values in pairs)


class MalformedInputMiddleware:
    """First in MIDDLEWARE: nothing after it (static files, sessions, views) sees a NUL character."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if reason := nul_problem(request):
            return bad_request(request, reason=reason)
        return self.get_response(request)

    def process_exception(self, request, exception):
        # DRF views answer their own errors (portal.api.errors); anything else that let a PortalError through gets
        # its page, or its JSON under /api/.
        if not isinstance(exception, PortalError):
            return None
        if request.path.startswith("/api/"):
            response = JsonResponse(exception.as_body(), status=exception.status)
            for name, value in exception.headers.items():
                response[name] = value
            return response
        return portal_error_page(request, exception)


class RequestIdMiddleware:
    """Give every request an id (a proxy's X-Request-ID when it sends a sane one): the audit entries its services
    write carry it (accounts.audit), and the answer says it, so a person's report can be matched to the trail."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.request_id = request_id_from(request.headers.get("X-Request-ID"))
        tokens = request_begin(request, request.request_id)
        try:
            response = self.get_response(request)
        finally:
            request_end(tokens)
        response["X-Request-ID"] = request.request_id
        return response
