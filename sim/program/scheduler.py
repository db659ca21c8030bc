"""Many calls on one chip timeline: the scheduler of a program.

Every call is a job submitted to one :class:`~dspsim.sim.engine.model.Timeline`, so calls that
run at once share its DDR and shared-SRAM links, its L2 ports and its DMA engines or
transfer controllers, transfer by transfer (max-min fair fluid flows in the fast fidelity,
burst arbitration in the detailed one). A call starts once its dependencies
(:mod:`dspsim.sim.program.graph`: stream order and events) have completed and every core
of its mask is free: a core runs one call at a time. Calls that are ready and blocked by
busy cores are served first come, first served per core: a call waiting for cores holds
its claim on them, so a later call cannot overtake it on a core they share.

A program of one call is exactly that call run alone (:func:`~dspsim.sim.engine.machine.run_job`):
same timeline, same tiling, same datapath.
"""
from __future__ import annotations

import functools
import heapq
from dataclasses import dataclass, field

from dspsim.sim.chip.load import ChipConfig
from dspsim.sim.engine.job import Job
from dspsim.sim.engine.machine import (
    CallRun,
    Timing,
    alone_transfer_timing,
    check_fidelity,
    finish_timeline,
    plan,
    plan_tiling,
)
from dspsim.sim.engine.model import Timeline
from dspsim.sim.engine.tiling import TilingChoice
from dspsim.sim.engine.vector import VectorCost
from dspsim.sim.program.graph import Dependencies, Node


@dataclass
class PlannedCall:
    """A call checked and tiled, ready to be submitted to a program's timeline."""

    job: Job
    cost: VectorCost
    tiling: TilingChoice | None
    tile_size: int
    alone: str  # how its transfers are timed when it runs alone (alone_transfer_timing)


def plan_call(config: ChipConfig, job: Job, fidelity: str,
              tilings: dict | None = None) -> PlannedCall:
    """Check ``job`` and choose its tile size as the call alone would.

    ``tilings`` caches choices between calls that differ only in their addresses (same
    dtype, length, mix, cores and regions: the same tiling).
    """
    cost = plan(config, job)
    key = (job.dtype, job.length, tuple(sorted(job.mix.items())), job.storage, job.cores,
           job.tile_bytes, tuple(o.span.region for o in job.inputs + job.outputs))
    if tilings is not None and key in tilings:
        tiling = tilings[key]
    else:
        tiling, _ = plan_tiling(config, job, cost)
        if tilings is not None:
            tilings[key] = tiling
    tile = tiling.tile_elements if tiling is not None else job.length
    return PlannedCall(job, cost, tiling, tile,
                       alone_transfer_timing(config, job, cost, tile, fidelity))


def program_transfer_timings(config: ChipConfig, calls: list[PlannedCall],
                       fidelity: str) -> list[str]:
    """How each call's transfers are timed in the program: as the call alone times them.

    A call's timing mode is its own, whatever the others need, so that its cycles never
    depend on which calls share the program. Calls timed by different models still share
    the links: a transfer timed burst by burst stands in the fluid network as a flow of
    its own, taking its max-min share there, and the burst arbiters pass bursts at what
    the fluid flows leave of each link (:meth:`~dspsim.sim.engine.detailed.BurstDMA.transfer`).
    ``config`` is kept for callers that time programs on a chip.
    """
    del config, fidelity  # every call keeps its own model in either fidelity
    return [c.alone for c in calls]


@dataclass
class ScheduledCall:
    """When one call of a program ran and what held it back."""

    index: int
    stream: str
    cores: tuple[int, ...]
    ready: float  # cycle its dependencies had all completed
    start: float  # cycle it launched (>= ready: its cores may have been busy)
    end: float
    waited_for: str  # "nothing", "stream order", "event NAME" or "cores busy"
    #: the call it waited for last (a dependency, or the call holding its cores); None if none
    after_call: int | None
    cores_held_by: int | None  # the call whose cores it waited for, if it did
    timing: Timing
    transfer_timing: str


@dataclass
class ProgramTiming:
    """Everything the model measured for a program."""

    cycles: float
    calls: list[ScheduledCall]
    ddr_samples: list[tuple[float, float]]
    scheduled_events: int
    fidelity: str
    #: call indices in the order their effects on memory happen (a topological order)
    memory_order: list[int] = field(default_factory=list)
    #: the cycle at which each recorded event completed
    event_cycles: dict[str, float] = field(default_factory=dict)


