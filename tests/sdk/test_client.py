"""The gpulab SDK (sdk/) against the live portal: jobs end to end, typed errors, pages, the async client under load."""

from __future__ import annotations

import asyncio
import datetime as dt
import time

import gpulab
import pytest

pytestmark = pytest.mark.postgresql_only

SLOW = "import time\nfor i in range(5):\n    print(f'step {i}', flush=True)\n    time.sleep(1.0)\n"


def job(**extra):
    return {"image": "python:3.12-slim", "gpus": 1, "max_runtime_s": 600, **extra}


def test_submit_follow_the_log_as_it_comes_and_wait_for_success(lab):
    submitted = lab.jobs.submit(job(name="sdk-slow", command=["python", "-c", SLOW]))
    assert isinstance(submitted, gpulab.Job) and submitted.status == "queued" and submitted.name == "sdk-slow"
    arrivals = []
    for line in lab.jobs.logs(submitted.id, follow=True):
        arrivals.append((line, lab.jobs.get(submitted.id).status))
    assert [line for line, _ in arrivals] == [f"step {i}" for i in range(5)]
    assert arrivals[0][1] in ("starting", "running")  # streamed while it ran, not read at the end
    done = lab.jobs.wait(submitted.id, timeout=120)
    assert done.succeeded and done.exit_code == 0 and isinstance(done.finished_at, dt.datetime)
    assert [e.to_state for e in done.events][-1] == "succeeded"
    assert list(lab.jobs.logs(submitted.id, tail=2)) == ["step 3", "step 4"]


def test_wait_times_out_with_the_job_as_it_was(lab):
    submitted = lab.jobs.submit(job(name="sdk-sleeper", command=["python", "-c", "import time; time.sleep(60)"]))
    try:
        with pytest.raises(gpulab.WaitTimeout) as caught:
            lab.jobs.wait(submitted.id, timeout=1, poll_s=0.2)
        assert caught.value.last.id == submitted.id and not caught.value.last.finished
    finally:
        cancelled = lab.jobs.cancel(submitted.id)
    assert cancelled.status == "cancelled" or cancelled.stopping
    assert lab.jobs.wait(submitted.id, timeout=120).status == "cancelled"


def test_preview_says_whether_it_would_start_now_without_queueing(lab):
    before = lab.me().usage["jobs_queued"]
    answer = lab.jobs.preview(job(name="what-if", command=["python", "-c", "print(1)"]))
    assert isinstance(answer, gpulab.Preview) and isinstance(answer.starts_now, bool) and answer.sentence
    assert lab.me().usage["jobs_queued"] == before


def test_list_iterates_over_pages_newest_first(lab):
    for n in range(3):
        lab.jobs.submit(job(name=f"page-{n}", command=["python", "-c", "print(1)"]))
    seen = [j.id for j in lab.jobs.list(mine=True, page_size=2)]
    assert len(seen) >= 3 and len(seen) == len(set(seen))
    assert seen == sorted(seen, reverse=True)
    assert seen == [j.id for j in lab.jobs.list(mine=True, page_size=500)]


def test_typed_errors_carry_the_apis_code_and_fields(portal, lab):
    with pytest.raises(gpulab.NotFound) as missing:
        lab.jobs.get(10**9)
    assert missing.value.code == "not_found" and missing.value.status == 404
    with pytest.raises(gpulab.BadRequest) as bad:
        lab.jobs.submit(job(name="bad", command=["python"], gpus=0))
    assert bad.value.code == "invalid" and bad.value.detail
    with pytest.raises(gpulab.PermissionDenied) as denied:  # students do not reserve nodes
        lab.reservations.create("mine", "2030-01-07T10:00", "2030-01-07T11:00", node_count=1)
    assert denied.value.code == "permission_denied"
    with pytest.raises(gpulab.Unauthorized), gpulab.Client(portal.url, "0" * 40) as stranger:
        stranger.me()
    with pytest.raises(TypeError, match="argv list"):
        lab.jobs.submit(job(name="str", command="python train.py"))


def test_a_quota_refusal_says_which_limit_with_used_and_allowed(portal):
    sleeper = job(name="hold", command=["python", "-c", "import time; time.sleep(120)"])
    with gpulab.Client(portal.url, portal.tokens["bob"]) as bob:
        held = [bob.jobs.submit(sleeper), bob.jobs.submit(sleeper)]  # a student's limit is 2 at once
        try:
            with pytest.raises(gpulab.QuotaExceeded) as refused:
                bob.jobs.submit(sleeper)
            assert refused.value.limit == "max_jobs" and refused.value.used == 2 and refused.value.allowed == 2
        finally:
            for one in held:
                bob.jobs.cancel(one.id)


def test_reservations_create_named_count_weekly_then_list_availability_and_cancel(portal):
    day = dt.date.today() + dt.timedelta(days=21)
    start = dt.datetime.combine(day, dt.time(9))
    with gpulab.Client(portal.url, portal.tokens["tess"]) as tess:
        free = tess.reservations.availability(start, start + dt.timedelta(hours=2))
        assert isinstance(free, gpulab.Availability) and free.free_count == len(free.free_nodes) >= 2
        named = tess.reservations.create("Named", start, start + dt.timedelta(hours=1), nodes=["gpu01"])
        assert named.nodes == ["gpu01"] and named.requested == "named"
        counted = tess.reservations.create(
            "Counted", start + dt.timedelta(hours=1), start + dt.timedelta(hours=2), node_count=2
        )
        assert len(counted.nodes) == 2
        weekly = tess.reservations.create(
            "Weekly", start + dt.timedelta(hours=3), start + dt.timedelta(hours=4), nodes=["gpu02"],
            repeat_weekly_until=day + dt.timedelta(days=14),
        )  # fmt: skip
        assert len(weekly.occurrences) == 3 and weekly.series
        listed = {r.id for r in tess.reservations.list(from_=start, to=start + dt.timedelta(days=30))}
        assert {named.id, counted.id, *weekly.occurrences} <= listed
        with pytest.raises(gpulab.Conflict) as clash:
            tess.reservations.create("Again", start, start + dt.timedelta(hours=1), nodes=["gpu01"])
        assert clash.value.conflicts[0]["node"] == "gpu01" and clash.value.earliest_fit["nodes"] == ["gpu01"]
        for made in (named.id, counted.id, *weekly.occurrences):
            tess.reservations.cancel(made)
        assert tess.reservations.get(named.id).status == "cancelled"


