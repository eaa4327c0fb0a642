"""Where a job fits: the GPUs free now, GPUs coming free soon, reservation windows, and the planning profile.

One `Lab` is built per scheduling pass from the ClusterState. It answers three questions:
- can this job start now, and on which nodes and GPUs (`fit_now`);
- can it take GPUs that stopping jobs free within the grace period (`fit_soon`);
- when would it start if every running and planned job ran to its max runtime (`Planner`).
"""

from __future__ import annotations

import heapq
import math

from jobs.policy.model import ClusterState, JobId, Node, Placement, QueuedJob, ReservationId, Window
from jobs.policy.runtime import expected_total

INF = math.inf


class NodeSlots:
    """One node during a pass: what is free now, what frees soon, and when each GPU is free in the plan."""

    __slots__ = ("name", "index", "total", "schedulable", "windows", "avail", "soon", "plan", "version")

    def __init__(self, node: Node, index: int, now: float) -> None:
        self.name = node.name
        self.index = index
        self.total = node.gpus
        self.schedulable = node.schedulable
        # Windows still to come or under way, in start order (a node's reservations never overlap).
        self.windows: tuple[Window, ...] = tuple(
            sorted((w for w in node.windows if w.ends_at > now), key=lambda w: w.starts_at)
        )
        self.avail: list[int] = sorted({g for g in node.free_gpus if 0 <= g < node.gpus})
        self.soon: list[tuple[float, int]] = []
        # Unknown holders (a notebook) free their GPU at no known time.
        self.plan: list[float] = [INF] * node.gpus
        for gpu in self.avail:
            self.plan[gpu] = now
        self.version: list[int] = [0] * node.gpus

    def window_start_ok(self, start: float, runtime: float, reservation_id: ReservationId | None) -> float:
        """The earliest time >= start at which [t, t + runtime) crosses no window of another reservation."""
        t = start
        for window in self.windows:
            if window.reservation_id == reservation_id:
                continue
            if window.ends_at <= t:
                continue
            if window.starts_at >= t + runtime:
                break
            t = window.ends_at
        return t

    def own_window(self, reservation_id: ReservationId) -> Window | None:
        for window in self.windows:
            if window.reservation_id == reservation_id:
                return window
        return None


