"""Errors that services raise and both the API and the pages turn into answers.

They carry a stable code, the HTTP status they map to, and any extra fields the API
contract promises for that error (such as the conflicting windows of a 409).
"""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import urlencode

# The help pages (portal/web/help_pages.py): a refusal a person can act on points there.
HELP_PATH = "/help/"


class PortalError(Exception):
    status = 400
    code = "invalid"

    def __init__(self, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra

    def as_body(self) -> dict[str, Any]:
        return {"detail": self.message, "code": self.code, **self.extra}

    @property
    def headers(self) -> dict[str, str]:
        """HTTP headers the answer carries besides the body (Retry-After for a 429)."""
        return {}


class InvalidInput(PortalError):
    """400 that names the offending fields, like a serializer's validation error: `fields={"name": "why"}`."""

    def __init__(self, message: str, *, fields: dict[str, str], **extra: Any) -> None:
        super().__init__(message, fields={name: [why] for name, why in fields.items()}, **extra)
        self.fields = fields


class NotPermitted(PortalError):
    status = 403
    code = "permission_denied"


class NotFound(PortalError):
    """404: there is no such thing, or the caller may not know that there is."""

    status = 404
    code = "not_found"


# The limits a request for more can lift (accounts.more_requests), and the page that asks.
ASKABLE_LIMITS = frozenset({"gpu_hours_week", "budget_gpu_hours"})
ASK_PATH = "/requests/new/"


class QuotaExceeded(PortalError):
    """403 with the limit that was hit: `limit` (its name), `used` and `allowed`."""

    status = 403
    code = "quota_exceeded"

    def __init__(self, message: str, *, limit: str, used: float, allowed: float, need: float = 0) -> None:
        # `help`: where the limit is explained (the help page's row for it), for the pages and API clients to link.
        extra = {"help": f"{HELP_PATH}#limit-{limit}"}
        if limit in ASKABLE_LIMITS:
            # `ask`: the request-for-more form with the numbers filled in (the GPU-hours missing, at least one).
            missing = max(math.ceil(float(used) + float(need) - float(allowed)), 1)
            extra["ask"] = f"{ASK_PATH}?{urlencode({'kind': 'gpu_hours', 'amount': missing})}"
        super().__init__(message, limit=limit, used=used, allowed=allowed, **extra)


class RateLimited(PortalError):
    """429: too many of one action in a short time. `retry_after_s` (also the Retry-After header) says when to retry."""

    status = 429
    code = "rate_limited"

    def __init__(self, message: str, *, action: str, allowed: int, period_s: int, retry_after_s: int) -> None:
        super().__init__(message, action=action, allowed=allowed, period_s=period_s, retry_after_s=retry_after_s)
        self.retry_after_s = retry_after_s

    @property
    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after_s)}


class SignInPaused(PortalError):
    """429: sign-in refused for now: a locked (username, address) pair (`locked_out`) or too many tries from one
    address (`throttled`). `retry_after_s` (also the Retry-After header) says when to retry."""

    status = 429

    def __init__(self, message: str, *, code: str, retry_after_s: int) -> None:
        super().__init__(message, retry_after_s=retry_after_s)
        self.code = code
        self.retry_after_s = retry_after_s

    @property
    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after_s)}


class Conflict(PortalError):
    status = 409
    code = "conflict"


class BackendError(Exception):
    """An outside system failed. `retryable` says whether trying again later may help."""

    def __init__(self, message: str, *, retryable: bool, status: int | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status
