"""One scheduling pass: who starts where, who is preempted, and why the rest wait."""

import datetime as dt

import pytest

from jobs.policy import (
    ClusterState,
    Node,
    PolicyConfig,
    Quota,
    RunningJob,
    clock_formatter,
    schedule,
    schedule_fifo,
)
from tests.jobs.helpers import DAY, HOUR, NOW, lab, queued, running, window

UTC_CLOCK = clock_formatter(dt.UTC, NOW)  # NOW is Sunday 2025-06-15 15:06:40 UTC


def started(result) -> dict:
    return {s.job_id: [(p.node, p.gpus) for p in s.placements] for s in result.starts}


def waiting(result) -> dict:
    return {w.job_id: w for w in result.waiting}


# --- Work conservation and backfill -------------------------------------------------------


def test_jobs_behind_a_wide_job_fill_the_free_gpus():
    state = ClusterState(
        now=NOW,
        nodes=lab(3, busy=("gpu03",)),
        running=[running("r0", "carol", "gpu03", ran=HOUR, runtime=3 * HOUR)],
        queued=[queued("wide", nodes=3, age=HOUR), queued("s1"), queued("s2")],
    )
    result = schedule(state)
    assert started(result) == {"s1": [("gpu01", (0,))], "s2": [("gpu02", (0,))]}
    assert all(s.backfill for s in result.starts)
    wide = waiting(result)["wide"]
    assert wide.code == "waiting" and wide.position == 1
    assert wide.estimated_start == NOW + 2 * HOUR  # when carol's job ends by its max runtime
    assert result.preemptions == []


def test_a_job_never_runs_into_someone_elses_reservation():
    nodes = lab(1, windows={"gpu01": [window(2 * HOUR, 3 * HOUR)]})
    result = schedule(ClusterState(now=NOW, nodes=nodes, queued=[queued("long", runtime=4 * HOUR), queued("short")]))
    assert started(result) == {"short": [("gpu01", (0,))]}  # ends by its max runtime before the window
    assert waiting(result)["long"].estimated_start == NOW + 5 * HOUR  # after the window
    alone = schedule(ClusterState(now=NOW, nodes=nodes, queued=[queued("long", runtime=4 * HOUR)]))
    assert alone.starts == [] and alone.waiting[0].estimated_start == NOW + 5 * HOUR


def test_best_fit_keeps_a_whole_node_free():
    nodes = [Node("gpu01", 2, (0, 1)), Node("gpu02", 2, (1,))]
    result = schedule(ClusterState(now=NOW, nodes=nodes, queued=[queued("one")]))
    assert started(result) == {"one": [("gpu02", (1,))]}


def test_multi_node_jobs_take_whole_nodes_worth_of_gpus():
    # gpu01 has one GPU held by a notebook (not free, no job): a 2x2 job cannot use it.
    nodes = [Node("gpu01", 2, (0,)), Node("gpu02", 2, (0, 1)), Node("gpu03", 2, (0, 1))]
    result = schedule(
        ClusterState(now=NOW, nodes=nodes, queued=[queued("ddp", gpus=2, nodes=2, age=60), queued("one")])
    )
    assert started(result) == {"ddp": [("gpu02", (0, 1)), ("gpu03", (0, 1))], "one": [("gpu01", (0,))]}


def test_unschedulable_nodes_and_gpus_held_by_others_are_not_used():
    nodes = [Node("gpu01", 1, (0,), schedulable=False), Node("gpu02", 1, ())]
    result = schedule(ClusterState(now=NOW, nodes=nodes, queued=[queued("j")]))
    assert result.starts == []
    assert result.waiting[0].estimated_start is None
    assert result.waiting[0].sentence(UTC_CLOCK) == (
        "waiting for 1 GPU; first in line; no estimated start yet (the nodes it needs are not available)"
    )