class Lab:
    """The nodes of one pass, with GPUs handed out as the pass decides."""

    def __init__(self, state: ClusterState, overrun_slack_s: float) -> None:
        now = state.now
        self.now = now
        self.nodes: list[NodeSlots] = [NodeSlots(node, i, now) for i, node in enumerate(state.nodes)]
        self.by_name: dict[str, NodeSlots] = {n.name: n for n in self.nodes}
        # Which running job holds which GPU, so that preemption knows what it frees.
        self.holdings: dict[JobId, list[tuple[NodeSlots, int]]] = {}
        for job in state.running:
            held: list[tuple[NodeSlots, int]] = []
            for placement in job.placements:
                node = self.by_name.get(placement.node)
                if node is None:
                    continue
                for gpu in placement.gpus:
                    if not 0 <= gpu < node.total:
                        continue
                    held.append((node, gpu))
                    if gpu in node.avail:
                        node.avail.remove(gpu)
                    if job.stopping_until is not None:
                        release = max(job.stopping_until, now)
                        node.soon.append((release, gpu))
                        node.plan[gpu] = release
                    elif job.started_at + job.max_runtime_s <= now:
                        node.plan[gpu] = now + overrun_slack_s
                    else:
                        ran = max(now - job.started_at, 0.0)
                        node.plan[gpu] = job.started_at + expected_total(job.expected_runtime_s, job.max_runtime_s, ran)
            self.holdings[job.id] = held
        for node in self.nodes:
            node.soon.sort()
            if not node.schedulable:
                node.avail = []
                node.soon = []
                node.plan = [INF] * node.total
        self.total_avail = sum(len(n.avail) for n in self.nodes)
        self.total_soon = sum(len(n.soon) for n in self.nodes)
        self.schedulable_gpus = sum(n.total for n in self.nodes if n.schedulable)
        self.has_windows = any(n.windows for n in self.nodes)
        # Reservation id -> the nodes it holds.
        self.reservation_nodes: dict[ReservationId, list[NodeSlots]] = {}
        for node in self.nodes:
            for window in node.windows:
                self.reservation_nodes.setdefault(window.reservation_id, []).append(node)

    # --- Which nodes a job may use ---------------------------------------------------

    def candidate_nodes(self, job: QueuedJob) -> list[NodeSlots]:
        if job.reservation_id is None:
            return self.nodes
        return self.reservation_nodes.get(job.reservation_id, [])

    def usable_at(self, node: NodeSlots, job: QueuedJob, start: float) -> bool:
        """May the job run on the node from `start` for its whole max runtime (reservations only)?"""
        if job.reservation_id is None:
            if not node.windows:
                return True
            return node.window_start_ok(start, job.max_runtime_s, None) == start
        window = node.own_window(job.reservation_id)
        return window is not None and window.starts_at <= start and start + job.max_runtime_s <= window.ends_at

    # --- Now ---------------------------------------------------------------------------

    def fit_now(self, job: QueuedJob) -> list[tuple[NodeSlots, list[int]]] | None:
        g, k = job.gpus_per_node, job.nodes
        if self.total_avail < g * k:
            return None
        now = self.now
        chosen: list[NodeSlots] = []
        if k == 1:
            # Best fit: the node with the fewest free GPUs that still holds the job keeps big holes whole.
            best: NodeSlots | None = None
            for node in self.candidate_nodes(job):
                free = len(node.avail)
                if free >= g and (best is None or free < len(best.avail)) and self.usable_at(node, job, now):
                    best = node
                    if free == g:
                        break
            if best is None:
                return None
            chosen = [best]
        else:
            fitting = [n for n in self.candidate_nodes(job) if len(n.avail) >= g and self.usable_at(n, job, now)]
            if len(fitting) < k:
                return None
            fitting.sort(key=lambda n: len(n.avail))
            chosen = fitting[:k]
        return [(node, node.avail[:g]) for node in chosen]

    def take_now(self, job: QueuedJob, picks: list[tuple[NodeSlots, list[int]]]) -> tuple[Placement, ...]:
        end = self.now + job.expected_s
        placements = []
        for node, gpus in picks:
            for gpu in gpus:
                node.avail.remove(gpu)
                node.plan[gpu] = end
                node.version[gpu] += 1
            self.total_avail -= len(gpus)
            placements.append(Placement(node=node.name, gpus=tuple(gpus)))
        return tuple(placements)

    # --- Soon: GPUs that stopping jobs hand over --------------------------------------

    def fit_soon(
        self, job: QueuedJob, extra: dict[NodeSlots, list[int]] | None = None, extra_release: float | None = None
    ) -> _Claim | None:
        """Enough GPUs free now, plus GPUs of stopping jobs, plus `extra` (GPUs a preemption would free)?

        The claim takes GPUs that are coming free before GPUs that are free now, so that as few as possible
        idle while the job waits for the rest. Returns None if the job does not fit that way.
        """
        g, k = job.gpus_per_node, job.nodes
        extra = extra or {}
        extra_total = sum(len(v) for v in extra.values())
        if self.total_soon + extra_total == 0 or self.total_avail + self.total_soon + extra_total < g * k:
            return None
        released_extra = self.now if extra_release is None else extra_release
        options: list[tuple[int, float, int, NodeSlots, list[tuple[float, int, str]]]] = []
        for node in self.candidate_nodes(job):
            coming = [(released_extra, gpu, "extra") for gpu in extra.get(node, ())]
            coming += [(release, gpu, "soon") for release, gpu in node.soon]
            if len(node.avail) + len(coming) < g:
                continue
            coming.sort()
            picks = coming[:g]
            release = max((r for r, _, _ in picks), default=self.now)
            from_avail = g - len(picks)
            picks += [(self.now, gpu, "avail") for gpu in node.avail[:from_avail]]
            if not self.usable_at(node, job, max(release, self.now)):
                continue
            options.append((from_avail, release, node.index, node, picks))
        if len(options) < k:
            return None
        options.sort(key=lambda o: o[:3])
        claim = _Claim()
        for _, _, _, node, picks in options[:k]:
            for release, gpu, source in picks:
                claim.add(node, gpu, release, source)
        return claim

    def take_claim(self, claim: _Claim, start: float, runtime: float) -> None:
        for node, gpu, _release, source in claim.items:
            if source == "avail":
                node.avail.remove(gpu)
                self.total_avail -= 1
            elif source == "soon":
                node.soon = [(t, g) for t, g in node.soon if g != gpu]
                self.total_soon -= 1
            node.plan[gpu] = start + runtime
            node.version[gpu] += 1


