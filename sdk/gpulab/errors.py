"""Typed errors: one class per `code` the API answers with, each carrying the fields that code comes with.

try:
    client.jobs.submit(...)
except gpulab.QuotaExceeded as exc:
    print(exc.limit, exc.used, exc.allowed)
"""

from __future__ import annotations

from typing import Any


class GpulabError(Exception):
    """Anything this package raises on purpose."""


class ConfigError(GpulabError):
    """No server URL or no token: pass them, set GPULAB_URL / GPULAB_TOKEN, or run `gpulab login`."""


class ConnectionFailed(GpulabError):
    """The portal could not be reached (down, wrong URL, network)."""


class WaitTimeout(GpulabError):
    """`wait(timeout=)` ran out before the job or notebook got where it was waited for."""

    def __init__(self, message: str, *, last: Any = None) -> None:
        super().__init__(message)
        self.last = last


class ApiError(GpulabError):
    """The portal answered with an error: `status`, the stable `code`, the human sentence `detail`, the whole body."""

    code = "error"

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status = status
        self.body = body
        self.detail = str(body.get("detail") or f"HTTP {status}")
        self.code = str(body.get("code") or type(self).code)
        super().__init__(self.detail)


class BadRequest(ApiError):
    """400: the request was not valid; `fields` names what is wrong with which field."""

    code = "invalid"

    @property
    def fields(self) -> dict[str, list[str]]:
        return dict(self.body.get("fields") or {})


class Unauthorized(ApiError):
    """401: no token, or one the portal does not know (any more)."""

    code = "not_authenticated"


class PermissionDenied(ApiError):
    """403: your role may not do this."""

    code = "permission_denied"


class QuotaExceeded(PermissionDenied):
    """403 quota_exceeded: `limit` (which one), `used` and `allowed`."""

    code = "quota_exceeded"

    @property
    def limit(self) -> str | None:
        return self.body.get("limit")

    @property
    def used(self) -> float | None:
        return self.body.get("used")

    @property
    def allowed(self) -> float | None:
        return self.body.get("allowed")


class NotFound(ApiError):
    """404: no such thing, or not one you may see."""

    code = "not_found"


class Conflict(ApiError):
    """409: the request collides with the lab's state; for reservations `conflicts` and `earliest_fit`."""

    code = "conflict"

    @property
    def conflicts(self) -> list[dict[str, Any]]:
        return list(self.body.get("conflicts") or [])

    @property
    def earliest_fit(self) -> dict[str, Any] | None:
        return self.body.get("earliest_fit")


class RateLimited(ApiError):
    """429: too many of one action; `retry_after_s` says when to try again."""

    code = "rate_limited"

    @property
    def retry_after_s(self) -> int | None:
        return self.body.get("retry_after_s")


class ServerError(ApiError):
    """5xx: something went wrong on the portal's side (503 backend_unavailable: try again later)."""

    code = "server_error"


_BY_CODE: dict[str, type[ApiError]] = {
    "quota_exceeded": QuotaExceeded,
    "conflict": Conflict,
    "rate_limited": RateLimited,
}
_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: PermissionDenied,
    404: NotFound,
    409: Conflict,
    429: RateLimited,
}


def error_for(status: int, body: Any) -> ApiError:
    """The typed error for an error answer (the body as JSON when it was JSON)."""
    if not isinstance(body, dict):
        body = {"detail": str(body)[:300] if body else f"HTTP {status}"}
    cls = _BY_CODE.get(str(body.get("code"))) or _BY_STATUS.get(status)
    if cls is None:
        cls = ServerError if status >= 500 else ApiError
    return cls(status, body)
