"""The synchronous client: `Client(url, token)` (or from GPULAB_URL / GPULAB_TOKEN / the config file).

with gpulab.Client() as lab:
    job = lab.jobs.submit(image="pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
                          command=["python", "train.py"], gpus=1, max_runtime_s=3600)
    for line in lab.jobs.logs(job.id, follow=True):
        print(line)
    assert lab.jobs.wait(job.id).succeeded
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx

from gpulab import _calls as calls
from gpulab._stream import RESYNC, GpuBoard, LineSplitter
from gpulab.config import resolve
from gpulab.errors import ConnectionFailed, GpulabError, WaitTimeout
from gpulab.models import Availability, Gpu, Job, Me, Notebook, Preview, Profile, Reservation, Usage


class Client:
    def __init__(self, url: str | None = None, token: str | None = None, *, timeout: float = 30.0) -> None:
        settings = resolve(url, token)
        self.url, self.token = settings.url, settings.token
        self._http = httpx.Client(
            base_url=self.url,
            headers=calls.headers(self.token),
            timeout=timeout,
        )
        self.jobs = Jobs(self)
        self.notebooks = Notebooks(self)
        self.reservations = Reservations(self)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def run(self, call: calls.Call) -> Any:
        try:
            response = self._http.request(call.method, call.path, params=call.params, json=call.json)
        except httpx.HTTPError as exc:
            raise calls.unreachable(self.url, exc) from exc
        return call.read(calls.decode(response))

    def me(self) -> Me:
        return self.run(calls.me())

    def gpus(self) -> list[Gpu]:
        return self.run(calls.gpus())

    def usage(self, *, from_: Any = None, to: Any = None, group_by: str | None = None) -> Usage:
        return self.run(calls.usage(from_=from_, to=to, group_by=group_by))

    def watch_gpus(self, *, timeout: float | None = None) -> Iterator[list[Gpu]]:
        """The GPUs over the WebSocket: the snapshot, then the board again after each update (a gap: a resync).

        Ends after `timeout` seconds (None: never; break out of the loop to stop)."""
        from websockets.exceptions import WebSocketException
        from websockets.sync.client import connect

        deadline = None if timeout is None else time.monotonic() + timeout
        board = GpuBoard()
        try:
            with connect(
                calls.ws_url(self.url), additional_headers={"Authorization": f"Token {self.token}"}, open_timeout=30
            ) as socket:
                while deadline is None or time.monotonic() < deadline:
                    left = None if deadline is None else max(0.01, deadline - time.monotonic())
                    try:
                        text = socket.recv(timeout=left)
                    except TimeoutError:
                        return
                    if not board.apply(json.loads(text)):
                        socket.send(RESYNC)
                    elif not board.waiting_for_snapshot:
                        yield board.gpus()
        except (OSError, WebSocketException) as exc:
            raise ConnectionFailed(f"The live GPU status at {calls.ws_url(self.url)} failed: {exc}") from exc


class Jobs:
    def __init__(self, client: Client) -> None:
        self._c = client

    def submit(self, spec: dict[str, Any] | None = None, **fields: Any) -> Job:
        """Queue a job: a dict (as a job.yaml holds) and/or fields: name, image, command, gpus, nodes, ..."""
        return self._c.run(calls.job_submit(calls.job_body(spec, fields)))

    def preview(self, spec: dict[str, Any] | None = None, **fields: Any) -> Preview:
        """Would it start now? A dry run: nothing is queued."""
        return self._c.run(calls.job_preview(calls.job_body(spec, fields)))

    def get(self, job_id: int) -> Job:
        return self._c.run(calls.job_get(job_id))

    def list(self, *, status: str | None = None, mine: bool = False, page_size: int = calls.PAGE_SIZE) -> Iterator[Job]:
        """Every job you may see, newest first, fetched a page at a time as you iterate."""
        before = None
        while True:
            page = self._c.run(calls.job_page(status=status, mine=mine, limit=page_size, before=before))
            yield from page
            if len(page) < page_size:
                return
            before = page[-1].id

    def cancel(self, job_id: int) -> Job:
        return self._c.run(calls.job_cancel(job_id))

    def wait(
        self,
        job_id: int,
        *,
        timeout: float | None = None,
        poll_s: float = 2.0,
        on_progress: Callable[[Job], None] | None = None,
    ) -> Job:
        """Wait until the job is over (succeeded, failed or cancelled) and return it; WaitTimeout after `timeout`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = self.get(job_id)
            if on_progress:
                on_progress(job)
            if job.finished:
                return job
            if deadline is not None and time.monotonic() >= deadline:
                raise WaitTimeout(f"Job {job_id} is still {job.status} after {timeout:g} s.", last=job)
            time.sleep(poll_s if deadline is None else max(0.0, min(poll_s, deadline - time.monotonic())))

    def logs(
        self,
        job_id: int,
        *,
        follow: bool = False,
        tail: int | None = None,
        attempt: int | None = None,
        rank: int = 0,
        since: int = 0,
    ) -> Iterator[str]:
        """The log's lines. With follow=True, as the job writes them, until it is over (resuming a cut stream)."""
        if not follow:
            yield from self._c.run(calls.job_log_page(job_id, tail=tail, attempt=attempt, rank=rank)).splitlines()
            return
        splitter, failures = LineSplitter(), 0
        while True:
            try:
                with self._c._http.stream(
                    "GET",
                    f"{calls.API}/jobs/{int(job_id)}/logs/",
                    params=calls.follow_params(attempt=attempt, rank=rank, since=since),
                    headers={"Accept": "text/plain"},
                    timeout=calls.FOLLOW_TIMEOUT,
                ) as response:
                    if response.status_code >= 400:
                        response.read()
                        calls.decode(response)
                    attempt = int(response.headers.get("X-Log-Attempt") or attempt or 0) or None
                    for chunk in response.iter_bytes():
                        since += len(chunk)
                        yield from splitter.feed(chunk)
                failures = 0
            except httpx.HTTPError as exc:
                failures += 1
                if failures > 5:
                    raise calls.unreachable(self._c.url, exc) from exc
                time.sleep(min(10.0, 0.5 * 2**failures))
                continue
            job = self.get(job_id)
            if job.finished and (attempt is None or job.attempt <= attempt):
                yield from splitter.flush()
                return
            if attempt is not None and job.attempt > attempt:  # requeued: the next attempt has a log of its own
                yield from splitter.flush()
                attempt, since = job.attempt, 0