def test_strict_fifo_does_not_backfill():
    state = ClusterState(
        now=NOW, nodes=lab(2), queued=[queued("a", age=3), queued("wide", nodes=2, age=2), queued("c", age=1)]
    )
    assert list(started(schedule_fifo(state))) == ["a"]
    assert [w.job_id for w in schedule_fifo(state).waiting] == ["wide", "c"]
    assert list(started(schedule(state))) == ["a", "c"]


# --- Reservations ------------------------------------------------------------------------------


def reserved_lab():
    # The reservation's people: its teacher and alice, a student of its course.
    active = window(-HOUR, 3 * HOUR, reservation=7, users=("teacher", "alice"))
    return lab(3, windows={"gpu02": [active], "gpu03": [active]})


def test_a_reservation_job_runs_only_on_its_nodes_and_others_stay_off():
    state = ClusterState(
        now=NOW,
        nodes=reserved_lab(),
        queued=[
            queued("class", "teacher", nodes=2, reservation=7, age=60),
            queued("student", "alice", reservation=7, age=30),
            queued("pool", "bob"),
            queued("pool2", "bob"),
        ],
    )
    result = schedule(state)
    assert started(result) == {"class": [("gpu02", (0,)), ("gpu03", (0,))], "pool": [("gpu01", (0,))]}
    assert waiting(result)["student"].estimated_start == NOW + HOUR  # a course member may use it, after "class"
    assert waiting(result)["pool2"].estimated_start == NOW + HOUR  # never on the reserved nodes


@pytest.mark.parametrize(
    "job,code",
    [
        (queued("late", "teacher", reservation=7, runtime=3 * HOUR), "reservation_too_short"),
        (queued("eve", "eve", reservation=7), "reservation_not_allowed"),
        (queued("gone", "teacher", reservation=99), "reservation_over"),
        (queued("big", "teacher", nodes=3, reservation=7), "too_large"),
    ],
)
def test_reservation_problems_hold_the_job(job, code):
    result = schedule(ClusterState(now=NOW, nodes=reserved_lab(), queued=[job]))
    assert result.starts == [] and result.waiting[0].code == code
    assert result.waiting[0].sentence(UTC_CLOCK).startswith("held: ")


def test_a_reservation_job_waits_for_its_window():
    nodes = lab(2, windows={"gpu02": [window(2 * HOUR, 4 * HOUR, reservation=8)]})
    result = schedule(ClusterState(now=NOW, nodes=nodes, queued=[queued("lab", "teacher", reservation=8)]))
    assert result.starts == []
    wait = result.waiting[0]
    assert (wait.code, wait.at, wait.estimated_start) == ("reservation_pending", NOW + 2 * HOUR, NOW + 2 * HOUR)
    assert wait.sentence(UTC_CLOCK) == "waiting for reservation 8, which starts at 17:06; first in line"


def test_a_reservation_takes_its_nodes_back_from_work_placed_before_it():
    nodes = lab(2, busy=("gpu01", "gpu02"), windows={"gpu02": [window(-60, 2 * HOUR)]})
    state = ClusterState(
        now=NOW,
        nodes=nodes,
        running=[running("r1", "bob", "gpu01"), running("r2", "carol", "gpu02", preemptible=False, ran=60)],
        queued=[queued("class", "teacher", reservation=7)],
    )
    result = schedule(state)
    assert [(p.job_id, p.rule, p.for_job_id) for p in result.preemptions] == [("r2", "reservation", "class")]
    assert waiting(result)["class"].code == "starting"


# --- Preemption ----------------------------------------------------------------------------------


def full_lab_of_low_jobs():
    return ClusterState(
        now=NOW,
        nodes=lab(2, busy=("gpu01", "gpu02")),
        running=[
            running("low-old", "bob", "gpu01", klass="low", ran=HOUR),
            running("low-new", "bob", "gpu02", klass="low", ran=600),
        ],
        queued=[queued("urgent", "alice", klass="high")],
    )