class _Claim:
    """GPUs set aside for a job that starts as soon as stopping jobs have let go of them."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: list[tuple[NodeSlots, int, float, str]] = []

    def add(self, node: NodeSlots, gpu: int, release: float, source: str) -> None:
        self.items.append((node, gpu, release, source))

    def gpus_on(self, node: NodeSlots) -> list[int]:
        return [gpu for n, gpu, _, _ in self.items if n is node]

    @property
    def start(self) -> float:
        return max(release for _, _, release, _ in self.items)


class Planner:
    """Estimated starts: every job runs as long as expected (its prediction, else its max runtime; runtime.py);
    queued jobs take GPUs in queue order. Reservation windows are kept by max runtimes all the same.

    One-GPU jobs (most of the queue) pop the earliest free GPU from a heap; wider jobs scan the nodes.
    """

    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        self.now = lab.now
        self.heap: list[tuple[float, int, int, int]] = []
        for node in lab.nodes:
            if not node.schedulable:
                continue
            for gpu, t in enumerate(node.plan):
                if t < INF:
                    self.heap.append((max(t, self.now), node.index, gpu, node.version[gpu]))
        heapq.heapify(self.heap)

    def _set(self, node: NodeSlots, gpu: int, t: float) -> None:
        node.plan[gpu] = t
        node.version[gpu] += 1
        if t < INF:
            heapq.heappush(self.heap, (t, node.index, gpu, node.version[gpu]))

    def plan(self, job: QueuedJob) -> float | None:
        """Book the job into the plan and return its estimated start, or None if nothing ever fits."""
        if job.gpus_per_node == 1 and job.nodes == 1 and job.reservation_id is None:
            return self._plan_one(job)
        return self._plan_wide(job)

    def _plan_one(self, job: QueuedJob) -> float | None:
        heap, nodes, runtime, expected = self.heap, self.lab.nodes, job.max_runtime_s, job.expected_s
        best: tuple[float, int, int] | None = None
        aside: list[tuple[float, int, int, int]] = []
        while heap:
            t, ni, gi, version = heap[0]
            node = nodes[ni]
            if version != node.version[gi]:
                heapq.heappop(heap)
                continue
            if best is not None and t >= best[0]:
                break
            aside.append(heapq.heappop(heap))
            start = node.window_start_ok(t, runtime, None) if node.windows else t
            if best is None or start < best[0]:
                best = (start, ni, gi)
            if start == t:
                break
        for entry in aside:
            heapq.heappush(heap, entry)
        if best is None or best[0] == INF:
            return None
        start, ni, gi = best
        self._set(nodes[ni], gi, start + expected)
        return start

    def _plan_wide(self, job: QueuedJob) -> float | None:
        g, k, runtime, now = job.gpus_per_node, job.nodes, job.max_runtime_s, self.now
        reservation = job.reservation_id
        options: list[tuple[float, int, NodeSlots]] = []
        windowed = False
        for node in self.lab.candidate_nodes(job):
            if node.total < g or not node.schedulable:
                continue
            ready = node.plan[0] if node.total == 1 else sorted(node.plan)[g - 1]
            if ready == INF:
                continue
            if reservation is not None:
                window = node.own_window(reservation)
                if window is None:
                    continue
                ready = max(ready, window.starts_at)
                if ready + runtime > window.ends_at:
                    continue
            elif node.windows:
                windowed = True
            options.append((ready if ready > now else now, node.index, node))
        if len(options) < k:
            return None
        options.sort()
        start = options[k - 1][0]
        if reservation is not None:
            chosen = [node for _, _, node in options if self._inside_own_window(node, job, start)][:k]
            if len(chosen) < k:
                return None
        else:
            chosen = [node for _, _, node in options[:k]]
            if windowed and any(n.windows and n.window_start_ok(start, runtime, None) != start for n in chosen):
                found = self._earliest_with_windows(job, options)
                if found is None:
                    return None
                start, chosen = found
        end = start + job.expected_s
        for node in chosen:
            if node.total == 1:
                self._set(node, 0, end)
                continue
            plan = node.plan
            for gpu in sorted(range(node.total), key=plan.__getitem__)[:g]:
                self._set(node, gpu, end)
        return start

    @staticmethod
    def _inside_own_window(node: NodeSlots, job: QueuedJob, start: float) -> bool:
        window = node.own_window(job.reservation_id) if job.reservation_id is not None else None
        return window is not None and window.starts_at <= start and start + job.max_runtime_s <= window.ends_at

    def _earliest_with_windows(
        self, job: QueuedJob, options: list[tuple[float, int, NodeSlots]]
    ) -> tuple[float, list[NodeSlots]] | None:
        k, runtime = job.nodes, job.max_runtime_s
        times: set[float] = {t for t, _, _ in options}
        for _, _, node in options:
            times.update(w.ends_at for w in node.windows if w.ends_at > self.now)
        floor = options[k - 1][0]
        for t in sorted(x for x in times if x >= floor):
            chosen = [node for ready, _, node in options if ready <= t and node.window_start_ok(t, runtime, None) == t]
            if len(chosen) >= k:
                return t, chosen[:k]
        return None
