"""One call launched on a timeline, and the Timing it measured.

A :class:`CallRun` builds a call's model and datapath on a
:class:`~dspsim.sim.engine.model.Timeline`, groups its cores (identical cores share one
simulation when fluid flows keep them in step), starts its pipeline (with the closed-form
steady state of :mod:`dspsim.sim.engine.steady` when the fast fidelity may use it) and,
once it has ended, gives its :class:`Timing`. :mod:`dspsim.sim.engine.machine` runs one
call alone this way; a program submits many to one timeline.
"""
from __future__ import annotations

import dataclasses
import math
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import itemgetter
from typing import cast

from dspsim.sim.chip.load import ChipConfig
from dspsim.sim.engine.cores import ENGINES, FIDELITIES, CoreTiming, Fidelity
from dspsim.sim.engine.cutoff import Cutoff
from dspsim.sim.engine.datapath import Datapath, TransferTiming, group_cores
from dspsim.sim.engine.dma import sharing_cores
from dspsim.sim.engine.job import Job
from dspsim.sim.engine.model import Model, Timeline
from dspsim.sim.engine.pipeline import run_private, run_shared
from dspsim.sim.engine.roofline import roofline_bound, roofline_terms
from dspsim.sim.engine.settle import SettleWatch
from dspsim.sim.engine.slices import Slice, SliceLog
from dspsim.sim.engine.steady import SteadyState
from dspsim.sim.engine.tiling import TilingChoice, partition
from dspsim.sim.engine.vector import VectorCost
from dspsim.sim.errors import ArgumentError, ConfigError


@dataclass
class Timing:
    """Everything the model measured for one call, in cycles and bytes."""

    cycles: float
    cores: list[CoreTiming]
    tile_elements: int
    vector: VectorCost
    bytes_read: dict[str, int]
    bytes_written: dict[str, int]
    roofline_terms: dict[str, float]
    slice_log: SliceLog | None = field(default=None, repr=False)
    ddr_samples: list[tuple[float, float]] = field(default_factory=list)  # (cycle, bytes/cycle)
    scheduled_events: int = 0
    fidelity: Fidelity = "fast"
    transfer_timing: TransferTiming = "fluid"  # how transfers were timed: see dma_timing
    tiling: TilingChoice | None = None  # shared-storage calls: the tile size and why
    origin: float = 0.0  # the timeline cycle at which the call was launched
    #: cycles of the pipelines' steady state advanced in closed form rather than simulated
    solved_cycles: float = 0.0

    @property
    def start(self) -> float:
        """The timeline cycle at which the call was launched (0 for a call run alone)."""
        return self.origin

    @property
    def slices(self) -> list[Slice]:
        """Every engine activity of every core, in the order it ended (built on demand),
        in cycles from the call's launch."""
        return self.slice_log.slices(self.origin) if self.slice_log is not None else []

    @property
    def roofline_cycles(self) -> float:
        """A lower bound on the call's cycles: fixed overheads plus the busiest resource."""
        return roofline_bound(self.roofline_terms)[0]

    @property
    def bound(self) -> str:
        """The resource whose roofline term is largest."""
        return max(self.roofline_terms, key=lambda term: self.roofline_terms[term])


def check_fidelity(fidelity) -> str:
    """``fidelity`` if it names a model fidelity; an ArgumentError saying the choices if not."""
    if not isinstance(fidelity, str) or fidelity not in FIDELITIES:
        raise ArgumentError(f"fidelity={fidelity!r} is not a model fidelity; use one of "
                            f"{', '.join(repr(f) for f in FIDELITIES)} (default 'fast')")
    return fidelity