def test_a_higher_class_preempts_the_youngest_lowest_job_with_a_grace_period():
    result = schedule(full_lab_of_low_jobs())
    assert len(result.preemptions) == 1
    preemption = result.preemptions[0]
    assert (preemption.job_id, preemption.rule, preemption.grace_s) == ("low-new", "priority", 120.0)
    wait = waiting(result)["urgent"]
    assert (wait.code, wait.estimated_start, wait.preempting) == ("starting", NOW + 120, 1)
    assert wait.sentence(UTC_CLOCK) == "starting at about 15:08: 1 lower-priority job is being stopped to make room"


def test_preemption_depth_zero_turns_it_off():
    result = schedule(full_lab_of_low_jobs(), PolicyConfig(preemption_depth=0))
    assert result.preemptions == [] and waiting(result)["urgent"].code == "waiting"


def test_non_preemptible_work_is_left_alone():
    state = full_lab_of_low_jobs()
    state = ClusterState(
        now=NOW,
        nodes=state.nodes,
        queued=state.queued,
        running=[running(r.id, r.user, r.placements[0].node, klass="low", preemptible=False) for r in state.running],
    )
    assert schedule(state).preemptions == []


@pytest.mark.parametrize("ran,preempted", [(300, False), (1200, True)])
def test_long_work_gives_way_to_much_higher_priority_after_the_exempt_time(ran, preempted):
    state = ClusterState(
        now=NOW,
        nodes=lab(1, busy=("gpu01",)),
        running=[running("week", "alice", "gpu01", ran=ran, runtime=7 * DAY)],
        queued=[queued("hour", "bob")],
    )
    result = schedule(state)
    assert [(p.job_id, p.rule) for p in result.preemptions] == ([("week", "priority")] if preempted else [])


def test_fair_share_preemption_evens_users_out_and_stops_there():
    def state(bob_nodes, alice_nodes):
        runs = [running(f"b-{n}", "bob", n, ran=1200, runtime=HOUR) for n in bob_nodes]
        runs += [running(f"a-{n}", "alice", n, ran=1200, runtime=HOUR) for n in alice_nodes]
        return ClusterState(
            now=NOW,
            nodes=lab(4, busy=("gpu01", "gpu02", "gpu03", "gpu04")),
            running=runs,
            queued=[queued("alice-next", "alice")],
            usage={"bob": 10 * HOUR, "alice": 5 * HOUR},
        )

    result = schedule(state(("gpu01", "gpu02", "gpu03"), ("gpu04",)))
    assert [(p.rule, p.job_id.startswith("b-")) for p in result.preemptions] == [("fair_share", True)]
    # Two each: preempting bob again would make him the one below his share. No ping-pong.
    assert schedule(state(("gpu01", "gpu02"), ("gpu03", "gpu04"))).preemptions == []


def test_a_backfill_gives_way_to_the_job_it_jumped():
    def state(preemptible=True, backfill=True, ran=1200):
        return ClusterState(
            now=NOW,
            nodes=lab(2, busy=("gpu02",)),
            running=[
                running("fill", "bob", "gpu02", ran=ran, runtime=4 * HOUR, preemptible=preemptible, backfill=backfill)
            ],
            queued=[queued("wide", "alice", nodes=2, age=HOUR)],
        )

    result = schedule(state())
    assert [(p.job_id, p.rule) for p in result.preemptions] == [("fill", "backfill")]
    wait = waiting(result)["wide"]
    assert (wait.code, wait.estimated_start) == ("starting", NOW + 120)
    assert schedule(state(preemptible=False)).preemptions == []
    # Not before it has run the exempt time (10 min), as any same-class preemption.
    assert schedule(state(ran=300)).preemptions == []
    # A job that started in its turn (no higher-priority job was waiting) is no backfill, whenever it started.
    assert schedule(state(backfill=False)).preemptions == []


