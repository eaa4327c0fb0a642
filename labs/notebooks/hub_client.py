"""The JupyterHub REST client: the one way the portal talks to the hub, with its service token.

The same client serves the cluster (KubeSpawner behind the hub) and the run command and tests (a local-process
or echo spawner): the hub's API is the backend interface. Every failure becomes HubError, which says whether
trying again later may help (the hub is down, slow, or busy spawning: yes; the hub refused the request: no).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import hmac
import json
import threading
from typing import Any
from urllib.parse import quote

import requests
from django.conf import settings
from django.utils.dateparse import parse_datetime

from accounts.errors import BackendError

USER_AGENT = "gpu-lab-portal-notebooks/1"
_local = threading.local()


class HubError(BackendError):
    pass


@dataclasses.dataclass(frozen=True)
class ServerState:
    """One named server as the hub reports it."""

    user: str
    name: str
    ready: bool
    pending: str | None  # "spawn", "stop" or None
    url: str  # the path under the proxy, e.g. /user/alice/nb17/
    last_activity: dt.datetime | None
    started: dt.datetime | None


def sign(options: dict[str, Any], key: str) -> str:
    """The signature the hub checks on user_options: HMAC-SHA256 of the canonical JSON, keyed by the token."""
    body = json.dumps({k: v for k, v in options.items() if k != "sig"}, sort_keys=True, separators=(",", ":"))
    return hmac.new(key.encode(), body.encode(), hashlib.sha256).hexdigest()


def _when(value: Any) -> dt.datetime | None:
    return parse_datetime(value) if isinstance(value, str) and value else None


def _server(user: str, name: str, body: dict[str, Any]) -> ServerState:
    return ServerState(
        user=user,
        name=name,
        ready=bool(body.get("ready")),
        pending=body.get("pending") or None,
        url=str(body.get("url") or ""),
        last_activity=_when(body.get("last_activity")),
        started=_when(body.get("started")),
    )


class HubClient:
    def __init__(self, api_url: str, token: str, *, timeout_s: float) -> None:
        self.api_url = api_url.rstrip("/")
        self.token = token
        self.timeout_s = timeout_s

    # --- plumbing

    def _session(self) -> requests.Session:
        session = getattr(_local, "session", None)
        if session is None:
            session = requests.Session()
            session.headers["User-Agent"] = USER_AGENT
            _local.session = session
        return session

    def _call(
        self, method: str, path: str, *, body: Any = None, params: dict | None = None, accept: str | None = None
    ) -> requests.Response:
        headers = {"Authorization": f"token {self.token}"}
        if accept:
            headers["Accept"] = accept
        try:
            return self._session().request(
                method,
                self.api_url + path,
                json=body,
                params=params,
                headers=headers,
                timeout=(min(self.timeout_s, 3.0), self.timeout_s),
            )
        except requests.Timeout as exc:
            raise HubError("The notebook service did not answer in time.", retryable=True) from exc
        except requests.RequestException as exc:
            raise HubError("The notebook service cannot be reached.", retryable=True) from exc

    @staticmethod
    def _message(response: requests.Response) -> str:
        try:
            return str(response.json().get("message") or "")
        except (ValueError, AttributeError):
            return ""

    def _failed(self, response: requests.Response, what: str) -> HubError:
        status = response.status_code
        detail = self._message(response)
        if status == 429:
            return HubError("The notebook service is busy starting other notebooks.", retryable=True, status=status)
        if status >= 500:
            return HubError(f"The notebook service failed to {what} ({status}).", retryable=True, status=status)
        if status in (401, 403):
            # The portal's token is wrong or lacks a scope: a deployment problem, not the student's.
            return HubError(
                f"The notebook service refused the portal ({status}): {detail}", retryable=False, status=status
            )
        return HubError(f"The notebook service could not {what}: {detail or status}", retryable=False, status=status)

    @staticmethod
    def _path(user: str, server: str | None = None) -> str:
        path = f"/users/{quote(user, safe='')}"
        return path if server is None else f"{path}/servers/{quote(server, safe='')}"

    # --- the calls

    def ensure_user(self, name: str) -> None:
        """Create the hub user on their first notebook. Hub admin rights come only from the login (portal admins)."""
        response = self._call("GET", self._path(name))
        if response.status_code == 200:
            return
        if response.status_code != 404:
            raise self._failed(response, "look up the user")
        created = self._call("POST", self._path(name))
        if created.status_code not in (201, 409):  # 409: created meanwhile by another worker
            raise self._failed(created, "create the user")

    def start(self, user: str, server: str, options: dict[str, Any]) -> None:
        """Ask the hub to start the named server; it answers at once (201 started, 202 on its way)."""
        response = self._call("POST", self._path(user, server), body=options)
        if response.status_code in (201, 202):
            return
        if response.status_code == 400 and "already" in self._message(response).lower():
            return  # a re-run after a lost answer: it is running or on its way
        raise self._failed(response, "start the notebook")

    def stop(self, user: str, server: str) -> bool:
        """Stop and remove the named server. True when it is gone, False while the hub is still stopping it."""
        response = self._call("DELETE", self._path(user, server), body={"remove": True})
        if response.status_code in (204, 404):
            return True
        if response.status_code == 202:
            return False
        if response.status_code == 400 and "pending" in self._message(response).lower():
            return False  # still spawning or already stopping: ask again on the next tick
        raise self._failed(response, "stop the notebook")

    def server(self, user: str, server: str) -> ServerState | None:
        response = self._call("GET", self._path(user))
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise self._failed(response, "read the notebook's state")
        body = (response.json().get("servers") or {}).get(server)
        return _server(user, server, body) if body else None

    def active_servers(self) -> dict[tuple[str, str], ServerState]:
        """Every server the hub has running or on its way, by (user, server name), a page at a time."""
        found: dict[tuple[str, str], ServerState] = {}
        offset, limit = 0, 200
        while True:
            response = self._call(
                "GET",
                "/users",
                params={"state": "active", "offset": offset, "limit": limit},
                accept="application/jupyterhub-pagination+json",
            )
            if response.status_code != 200:
                raise self._failed(response, "list the running notebooks")
            payload = response.json()
            # With the pagination header the hub answers {"items": [...], "_pagination": {...}}; without, a list.
            users = payload.get("items", []) if isinstance(payload, dict) else payload
            for entry in users:
                for name, body in (entry.get("servers") or {}).items():
                    found[(entry["name"], name)] = _server(entry["name"], name, body)
            pagination = payload.get("_pagination") if isinstance(payload, dict) else None
            if not pagination or not pagination.get("next"):
                return found
            offset = pagination["next"]["offset"]
            limit = pagination["next"].get("limit", limit)

    def record_activity(self, user: str, server: str, when: dt.datetime) -> None:
        """Report activity for a server (as a single-user server does); the tests and the benchmark use it."""
        body = {"servers": {server: {"last_activity": when.isoformat().replace("+00:00", "Z")}}}
        response = self._call("POST", f"{self._path(user)}/activity", body=body)
        if response.status_code not in (200, 204):
            raise self._failed(response, "record activity")


def hub() -> HubClient:
    return HubClient(
        settings.NOTEBOOKS_HUB_API_URL, settings.NOTEBOOKS_HUB_TOKEN, timeout_s=settings.NOTEBOOKS_HUB_TIMEOUT_S
    )
