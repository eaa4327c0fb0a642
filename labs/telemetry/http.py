"""The one HTTP client of telemetry: node scrapes, Prometheus queries and the agent's pushes go through here.

Failures become BackendError, which says whether trying again may help; tests patch this module only.
"""

from __future__ import annotations

import threading
from typing import Any

import requests

from accounts.errors import BackendError

_local = threading.local()
USER_AGENT = "gpu-lab-portal-telemetry/1"


def _session() -> requests.Session:
    # One keep-alive session per thread: scrapes run in a small thread pool every second.
    session = getattr(_local, "session", None)
    if session is None:
        session = requests.Session()
        session.headers["User-Agent"] = USER_AGENT
        _local.session = session
    return session


def _failed(exc: Exception, what: str) -> BackendError:
    if isinstance(exc, requests.HTTPError) and exc.response is not None:
        status = exc.response.status_code
        return BackendError(f"{what} answered {status}", retryable=status == 429 or status >= 500, status=status)
    return BackendError(f"{what} could not be reached: {exc.__class__.__name__}", retryable=True)


def get_text(url: str, *, timeout_s: float) -> str:
    try:
        response = _session().get(url, timeout=timeout_s)
        response.raise_for_status()
        return response.text
    except requests.RequestException as exc:
        raise _failed(exc, url) from exc


def get_json(url: str, *, params: dict[str, str], timeout_s: float, headers: dict[str, str] | None = None) -> Any:
    try:
        response = _session().get(url, params=params, timeout=timeout_s, headers=headers or {})
        if response.status_code in (400, 422) and response.headers.get("Content-Type", "").startswith(
            "application/json"
        ):
            return response.json()  # Prometheus explains bad queries in its JSON error body
        response.raise_for_status()
        return response.json()
    except ValueError as exc:
        raise BackendError(f"{url} did not answer JSON", retryable=True) from exc
    except requests.RequestException as exc:
        raise _failed(exc, url) from exc


def post_json(url: str, *, body: Any, timeout_s: float, headers: dict[str, str]) -> tuple[int, Any]:
    """POST a JSON body; the status and the decoded answer (None when it is not JSON). Raises on no answer."""
    try:
        response = _session().post(url, json=body, timeout=timeout_s, headers=headers)
    except requests.RequestException as exc:
        raise _failed(exc, url) from exc
    try:
        return response.status_code, response.json()
    except ValueError:
        return response.status_code, None


def close() -> None:
    """Close this thread's keep-alive connections (a command on its way out)."""
    session = getattr(_local, "session", None)
    if session is not None:
        session.close()
        _local.session = None