def test_two_passes_in_a_row_do_not_preempt_the_jobs_the_first_one_started():
    # 6 one-GPU jobs of 6 students on 4 GPUs: the first pass starts 4 in their turn. Once they run, their owners
    # have used GPU time and the 2 waiting students rank higher by fair share; that is no reason to stop them.
    students = [f"student{n}" for n in range(6)]
    first = schedule(
        ClusterState(now=NOW, nodes=lab(4), queued=[queued(f"job-{u}", u, age=60 - n) for n, u in enumerate(students)])
    )
    assert len(first.starts) == 4 and not any(s.backfill for s in first.starts) and first.preemptions == []
    started_ids = {s.job_id for s in first.starts}
    for later in (1.0, 60.0, 120.0):
        now = NOW + later
        runs = [
            RunningJob(
                id=s.job_id,
                user=s.job_id.removeprefix("job-"),
                gpus_per_node=1,
                max_runtime_s=HOUR,
                submitted_at=NOW - 60,
                started_at=NOW,
                placements=s.placements,
                backfill=s.backfill,
            )
            for s in first.starts
        ]
        second = schedule(
            ClusterState(
                now=now,
                nodes=lab(4, busy=("gpu01", "gpu02", "gpu03", "gpu04")),
                running=runs,
                queued=[queued(w.job_id, w.job_id.removeprefix("job-"), age=60) for w in first.waiting],
                usage={r.user: later for r in runs},
            )
        )
        assert second.preemptions == [], later
        assert {w.job_id for w in second.waiting} == {w.job_id for w in first.waiting}
        assert started_ids.isdisjoint(w.job_id for w in second.waiting)


def test_gpus_of_stopping_jobs_go_to_the_job_first_in_line():
    state = ClusterState(
        now=NOW,
        nodes=lab(2, busy=("gpu01", "gpu02")),
        running=[
            running("leaving", "bob", "gpu01", stopping_in=30),
            running("staying", "carol", "gpu02", preemptible=False, ran=HOUR, runtime=2 * HOUR),
        ],
        queued=[queued("first", "alice", age=60), queued("second", "dave")],
    )
    result = schedule(state)
    assert result.preemptions == []
    first, second = waiting(result)["first"], waiting(result)["second"]
    assert (first.code, first.estimated_start) == ("starting", NOW + 30)
    assert first.sentence(UTC_CLOCK) == "starting at about 15:07: its GPUs are being freed"
    assert (second.code, second.estimated_start) == ("waiting", NOW + HOUR)


# --- Quotas ---------------------------------------------------------------------------------------


def test_quota_on_gpus_per_job_holds_the_job():
    state = ClusterState(
        now=NOW, nodes=lab(2), queued=[queued("big", nodes=2)], quotas={"alice": Quota(max_gpus_per_job=1)}
    )
    wait = schedule(state).waiting[0]
    assert (wait.code, wait.limit) == ("quota_gpus_per_job", 1)
    assert wait.sentence() == "held: it asks for 2 GPUs and your limit is 1 per job"


def test_quota_on_running_jobs_counts_the_jobs_started_in_the_same_pass():
    state = ClusterState(
        now=NOW,
        nodes=lab(3),
        queued=[queued("a1", age=2), queued("a2", age=1), queued("b1", "bob")],
        quotas={"alice": Quota(max_jobs=1)},
    )
    result = schedule(state)
    assert set(started(result)) == {"a1", "b1"}
    wait = waiting(result)["a2"]
    assert (wait.code, wait.used, wait.limit) == ("quota_jobs", 1, 1)
    assert wait.sentence() == "held: you have 1 job running and your limit is 1"


def test_quota_on_gpu_hours_counts_what_running_jobs_may_still_use():
    state = ClusterState(
        now=NOW,
        nodes=lab(3, busy=("gpu03",)),
        running=[running("r", "alice", "gpu03", ran=2 * HOUR, runtime=4 * HOUR)],
        queued=[queued("four", runtime=4 * HOUR, age=10), queued("one")],
        quotas={"alice": Quota(gpu_hours_left=5)},
    )
    result = schedule(state)
    assert list(started(result)) == ["one"]
    wait = waiting(result)["four"]
    # "one" is shorter, so it went first and committed an hour too: 5 - 2 - 1 = 2 left.
    assert wait.code == "quota_gpu_hours" and wait.limit == pytest.approx(2) and wait.used == pytest.approx(4)
    assert wait.sentence() == "held: at its max runtime it needs 4.0 GPU-hours and you have 2.0 left this week"


