"""The HTTP people of the whole-portal benchmark (manage.py bench_portal), run as their own process.

No Django here: asyncio and aiohttp (installed with the kubernetes client), so that the load takes as little of
the machine as it can. The configuration comes as one JSON line on stdin; one JSON result line goes to stdout
when the run is over (after `duration_s`, and at most `REQUEST_TIMEOUT_S` more for answers still on their way).

- students: each presses Start once at a random moment of the ramp (POST /api/v1/notebooks/), then reads their
  notebooks every NOTEBOOK_POLL_S until it is ready or failed, with the call the Notebooks page makes;
- submitters: submit a tiny job (POST /api/v1/jobs/), read it and its log as the job's page does (after 1 s,
  then every JOB_POLL_S) until it is finished, wait a moment, and again;
- teachers: the reservations week page (a session cookie, as a browser), a reservation's page, the reservations
  API and the availability API, with a pause between them;
- the baseline: GET /bench/baseline/ (bench.web_urls) at a low steady rate, `baseline_per_s`, timed apart.

Every answer is timed and counted by status; pages (not /api/) and API answers separately. Every loop stops at
the deadline and has a count limit besides.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time
from collections import Counter

import aiohttp

REQUEST_TIMEOUT_S = 30
NOTEBOOK_POLL_S = 2.0
JOB_POLL_S = 3.0
MAX_LOOPS = 10_000  # per person, whatever the duration: no loop runs away
FINISHED_JOB = {"succeeded", "failed", "cancelled"}
SETTLED_NOTEBOOK = {"ready", "failed", "stopped"}


class Tally:
    def __init__(self) -> None:
        self.ms: dict[str, list[float]] = {"page": [], "api": [], "baseline": []}
        self.statuses: dict[str, Counter] = {"page": Counter(), "api": Counter(), "baseline": Counter()}
        self.by_name: dict[str, list[float]] = {}
        self.transport_errors = 0
        self.notebooks = Counter()
        self.to_ready_s: list[float] = []
        self.jobs = Counter()

    def record(self, name: str, path: str, status: int, ms: float) -> None:
        kind = "baseline" if path.startswith("/bench/") else "api" if path.startswith("/api/") else "page"
        self.ms[kind].append(ms)
        self.statuses[kind][status] += 1
        self.by_name.setdefault(name, []).append(ms)

    def result(self) -> dict:
        out: dict = {"transport_errors": self.transport_errors}
        for kind in ("page", "api", "baseline"):
            values = sorted(self.ms[kind])
            statuses = self.statuses[kind]
            out[f"{kind}_answers"] = len(values)
            for q in (50, 95, 99):
                out[f"p{q}_{kind}_ms"] = pct(values, q)
            out[f"max_{kind}_ms"] = round(values[-1], 1) if values else None
            out[f"{kind}_5xx"] = sum(n for s, n in statuses.items() if s >= 500)
            out[f"{kind}_non_2xx"] = {str(s): n for s, n in sorted(statuses.items()) if not 200 <= s < 300 and s < 500}
            out[f"{kind}_5xx_by_status"] = {str(s): n for s, n in sorted(statuses.items()) if s >= 500}
        out["endpoints"] = {
            name: {"n": len(v), "p50_ms": pct(sorted(v), 50), "p95_ms": pct(sorted(v), 95)}
            for name, v in sorted(self.by_name.items())
        }
        out["notebooks"] = dict(self.notebooks)
        out["p50_notebook_ready_s"] = pct(sorted(self.to_ready_s), 50)
        out["jobs"] = dict(self.jobs)
        return out


def pct(ordered: list[float], q: float) -> float | None:
    if not ordered:
        return None
    return round(ordered[min(len(ordered) - 1, int(q / 100.0 * len(ordered)))], 1)


class People:
    def __init__(self, config: dict, session: aiohttp.ClientSession, tally: Tally) -> None:
        self.config = config
        self.base = config["base"]
        self.session = session
        self.tally = tally
        self.started = time.monotonic()
        self.deadline = self.started + config["duration_s"]
        self.rng = random.Random(config.get("seed", 1))  # noqa: S311 - think times, not secrets

    def left(self) -> float:
        return self.deadline - time.monotonic()

    async def pause(self, seconds: float) -> bool:
        """Sleep, but never past the deadline; False once the run is over."""
        await asyncio.sleep(max(0.0, min(seconds, self.left())))
        return self.left() > 0

    async def call(self, name: str, method: str, path: str, *, token=None, cookies=None, body=None, text=False):
        """One request, timed from send to the whole answer read; (status, body) or (None, None) if none came."""
        headers = {"Authorization": f"Token {token}"} if token else {}
        if cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
        began = time.perf_counter()
        try:
            async with self.session.request(method, self.base + path, headers=headers, json=body) as answer:
                raw = await answer.read()
                status = answer.status
        except (aiohttp.ClientError, TimeoutError):
            self.tally.transport_errors += 1
            return None, None
        self.tally.record(name, path, status, (time.perf_counter() - began) * 1000.0)
        if text:
            return status, raw.decode("utf-8", "replace")
        try:
            return status, json.loads(raw) if raw else {}
        except ValueError:
            return status, {}

    async def student(self, token: str) -> None:
        if not await self.pause(self.rng.uniform(0, self.config["ramp_s"])):
            return
        press = {"profile": self.config["profile"]}
        status, body = await self.call("POST /api/v1/notebooks/", "POST", "/api/v1/notebooks/", token=token, body=press)
        if status != 202:
            self.tally.notebooks[f"refused_{status}"] += 1
            return
        self.tally.notebooks["accepted"] += 1
        pressed = time.monotonic()
        mine, state = body["id"], body.get("status")
        for _ in range(MAX_LOOPS):
            if state in SETTLED_NOTEBOOK or not await self.pause(NOTEBOOK_POLL_S):
                break
            path = "/api/v1/notebooks/?mine=true&limit=50"
            status, rows = await self.call("GET /api/v1/notebooks/?mine", "GET", path, token=token)
            if status != 200:
                break
            state = next((row.get("status") for row in rows if row.get("id") == mine), None)
        self.tally.notebooks[state or "unknown"] += 1
        if state == "ready":
            self.tally.to_ready_s.append(time.monotonic() - pressed)

    async def submitter(self, token: str) -> None:
        if not await self.pause(self.rng.uniform(0, min(10.0, self.config["ramp_s"]))):
            return
        job = {
            "name": "bench",
            "image": "python:3.12-slim",
            "command": ["python", "-c", "print('bench job done')"],
            "gpus": 1,
            "max_runtime_s": 60,
        }
        for _ in range(MAX_LOOPS):
            status, body = await self.call("POST /api/v1/jobs/", "POST", "/api/v1/jobs/", token=token, body=job)
            if status != 201:
                self.tally.jobs[f"refused_{status}"] += 1
                if not await self.pause(5.0):
                    return
                continue
            self.tally.jobs["submitted"] += 1
            job_path, state, log = f"/api/v1/jobs/{body['id']}/", body.get("status"), ""
            wait = 1.0
            for _ in range(MAX_LOOPS):
                if state in FINISHED_JOB or not await self.pause(wait):
                    break
                wait = JOB_POLL_S
                status, body = await self.call("GET /api/v1/jobs/{id}/", "GET", job_path, token=token)
                if status != 200:
                    break
                state = body.get("status")
                status, log = await self.call(
                    "GET /api/v1/jobs/{id}/logs/", "GET", f"{job_path}logs/?tail=200", token=token, text=True
                )
            if state not in FINISHED_JOB:
                self.tally.jobs[f"unfinished_{state}"] += 1
                return
            self.tally.jobs[state] += 1
            self.tally.jobs["log_complete" if "bench job done" in (log or "") else "log_missing"] += 1
            if not await self.pause(self.rng.uniform(1.0, 3.0)):
                return

    async def teacher(self, person: dict) -> None:
        if not await self.pause(self.rng.uniform(0, 3.0)):
            return
        cookies, token = {"sessionid": person["session"]}, person["token"]
        for n in range(MAX_LOOPS):
            week = self.config["weeks"][n % len(self.config["weeks"])]
            await self.call("GET /lab/reservations/", "GET", f"/lab/reservations/?week={week}", cookies=cookies)
            if person.get("reservation"):
                path = f"/lab/reservations/{person['reservation']}/"
                await self.call("GET /lab/reservations/{id}/", "GET", path, cookies=cookies)
            await self.call(
                "GET /api/v1/reservations/", "GET", f"/api/v1/reservations/?from={week}T00:00:00Z", token=token
            )
            window = f"starts_at={week}T08:00:00Z&ends_at={week}T18:00:00Z"
            await self.call("GET /api/v1/availability/", "GET", f"/api/v1/availability/?{window}", token=token)
            if not await self.pause(self.rng.uniform(1.0, 3.0)):
                return

    async def baseline(self, token: str, per_s: float) -> None:
        """The bare-stack baseline's light client: one request every 1/per_s seconds, on a fixed beat."""
        beat = time.monotonic()
        for _ in range(MAX_LOOPS * 10):
            await self.call("GET /bench/baseline/", "GET", "/bench/baseline/", token=token)
            beat += 1.0 / per_s
            if not await self.pause(beat - time.monotonic()):
                return


async def main() -> None:
    config = json.loads(await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline))
    tally = Tally()
    connector = aiohttp.TCPConnector(limit=0, force_close=False)
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout, cookie_jar=aiohttp.DummyCookieJar()) as s:
        people = People(config, s, tally)
        tasks = [people.student(token) for token in config["students"]]
        tasks += [people.submitter(token) for token in config["submitters"]]
        tasks += [people.teacher(person) for person in config["teachers"]]
        if config.get("baseline_per_s"):
            tasks.append(people.baseline(config["baseline_token"], config["baseline_per_s"]))
        print(json.dumps({"event": "started"}), flush=True)
        running = [asyncio.ensure_future(task) for task in tasks]
        _done, late = await asyncio.wait(running, timeout=config["duration_s"] + REQUEST_TIMEOUT_S + 5)
        for task in late:
            task.cancel()
        for task in running:
            if task.done() and not task.cancelled() and task.exception() is not None:
                raise task.exception()
    print(json.dumps({"event": "result", **tally.result()}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