class Notebooks:
    def __init__(self, client: Client) -> None:
        self._c = client

    def profiles(self) -> list[Profile]:
        return self._c.run(calls.profiles())

    def start(self, profile: str, *, wait: bool = True, timeout: float = 600.0, poll_s: float = 2.0) -> Notebook:
        """Start a notebook of `profile`; with wait=True, return once it is ready (its `.url` opens it)."""
        notebook = self._c.run(calls.notebook_start(profile))
        if not wait:
            return notebook
        return self.wait(notebook.id, timeout=timeout, poll_s=poll_s)

    def wait(self, notebook_id: int, *, timeout: float = 600.0, poll_s: float = 2.0) -> Notebook:
        deadline = time.monotonic() + timeout
        while True:
            notebook = self.get(notebook_id)
            if notebook.status == "ready" and notebook.url:
                return notebook
            if notebook.status in ("stopping", "stopped", "failed"):
                raise GpulabError(f"Notebook {notebook_id} is {notebook.status}: {notebook.reason}")
            if time.monotonic() >= deadline:
                why = f"Notebook {notebook_id} is still {notebook.status} after {timeout:g} s."
                raise WaitTimeout(why, last=notebook)
            time.sleep(poll_s)

    def get(self, notebook_id: int) -> Notebook:
        return self._c.run(calls.notebook_get(notebook_id))

    def list(self, *, status: str | None = None, mine: bool = False, limit: int = 100) -> list[Notebook]:
        return self._c.run(calls.notebook_list(status=status, mine=mine, limit=limit))

    def stop(self, notebook_id: int) -> Notebook:
        return self._c.run(calls.notebook_stop(notebook_id))

    def extend(self, notebook_id: int) -> Notebook:
        return self._c.run(calls.notebook_extend(notebook_id))


class Reservations:
    def __init__(self, client: Client) -> None:
        self._c = client

    def create(
        self,
        title: str,
        starts_at: Any,
        ends_at: Any,
        *,
        nodes: list[str] | None = None,
        node_count: int | None = None,
        all_nodes: bool = False,
        course: str | None = None,
        repeat_weekly_until: Any = None,
        owner: str | None = None,
    ) -> Reservation:
        """Reserve named `nodes`, a `node_count`, or `all_nodes`; weekly until `repeat_weekly_until` (a date)."""
        return self._c.run(
            calls.reservation_create(
                title=title,
                starts_at=starts_at,
                ends_at=ends_at,
                nodes=nodes,
                node_count=node_count,
                all_nodes=all_nodes,
                course=course,
                repeat_weekly_until=repeat_weekly_until,
                owner=owner,
            )
        )

    def list(self, *, from_: Any = None, to: Any = None) -> list[Reservation]:
        return self._c.run(calls.reservation_list(from_=from_, to=to))

    def get(self, reservation_id: int) -> Reservation:
        return self._c.run(calls.reservation_get(reservation_id))

    def cancel(self, reservation_id: int) -> Reservation:
        return self._c.run(calls.reservation_cancel(reservation_id))

    def availability(self, starts_at: Any, ends_at: Any) -> Availability:
        return self._c.run(calls.availability(starts_at=starts_at, ends_at=ends_at))
