"""Refusals raised by services and selectors become answers on pages the same way the API answers them.

A view calls a selector or a service and lets `NotFound` (404: the caller may not see it, or there is no such thing)
and `NotPermitted` (403: they may see it but not do this) travel up; this middleware renders them with the rule's own
sentence, so a page never translates a refusal by hand and never answers 404 where the API answers 403.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse

from portal.errors import NotFound, NotPermitted, PortalError
from portal.web.errors import not_found, permission_denied


class PortalErrorMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, (NotFound, NotPermitted)):
            return None
        if request.path.startswith("/api/"):
            return _json(exception)
        if isinstance(exception, NotFound):
            return not_found(request, exception)
        return permission_denied(request, exception)


def _json(exception: PortalError) -> JsonResponse:
    response = JsonResponse(exception.as_body(), status=exception.status)
    for name, value in exception.headers.items():
        response[name] = value
    return response