def test_a_job_larger_than_the_lab_is_held():
    wait = schedule(ClusterState(now=NOW, nodes=lab(2), queued=[queued("huge", nodes=3)])).waiting[0]
    assert wait.code == "too_large"
    assert wait.sentence() == "held: it needs 3 nodes with 1 GPU each, more than the lab has"


# --- Positions, estimates, sentences -----------------------------------------------------------------


def test_positions_estimated_starts_and_sentences():
    state = ClusterState(
        now=NOW,
        nodes=lab(2, busy=("gpu01", "gpu02")),
        running=[
            running("r1", "carol", "gpu01", ran=HOUR, runtime=2 * HOUR, preemptible=False),
            running("r2", "carol", "gpu02", ran=HOUR, runtime=3 * HOUR, preemptible=False),
        ],
        queued=[
            queued("q3", "bob", age=HOUR),
            queued("q1", "alice", age=3 * HOUR),
            queued("q2", "alice", age=2 * HOUR),
        ],
    )
    result = schedule(state)
    assert [(w.job_id, w.position, w.jobs_ahead) for w in result.waiting] == [("q1", 1, 0), ("q2", 2, 1), ("q3", 3, 2)]
    estimates = {w.job_id: w.estimated_start for w in result.waiting}
    assert estimates == {"q1": NOW + HOUR, "q2": NOW + 2 * HOUR, "q3": NOW + 2 * HOUR}
    # Shown as a range, 25 % of the wait either side: an estimate is never a precise minute.
    assert result.waiting[0].sentence(UTC_CLOCK) == "waiting for 1 GPU; first in line; estimated start 15:51-16:21"
    assert result.waiting[2].sentence(UTC_CLOCK) == (
        "waiting for 1 GPU; 2 jobs ahead of you; estimated start 16:36-17:36"
    )


def test_positions_count_only_jobs_still_queued():
    state = ClusterState(now=NOW, nodes=lab(1), queued=[queued("goes", age=2), queued("stays", nodes=2, age=1)])
    # The 2-node job cannot fit a 1-node lab: held, but still first among the jobs left in the queue.
    assert [(w.job_id, w.position) for w in schedule(state).waiting] == [("stays", 1)]


def test_clock_formatter_says_the_day_when_it_is_not_today():
    assert UTC_CLOCK(NOW + HOUR) == "16:06"
    assert UTC_CLOCK(NOW + 2 * DAY) == "Tue 15:06"
    assert UTC_CLOCK(NOW + 10 * DAY) == "2025-06-25 15:06"
    assert clock_formatter(dt.timezone(dt.timedelta(hours=2)), NOW)(NOW) == "17:06"


def test_a_multi_node_sentence_names_the_nodes():
    state = ClusterState(
        now=NOW,
        nodes=lab(2, busy=("gpu01",)),
        running=[running("r", "carol", "gpu01", preemptible=False, ran=HOUR, runtime=2 * HOUR)],
        queued=[queued("ddp", nodes=2)],
    )
    assert schedule(state).waiting[0].sentence(UTC_CLOCK) == (
        "waiting for 2 GPUs on 2 nodes; first in line; estimated start 15:51-16:21"
    )


def test_a_job_past_its_max_runtime_is_expected_to_end_soon():
    state = ClusterState(
        now=NOW,
        nodes=lab(1, busy=("gpu01",)),
        running=[running("over", "carol", "gpu01", ran=3 * HOUR, runtime=2 * HOUR, preemptible=False)],
        queued=[queued("next")],
    )
    assert schedule(state).waiting[0].estimated_start == NOW + PolicyConfig().overrun_slack_s


def test_the_pass_is_a_pure_function():
    state = full_lab_of_low_jobs()
    assert schedule(state) == schedule(state)
    assert [r.stopping_until for r in state.running] == [None, None]