class CallRun:
    """One call launched on a timeline at its current cycle.

    It runs as the timeline's clock advances; ``then()`` is called when its barrier ends
    (at once for a call of length 0, which launches nothing). :meth:`timing` then gives
    its Timing, in cycles counted from its launch. With a finite ``give_up_above`` (a
    candidate of the tile search, alone on its timeline), the timeline's run raises
    :class:`~dspsim.sim.engine.cutoff.CannotWin` once the call's cycles are sure to
    exceed it. With ``settle_within`` (a call alone, timed burst by burst on trial), it
    raises :class:`~dspsim.sim.engine.settle.Unsettled` once that many tiles have passed
    with no period of its steady state advanced.
    """

    def __init__(self, timeline: Timeline, config: ChipConfig, job: Job, cost: VectorCost,
                 tile_size: int, *, record_slices: bool, fidelity: str, transfer_timing: str,
                 mirror_cores: bool = True, then: Callable[[], None] = lambda: None,
                 give_up_above: float = math.inf, settle_within: int | None = None) -> None:
        self.timeline = timeline
        self.config = config
        self.cost = cost
        self.fidelity = fidelity
        self.transfer_timing = transfer_timing
        self.tile_size = tile_size
        self.cores = fresh_cores(job, cost.lanes)
        self.model = model = Model(config, job, cost, record_slices, timeline)
        self.events_at_start = timeline.env.scheduled_events
        self.events = 0
        self.end: float | None = None
        self._then = then
        self.datapath = datapath = Datapath(model, transfer_timing, fidelity)
        # only fluid flows in lock-step keep identical cores in step, so only they may share
        # one simulation; and only while each core has engines of its own (a shared pool
        # serves them in turn)
        mirror = (transfer_timing == "fluid" and mirror_cores
                  and all(len(pool) == 1 for pool in sharing_cores(config, job.cores)))
        self.groups = groups = group_cores(self.cores, tile_size, cost.lanes, mirror=mirror)
        used = {o.span.region for o in job.inputs + job.outputs}
        stagger = (config.dma.burst_bytes / min(model.links[r].capacity for r in used)
                   if transfer_timing == "staggered" else 0.0)
        self.steady: SteadyState | None = None
        timeline.running += 1
        if not job.length:
            self._done()
        elif job.storage == "private":
            run_private(model, datapath, groups[0], self._done)
        else:
            watch: list[Callable] = []
            if fidelity == "fast" and transfer_timing in ("fluid", "staggered", "bursts"):
                watch.append(self._steady_state)
                if settle_within is not None:
                    watch.append(lambda pipelines: SettleWatch(
                        pipelines, lambda: self.steady.skipped_periods if self.steady else 0,
                        settle_within))
            if math.isfinite(give_up_above):
                watch.append(lambda pipelines: Cutoff(model, pipelines, give_up_above))
            run_shared(model, datapath, groups, stagger, self._done, tuple(watch))

    def _steady_state(self, pipelines: list) -> SteadyState:
        """The closed-form advance of the pipelines' periodic part, active while the call
        is alone on its timeline (another call's events would move with its own)."""
        timeline = self.timeline
        self.steady = SteadyState(self.model, pipelines, self.datapath.dma,
                                  lambda: timeline.running == 1)
        return self.steady

    def _done(self) -> None:
        self.timeline.running -= 1
        self.end = float(self.timeline.env.now)
        self.events = self.timeline.env.scheduled_events - self.events_at_start
        self._then()

    @property
    def start(self) -> float:
        """The timeline cycle at which the call was launched."""
        return self.model.origin

    def timing(self) -> Timing:
        """The call's Timing, counted from its launch (once it has ended and the timeline
        has finished)."""
        model, origin, end = self.model, self.model.origin, self.end
        if end is None:
            raise RuntimeError("a call's timing is known only once it has ended")
        for group in self.groups:
            for member in group.members:
                member.busy = dict(group.busy)
        cores = [dataclasses.replace(c, finish=c.finish - origin if c.finish else 0.0)
                 for c in self.cores]
        samples = window(self.timeline.ddr_samples, origin, end)
        if origin:
            samples = [(cycle - origin, rate) for cycle, rate in samples]
        return Timing(
            cycles=end - origin, cores=cores, tile_elements=self.tile_size,
            vector=self.cost, bytes_read=model.bytes_read, bytes_written=model.bytes_written,
            roofline_terms=roofline_terms(self.config, model.job, self.cost,
                                          [c.elements for c in cores]),
            slice_log=model.log, ddr_samples=samples, scheduled_events=self.events,
            fidelity=cast(Fidelity, self.fidelity),
            transfer_timing=cast(TransferTiming, self.transfer_timing), origin=origin,
            solved_cycles=self.steady.skipped_cycles if self.steady is not None else 0.0)


def window(samples: list[tuple[float, float]], start: float,
           end: float) -> list[tuple[float, float]]:
    """The samples of a step function (cycle, value) that describe it over [start, end]:
    the value in force at ``start`` (when it began earlier) and every change up to ``end``.

    ``samples`` are in increasing cycle order: two binary searches find the window, so
    that a program's calls each read their part of the timeline in logarithmic time.
    """
    first = bisect_left(samples, start, key=itemgetter(0))
    last = bisect_right(samples, end, lo=first, key=itemgetter(0))
    inside = samples[first:last]
    if first and (not inside or inside[0][0] > start):
        inside.insert(0, (start, samples[first - 1][1]))
    return inside


def finish_timeline(timeline: Timeline) -> None:
    """Run ``timeline`` until nothing is left to happen, and let its datapaths summarise."""
    timeline.env.run()
    if not math.isfinite(timeline.env.now):
        raise ConfigError(
            f"{timeline.config.source}: this run would take {timeline.env.now:,} cycles: the "
            f"chip's bandwidths are too small or its cycle counts too large to simulate")
    timeline.finish()


def fresh_cores(job: Job, lanes: int) -> list[CoreTiming]:
    """Each core's part of the job, with nothing done yet."""
    if job.storage == "private":
        return [CoreTiming(job.cores[0], 0, job.length, 0, {e: 0.0 for e in ENGINES}, 0.0)]
    return [CoreTiming(core, start, stop, 0, {e: 0.0 for e in ENGINES}, 0.0)
            for core, start, stop in partition(job.length, job.cores, lanes)]
