"""The API's operations as data (method, path, query, body, how to read the answer), shared by Client and AsyncClient:
each client only sends them, with httpx's sync or async client, so the two cannot drift apart.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable
from typing import Any

import httpx

from gpulab._version import VERSION
from gpulab.errors import ConnectionFailed, error_for
from gpulab.models import Availability, Gpu, Job, Me, Model, Notebook, Preview, Profile, Reservation, Usage

API = "/api/v1"
JOB_FIELDS = (
    "name",
    "image",
    "command",
    "script",
    "gpus",
    "gpu_share",
    "scratch",
    "bulk",
    "nodes",
    "max_runtime_s",
    "priority",
    "reservation",
    "env",
    "datasets",
    "course",
    "idle_ok_reason",
    "template",  # a course's job template (its id), with `parameters` {NAME: value}, in place of image/program/sizes
    "parameters",
)
PAGE_SIZE = 100
USER_AGENT = f"gpulab-sdk/{VERSION}"
FOLLOW_TIMEOUT = httpx.Timeout(30.0, read=None)  # a followed log may be quiet for as long as the job is


def headers(token: str) -> dict[str, str]:
    """What every request of both clients carries."""
    return {"Authorization": f"Token {token}", "Accept": "application/json", "User-Agent": USER_AGENT}


@dataclasses.dataclass(frozen=True)
class Call:
    method: str
    path: str
    read: Callable[[Any], Any]
    params: dict[str, Any] | None = None
    json: Any = None


def one(model: type[Model]) -> Callable[[Any], Any]:
    return model.from_api


def many(model: type[Model]) -> Callable[[Any], Any]:
    return lambda data: [model.from_api(item) for item in data]


def iso(value: dt.datetime | dt.date | str | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return value.isoformat()


def clean(params: dict[str, Any]) -> dict[str, Any]:
    """Query parameters without the ones left out (None), booleans as the API reads them."""
    out = {}
    for key, value in params.items():
        if value is None:
            continue
        out[key] = ("true" if value else "false") if isinstance(value, bool) else value
    return out


def job_body(spec: dict[str, Any] | None, fields: dict[str, Any]) -> dict[str, Any]:
    body = {**(spec or {}), **{k: v for k, v in fields.items() if v is not None}}
    unknown = sorted(set(body) - set(JOB_FIELDS))
    if unknown:
        raise TypeError(f"Unknown job field(s): {', '.join(unknown)} (known: {', '.join(JOB_FIELDS)}).")
    if isinstance(body.get("command"), str):
        raise TypeError('command is an argv list, e.g. ["python", "train.py"], never one string.')
    body.setdefault("name", "")
    return body


def decode(response: httpx.Response) -> Any:
    """The answer's JSON; raises the typed error for an error answer."""
    if response.status_code >= 400:
        try:
            body = response.json()
        except ValueError:
            body = {"detail": response.text.strip()[:300] or response.reason_phrase}
        raise error_for(response.status_code, body)
    if response.status_code == 204 or not response.content:
        return None
    if "json" not in response.headers.get("content-type", ""):
        return response.text
    return response.json()


def unreachable(url: str, exc: Exception) -> ConnectionFailed:
    why = type(exc).__name__ if not str(exc) else str(exc)
    return ConnectionFailed(f"Cannot reach the portal at {url}: {why}.")


# --- The operations ----------------------------------------------------------------------------------------------


def me() -> Call:
    return Call("GET", f"{API}/me/", one(Me))


def job_submit(body: dict[str, Any]) -> Call:
    return Call("POST", f"{API}/jobs/", one(Job), json=body)


def job_preview(body: dict[str, Any]) -> Call:
    return Call("POST", f"{API}/jobs/preview/", one(Preview), json=body)


def job_get(job_id: int) -> Call:
    return Call("GET", f"{API}/jobs/{int(job_id)}/", one(Job))


def job_page(*, status: str | None, mine: bool, limit: int, before: int | None) -> Call:
    params = clean({"status": status, "mine": mine or None, "limit": limit, "before": before})
    return Call("GET", f"{API}/jobs/", many(Job), params=params)