class _Scheduler:
    """Starts calls on the timeline as their dependencies complete and their cores free."""

    def __init__(self, timeline: Timeline, config: ChipConfig, planned: dict[int, PlannedCall],
                 graph: Dependencies, models: dict[int, str], fidelity: str,
                 record_slices: bool) -> None:
        self.timeline, self.config, self.planned = timeline, config, planned
        self.graph, self.models = graph, models
        self.fidelity, self.record_slices = fidelity, record_slices
        self.waiting = {node: len(deps) for node, deps in graph.deps.items()}
        self.dependents: dict[Node, list[Node]] = {}
        for node, deps in graph.deps.items():
            for dep, _ in deps:
                self.dependents.setdefault(dep, []).append(node)
        self.completed: dict[Node, float] = {}
        self.last_dep: dict[Node, tuple[Node, str] | None] = {n: None for n in graph.deps}
        self.ready: list[tuple[float, int]] = []  # heap of (ready cycle, call index)
        self.ready_at: dict[int, float] = {}
        self.core_free: dict[int, bool] = {}
        self.core_last: dict[int, int] = {}  # the call that ran last on each core
        self.runs: dict[int, CallRun] = {}
        self.started: dict[int, tuple[float, int | None]] = {}
        self.dispatching = False
        self.again = False

    def begin(self) -> None:
        # collected first: satisfying one may bring others' counts to 0, which then count
        # as satisfied through it, never twice
        for node in [n for n, count in self.waiting.items() if not count]:
            self._satisfied(node)
        self._dispatch()

    def _satisfied(self, node: Node) -> None:
        """Every dependency of ``node`` has completed."""
        if node[0] == "record":
            self._complete(node)
        else:
            now = float(self.timeline.env.now)
            self.ready_at[node[1]] = now
            heapq.heappush(self.ready, (now, node[1]))

    def _complete(self, node: Node) -> None:
        self.completed[node] = float(self.timeline.env.now)
        for dependent in self.dependents.get(node, ()):
            self.waiting[dependent] -= 1
            reason = next(r for d, r in self.graph.deps[dependent] if d == node)
            self.last_dep[dependent] = (node, reason)
            if not self.waiting[dependent]:
                self._satisfied(dependent)

    def _dispatch(self) -> None:
        # a call of length 0 ends as it starts, inside this loop: run again, not deeper
        if self.dispatching:
            self.again = True
            return
        self.dispatching = True
        try:
            self.again = True
            while self.again:
                self.again = False
                self._start_what_can()
        finally:
            self.dispatching = False

    def _start_what_can(self) -> None:
        claimed: set[int] = set()
        held = []
        while self.ready:
            ready, index = heapq.heappop(self.ready)
            cores = self.planned[index].job.cores
            if claimed.intersection(cores) or not all(self.core_free.get(c, True) for c in cores):
                claimed.update(cores)
                held.append((ready, index))
                continue
            holder = max((self.core_last[c] for c in cores if c in self.core_last),
                         key=self._end, default=None)
            for core in cores:
                self.core_free[core] = False
            self.started[index] = (ready, holder)
            plan = self.planned[index]
            self.runs[index] = CallRun(
                self.timeline, self.config, plan.job, plan.cost, plan.tile_size,
                record_slices=self.record_slices, fidelity=self.fidelity,
                transfer_timing=self.models[index], then=functools.partial(self._finished, index))
        for entry in held:
            heapq.heappush(self.ready, entry)

    def _finished(self, index: int) -> None:
        for core in self.planned[index].job.cores:
            self.core_free[core] = True
            self.core_last[core] = index
        self._complete(("call", index))
        self._dispatch()

    def scheduled(self, index: int) -> ScheduledCall:
        run = self.runs[index]
        ready, holder = self.started[index]
        cause = self.last_dep[("call", index)]
        after: int | None
        if run.start > ready and holder is not None:
            waited, after = "cores busy", holder
        elif cause is not None and ready > 0:
            waited, after = cause[1], self._call_behind(cause[0])
        else:
            waited, after = "nothing", None
        return ScheduledCall(
            index=index, stream=self.graph.stream_of[("call", index)],
            cores=self.planned[index].job.cores, ready=ready, start=run.start, end=self._end(index),
            waited_for=waited, after_call=after,
            cores_held_by=holder if waited == "cores busy" else None,
            timing=self._timing(index), transfer_timing=self.models[index])

    def _end(self, index: int) -> float:
        """The cycle at which a call that has finished ended."""
        end = self.runs[index].end
        assert end is not None, f"call {index} has not finished"
        return end

    def _timing(self, index: int) -> Timing:
        timing = self.runs[index].timing()
        timing.tiling = self.planned[index].tiling
        return timing

    def _call_behind(self, node: Node) -> int | None:
        """The call whose completion completed ``node`` (itself if it is a call)."""
        while node[0] == "record":
            cause = self.last_dep[node]
            if cause is None:
                return None
            node = cause[0]
        return node[1]


def run_program(config: ChipConfig, planned: dict[int, PlannedCall], graph: Dependencies, *,
                fidelity: str = "fast", record_slices: bool = True) -> ProgramTiming:
    """Run the planned calls (by index) on one timeline in the order ``graph`` imposes."""
    check_fidelity(fidelity)
    indices = sorted(planned)
    models = dict(zip(indices, program_transfer_timings(config, [planned[i] for i in indices],
                                                  fidelity), strict=True))
    timeline = Timeline(config)
    scheduler = _Scheduler(timeline, config, planned, graph, models, fidelity, record_slices)
    scheduler.begin()
    finish_timeline(timeline)
    calls = [scheduler.scheduled(i) for i in indices]
    rank = {node[1]: k for k, node in enumerate(graph.order) if node[0] == "call"}
    order = sorted(indices, key=lambda i: (scheduler.runs[i].start, scheduler.runs[i].end,
                                           rank[i]))
    return ProgramTiming(
        cycles=max((c.end for c in calls), default=0.0), calls=calls,
        ddr_samples=list(timeline.ddr_samples), scheduled_events=timeline.env.scheduled_events,
        fidelity=fidelity, memory_order=order,
        event_cycles={node[1]: cycle for node, cycle in scheduler.completed.items()
                      if node[0] == "record"})
