"""Errors that services raise and both the API and the pages turn into answers.

They carry a stable code, the HTTP status they map to, and any extra fields the API
contract promises for that error (such as the conflicting windows of a 409).
"""

from __future__ import annotations

from typing import Any


class PortalError(Exception):
    status = 400
    code = "invalid"

    def __init__(self, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra

    def as_body(self) -> dict[str, Any]:
        return {"detail": self.message, "code": self.code, **self.extra}


class Conflict(PortalError):
    status = 409
    code = "conflict"


class BackendError(Exception):
    """An outside system failed. `retryable` says whether trying again later may help."""

    def __init__(self, message: str, *, retryable: bool, status: int | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status
