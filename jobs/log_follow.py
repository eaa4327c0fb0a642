"""Following a job's log as it is written: `GET /api/v1/jobs/{id}/logs/?follow=1&since=N` (jobs/api.py).

The answer is a stream (chunked over ASGI) of the rank's log from byte `since` on, ending once the attempt is over
(the job finished, or a preemption sent it back to the queue) and the log has been read to its end, or after
JOBS_LOG_FOLLOW_MAX_S (a client resumes with `since` = the bytes it has + the `since` it asked for), or once the
credential it was opened with ends (`still_holds`, asked every CREDENTIAL_RECHECK_S: a revoked token, a sign-out
everywhere, a new password): the stream stops, and resuming gets the API's 401 that says why.

What one follower costs while it waits: nothing but a coroutine. Every JOBS_LOG_FOLLOW_POLL_S it borrows a thread of
the shared executor for one read of the log (a seek and a read, no database), and every JOBS_LOG_FOLLOW_STATE_S one
for a one-row query of the job's state, whose connection it closes again (or returns to the pool): no thread and no
database connection is held for the length of the stream. Under ASGI, portal/log_follow_app.py runs it outside
Django's request threads; under WSGI (a thread per request anyway) the DRF view streams `follow_log_sync`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection

from accounts.errors import BackendError
from jobs.backends import JobBackend, JobRef, get_job_backend
from jobs.models import FINISHED_STATES, Job


@dataclasses.dataclass(frozen=True, slots=True)
class Follow:
    job_id: int
    attempt: int
    rank: int
    since: int


def release_connection() -> None:
    """Hand this thread's database connection back (closed, or to the pool) unless a transaction holds it (tests)."""
    if not connection.in_atomic_block:
        connection.close()


def _attempt_over(job_id: int, attempt: int) -> bool:
    """Whether the attempt followed is over: the job finished, moved on to a later attempt, or is gone."""
    try:
        row = Job.objects.filter(pk=job_id).values_list("state", "attempt").first()
    finally:
        release_connection()
    if row is None:
        return True
    state, current = row
    return state in FINISHED_STATES or current > attempt


def _read(backend: JobBackend, follow: Follow, offset: int) -> bytes:
    """The bytes of the log from `offset` on (at most one response cap); empty before the attempt wrote any."""
    try:
        return backend.logs(JobRef(follow.job_id, follow.attempt), rank=follow.rank, offset=offset).data
    except BackendError:
        return b""  # a backend that cannot answer now may answer at the next tick; the stream waits for it


def _timing() -> tuple[float, int, float]:
    poll_s = float(settings.JOBS_LOG_FOLLOW_POLL_S)
    state_every = max(1, round(float(settings.JOBS_LOG_FOLLOW_STATE_S) / poll_s))
    return poll_s, state_every, time.monotonic() + float(settings.JOBS_LOG_FOLLOW_MAX_S)


class _Recheck:
    """When the follower's credential is due to be looked at again (every CREDENTIAL_RECHECK_S)."""

    def __init__(self) -> None:
        self.every = float(settings.CREDENTIAL_RECHECK_S)
        self.next = time.monotonic() + self.every

    def due(self) -> bool:
        if time.monotonic() < self.next:
            return False
        self.next = time.monotonic() + self.every
        return True


def follow_log_sync(follow: Follow, still_holds: Callable[[], bool] | None = None) -> Iterator[bytes]:
    """The same, for WSGI servers and the test client, where a request has its thread anyway (jobs/api.py)."""
    poll_s, state_every, give_up = _timing()
    backend = get_job_backend()  # once per follow: on Kubernetes each one is a new API client
    offset, tick, ending, recheck = follow.since, 0, False, _Recheck()
    while True:
        data = _read(backend, follow, offset)
        if data:
            offset += len(data)
            yield data
        if time.monotonic() >= give_up:
            return  # checked on every tick: a job that writes without pause still ends the stream here
        if still_holds is not None and recheck.due() and not still_holds():
            return  # the credential ended (checked whether or not the job writes)
        if data:
            continue
        if ending:
            return
        if tick % state_every == 0 and _attempt_over(follow.job_id, follow.attempt):
            ending = True
            continue
        tick += 1
        time.sleep(poll_s)


async def follow_log(
    follow: Follow,
    stop: asyncio.Event | None = None,
    still_holds: Callable[[], Awaitable[bool]] | None = None,
) -> AsyncIterator[bytes]:
    """Yield the log's bytes as they come, from `follow.since`, until the attempt is over and all is read
    (or `stop` is set: the client went away; or `still_holds` answers False: the credential ended)."""
    poll_s, state_every, give_up = _timing()
    read = sync_to_async(_read, thread_sensitive=False)
    over = sync_to_async(_attempt_over, thread_sensitive=False)
    backend = await sync_to_async(get_job_backend, thread_sensitive=False)()  # once per follow, as above
    offset, tick, ending, recheck = follow.since, 0, False, _Recheck()
    while True:
        data = await read(backend, follow, offset)
        if data:
            offset += len(data)
            yield data
        if time.monotonic() >= give_up:
            return  # on every tick, as above
        if still_holds is not None and recheck.due() and not await still_holds():
            return  # as above
        if data:
            continue  # more may be there already: read on before sleeping
        if ending:
            return
        if tick % state_every == 0 and await over(follow.job_id, follow.attempt):
            ending = True  # one more read: what the job wrote before it ended
            continue
        tick += 1
        if stop is None:
            await asyncio.sleep(poll_s)
        else:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), poll_s)
            if stop.is_set():
                return


def after_view() -> None:
    """What the view does before it returns the stream: the request's own connection is not kept for its length."""
    release_connection()
