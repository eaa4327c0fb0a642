"""One error format for the whole API: {"detail": sentence, "code": stable code, ...}."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, JsonResponse
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.serializers import as_serializer_error
from rest_framework.views import exception_handler as drf_exception_handler

from accounts.errors import PortalError

_CODES = {
    exceptions.NotAuthenticated: "not_authenticated",
    exceptions.AuthenticationFailed: "authentication_failed",
    exceptions.PermissionDenied: "permission_denied",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.ParseError: "parse_error",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.Throttled: "throttled",
}


def _flatten(errors) -> list[str]:
    if isinstance(errors, dict):
        return [msg for value in errors.values() for msg in _flatten(value)]
    if isinstance(errors, list):
        return [msg for value in errors for msg in _flatten(value)]
    return [str(errors)]


def _validation_body(detail) -> dict:
    if not isinstance(detail, dict):
        detail = {"non_field_errors": detail if isinstance(detail, list) else [detail]}
    fields = {name: _flatten(errors) for name, errors in detail.items() if name != "non_field_errors"}
    general = _flatten(detail.get("non_field_errors", []))
    if fields:
        sentence = _("Please correct %(fields)s: %(details)s") % {
            "fields": ", ".join(sorted(fields)),
            "details": " ".join(f"{name}: {msgs[0]}" for name, msgs in sorted(fields.items())),
        }
    else:
        sentence = " ".join(general) or _("The request is not valid.")
    body = {"detail": sentence, "code": "invalid", "fields": fields}
    if general:
        body["errors"] = general
    return body


def exception_handler(exc, context):
    if isinstance(exc, PortalError):
        return Response(exc.as_body(), status=exc.status, headers=exc.headers)
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(detail=as_serializer_error(exc))
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()

    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        response.data = _validation_body(exc.detail)
        return response
    detail = exc.detail if isinstance(exc.detail, str) else " ".join(_flatten(exc.detail))
    response.data = {"detail": str(detail), "code": _CODES.get(type(exc), getattr(exc, "default_code", "error"))}
    return response


@csrf_exempt  # the catch-all of unknown API paths changes nothing: a 404 in JSON, not a CSRF page
def json_not_found(request, exception=None):
    return JsonResponse({"detail": _("Not found."), "code": "not_found"}, status=404)


def json_server_error(request):
    return JsonResponse(
        {"detail": _("Something went wrong on our side; the lab staff have been told."), "code": "server_error"},
        status=500,
    )