def job_cancel(job_id: int) -> Call:
    return Call("POST", f"{API}/jobs/{int(job_id)}/cancel/", one(Job))


def job_log_page(job_id: int, *, tail: int | None, attempt: int | None, rank: int) -> Call:
    params = clean({"tail": tail, "attempt": attempt, "rank": rank})
    return Call("GET", f"{API}/jobs/{int(job_id)}/logs/", lambda text: text or "", params=params)


def follow_params(*, attempt: int | None, rank: int, since: int) -> dict[str, Any]:
    return clean({"follow": True, "attempt": attempt, "rank": rank, "since": since})


def profiles() -> Call:
    return Call("GET", f"{API}/profiles/", many(Profile))


def notebook_start(profile: str) -> Call:
    return Call("POST", f"{API}/notebooks/", one(Notebook), json={"profile": profile})


def notebook_get(notebook_id: int) -> Call:
    return Call("GET", f"{API}/notebooks/{int(notebook_id)}/", one(Notebook))


def notebook_list(*, status: str | None, mine: bool, limit: int) -> Call:
    params = clean({"status": status, "mine": mine or None, "limit": limit})
    return Call("GET", f"{API}/notebooks/", many(Notebook), params=params)


def notebook_stop(notebook_id: int) -> Call:
    return Call("DELETE", f"{API}/notebooks/{int(notebook_id)}/", one(Notebook))


def notebook_extend(notebook_id: int) -> Call:
    return Call("POST", f"{API}/notebooks/{int(notebook_id)}/extend/", one(Notebook))


def reservation_create(
    *,
    title: str,
    starts_at: dt.datetime | str,
    ends_at: dt.datetime | str,
    nodes: list[str] | None,
    node_count: int | None,
    all_nodes: bool,
    course: str | None,
    repeat_weekly_until: dt.date | str | None,
    owner: str | None,
) -> Call:
    if sum((bool(nodes), node_count is not None, bool(all_nodes))) != 1:
        raise TypeError("Name the nodes, give a node_count, or all_nodes=True: exactly one of them.")
    body = {
        "title": title,
        "starts_at": iso(starts_at),
        "ends_at": iso(ends_at),
        "nodes": list(nodes) if nodes else None,
        "node_count": node_count,
        "all_nodes": bool(all_nodes),
        "course": course,
        "repeat_weekly_until": iso(repeat_weekly_until),
        "owner": owner,
    }
    return Call("POST", f"{API}/reservations/", one(Reservation), json={k: v for k, v in body.items() if v is not None})


def reservation_list(*, from_: Any, to: Any) -> Call:
    return Call("GET", f"{API}/reservations/", many(Reservation), params=clean({"from": iso(from_), "to": iso(to)}))


def reservation_get(reservation_id: int) -> Call:
    return Call("GET", f"{API}/reservations/{int(reservation_id)}/", one(Reservation))


def reservation_cancel(reservation_id: int) -> Call:
    return Call("DELETE", f"{API}/reservations/{int(reservation_id)}/", one(Reservation))


def availability(*, starts_at: Any, ends_at: Any) -> Call:
    params = {"starts_at": iso(starts_at), "ends_at": iso(ends_at)}
    return Call("GET", f"{API}/availability/", one(Availability), params=params)


def gpus() -> Call:
    return Call("GET", f"{API}/gpus/", many(Gpu))


def usage(*, from_: Any, to: Any, group_by: str | None) -> Call:
    params = clean({"from": iso(from_), "to": iso(to), "group_by": group_by})
    return Call("GET", f"{API}/usage/", one(Usage), params=params)


def token(username: str, password: str) -> Call:
    return Call("POST", f"{API}/token/", lambda data: data, json={"username": username, "password": password})


def ws_url(base: str) -> str:
    return ("wss://" + base[len("https://") :] if base.startswith("https://") else "ws://" + base[len("http://") :]) + (
        "/ws/gpus/"
    )