def test_gpus_and_the_live_watch_merge_updates_into_the_board(lab):
    gpus = lab.gpus()
    assert {g.node for g in gpus} == {"gpu01", "gpu02", "gpu03", "gpu04"}
    assert all(isinstance(g, gpulab.Gpu) for g in gpus)
    boards = []
    for board in lab.watch_gpus(timeout=60):
        if len(board) == 4:  # the collector's first samples are in
            boards.append({g.key: g.sampled_at for g in board})
        if len(boards) >= 2 and boards[-1] != boards[0]:
            break
    assert len(boards) >= 2 and boards[-1] != boards[0]  # updates were merged: newer samples


def test_the_async_client_runs_200_concurrent_gets_without_error(portal, lab):
    submitted = lab.jobs.submit(job(name="many-gets", command=["python", "-c", "print(1)"]))

    async def many() -> list[gpulab.Job]:
        async with gpulab.AsyncClient(portal.url, portal.tokens["ada"]) as alab:
            return await asyncio.gather(*(alab.jobs.get(submitted.id) for _ in range(200)))

    started = time.monotonic()
    got = asyncio.run(many())
    assert len(got) == 200 and {j.id for j in got} == {submitted.id}
    print(f"200 concurrent gets in {time.monotonic() - started:.2f} s")


def test_the_async_client_follows_and_waits_as_the_sync_one(portal):
    async def run():
        async with gpulab.AsyncClient(portal.url, portal.tokens["ada"]) as alab:
            submitted = await alab.jobs.submit(job(name="async", command=["python", "-c", SLOW]))
            lines = [line async for line in alab.jobs.logs(submitted.id, follow=True)]
            done = await alab.jobs.wait(submitted.id, timeout=120)
            listed = [j.id async for j in alab.jobs.list(mine=True, page_size=2)]
            boards = []
            async for board in alab.watch_gpus(timeout=60):
                if len(board) == 4:
                    boards.append({g.key: g.sampled_at for g in board})
                if len(boards) >= 2 and boards[-1] != boards[0]:
                    break
            return lines, done, listed, submitted, boards

    lines, done, listed, submitted, boards = asyncio.run(run())
    assert lines == [f"step {i}" for i in range(5)] and done.succeeded and submitted.id in listed
    assert len(boards) >= 2 and boards[-1] != boards[0]


def test_usage_reads_the_ledger_report(lab):
    lab.jobs.wait(lab.jobs.submit(job(name="for-usage", command=["python", "-c", "print(1)"])).id, timeout=300)
    report = lab.usage(group_by="user")
    assert isinstance(report, gpulab.Usage) and report.group_by == "user"
    assert [row.key for row in report.rows] == ["ada"]  # a student sees herself
    assert report.rows[0].gpu_hours > 0 and report.total_gpu_hours == pytest.approx(report.rows[0].gpu_hours)


def test_the_config_comes_from_arguments_then_environment_then_the_file(portal, tmp_path, monkeypatch):
    from gpulab.config import config_path, write_config

    monkeypatch.delenv("GPULAB_URL", raising=False)
    monkeypatch.delenv("GPULAB_TOKEN", raising=False)
    monkeypatch.delenv("GPULAB_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    with pytest.raises(gpulab.ConfigError, match="gpulab login"):
        gpulab.Client()
    path = write_config(portal.url, portal.tokens["tess"])
    assert path == config_path() == tmp_path / "xdg" / "gpulab" / "config.toml"
    assert path.stat().st_mode & 0o777 == 0o600
    with gpulab.Client() as from_file:
        assert from_file.me().username == "tess"
    monkeypatch.setenv("GPULAB_TOKEN", portal.tokens["ada"])
    with gpulab.Client() as from_env:
        assert from_env.me().username == "ada"
    with gpulab.Client(token=portal.tokens["root"]) as from_argument:
        assert from_argument.me().role == "admin"


def test_a_portal_that_is_down_is_a_connection_error(portal):
    from bench.kit import free_port

    with (
        pytest.raises(gpulab.ConnectionFailed, match="Cannot reach"),
        gpulab.Client(f"http://127.0.0.1:{free_port()}", portal.tokens["ada"]) as nowhere,
    ):
        nowhere.me()


def test_a_sweep_of_20_small_jobs_and_a_wait_on_all(portal):
    """The README's sweep, with the async client: 20 jobs on 4 GPUs, all waited for at once."""

    async def sweep():
        async with gpulab.AsyncClient(portal.url, portal.tokens["ada"]) as alab:
            jobs = [
                await alab.jobs.submit(job(name=f"sweep-{n}", command=["python", "-c", f"print({n} * {n})"]))
                for n in range(20)
            ]
            done = await asyncio.gather(*(alab.jobs.wait(j.id, timeout=600, poll_s=1) for j in jobs))
            logs = [[line async for line in alab.jobs.logs(j.id)] for j in done]
            return done, logs

    done, logs = asyncio.run(sweep())
    assert [j.status for j in done] == ["succeeded"] * 20
    assert logs == [[str(n * n)] for n in range(20)]
