"""Following a log (jobs/log_follow.py), both loops: the WSGI one (follow_log_sync) and the ASGI one (follow_log)."""

from __future__ import annotations

import asyncio
import itertools

import pytest
from django.utils import timezone

import jobs.backends.local
from jobs.backends.base import LogPage
from jobs.backends.local import LocalJobs
from jobs.log_follow import Follow, follow_log, follow_log_sync
from jobs.models import JobState
from tests.factories import UserFactory
from tests.jobs.factories import JobFactory, local_backend_fixture  # noqa: F401

LOOPS = ["sync", "async"]


def stream(follow: Follow, loop: str, most: int = 50) -> list[bytes]:
    """The chunks a follower receives, `most` at most (a stream that would never end is cut there)."""
    if loop == "sync":
        return list(itertools.islice(follow_log_sync(follow), most))

    async def collect() -> list[bytes]:
        chunks = []
        async for chunk in follow_log(follow):
            chunks.append(chunk)
            if len(chunks) == most:
                break
        return chunks

    return asyncio.run(collect())


@pytest.mark.django_db(transaction=True)  # the async loop asks the job's state from a thread of the pool
@pytest.mark.parametrize("loop", LOOPS)
def test_a_follow_builds_its_backend_once_however_many_reads_it_takes(local_backend, settings, monkeypatch, loop):
    built = []

    class Counted(LocalJobs):
        def __init__(self, *args, **kwargs) -> None:
            built.append(self)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(jobs.backends.local, "LocalJobs", Counted)  # what get_job_backend() builds
    settings.JOBS_LOG_RESPONSE_MAX_BYTES = 1000  # a read gives 1000 bytes at most: the log below takes ten
    settings.JOBS_LOG_FOLLOW_POLL_S = 0.05
    job = JobFactory(owner=UserFactory(), state=JobState.SUCCEEDED, node_names=["gpu01"], finished_at=timezone.now())
    log = b"".join(b"line %04d\n" % n for n in range(1000))
    (local_backend.root / f"job-{job.pk}-a1").mkdir(parents=True)
    (local_backend.root / f"job-{job.pk}-a1" / "rank-0.log").write_bytes(log)
    chunks = stream(Follow(job.pk, 1, 0, 0), loop)
    assert b"".join(chunks) == log and len(chunks) == 10
    assert len(built) == 1


class NeverQuiet(LocalJobs):
    """A job that writes without pause: every read finds new lines."""

    def logs(self, ref, *, rank=0, tail_lines=None, offset=None, limit_bytes=None) -> LogPage:
        data = b"still training\n"
        return LogPage(data, offset, offset + len(data), offset + len(data))


@pytest.mark.parametrize("loop", LOOPS)
def test_a_job_that_writes_without_pause_still_ends_the_stream_at_the_limit(settings, monkeypatch, loop):
    monkeypatch.setattr(jobs.backends.local, "LocalJobs", NeverQuiet)
    settings.JOBS_BACKEND = "local"
    settings.JOBS_LOG_FOLLOW_MAX_S = 0  # the limit is reached as soon as the stream starts: one read, then the end
    chunks = stream(Follow(1, 1, 0, 0), loop)
    assert chunks == [b"still training\n"]
