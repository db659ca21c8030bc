"""One call on the simulated chip: planning, launching it on a timeline, its Timing.

A call is a job submitted to a :class:`~dspsim.sim.engine.model.Timeline`, the chip's shared
state (clock, links, DMA engines). :func:`run_job` runs one call alone on a fresh
timeline; a program (:mod:`dspsim.sim.program.scheduler`) submits many to one timeline, where they
share links and engines transfer by transfer. The work itself is the tile pipeline of
:mod:`dspsim.sim.engine.pipeline`, timed by a datapath:

* ``"fast"`` (:mod:`dspsim.sim.engine.datapath`): a transfer is a fluid flow whose rate is its
  max-min fair share of the links it crosses (:mod:`dspsim.sim.engine.network`); a tile's vector
  work is one closed-form delay. Cores that get the same number of elements then behave
  identically (same tiles, same transfers at the same instants, symmetric links), so one
  of them is simulated for all and its flows count once per core on the shared links: the
  event count follows the tiles of at most three distinct cores, whatever the core count.
  Fluid sharing is the limit of burst arbitration over many bursts; a call whose tile
  transfers are shorter than :data:`FLUID_MIN_BURSTS` bursts is far from that limit, so
  its DMA is simulated burst by burst, as in the detailed model, when that is cheap
  (:data:`BURST_BUDGET`).
* ``"detailed"`` (:mod:`dspsim.sim.engine.detailed`): every core is simulated, DMA moves bursts
  with round-robin arbitration on every link, and the vector core issues every iteration.
"""
from __future__ import annotations

import dataclasses
import math
import threading
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import itemgetter

from dspsim.sim.chip.load import ChipConfig
from dspsim.sim.engine.datapath import (
    BURST_BUDGET,
    FLUID_MIN_BURSTS,
    TRANSFER_TIMINGS,
    Datapath,
    TransferTiming,
    dma_timing,
    group_cores,
)
from dspsim.sim.engine.dma import sharing_cores
from dspsim.sim.engine.job import Job
from dspsim.sim.engine.model import (
    CALL_TRACK,
    COMPUTE,
    ENGINES,
    FIDELITIES,
    LOAD,
    STORE,
    CoreTiming,
    CountingEnvironment,
    Fidelity,
    Model,
    Slice,
    SliceLog,
    Timeline,
)
from dspsim.sim.engine.pipeline import run_private, run_shared
from dspsim.sim.engine.roofline import roofline_terms
from dspsim.sim.engine.steady import SteadyState
from dspsim.sim.engine.tiling import (
    TilingChoice,
    balanced_tiles,
    choose_tiling,
    fixed_tile,
    partition,
    tile_elements,
)
from dspsim.sim.engine.vector import VectorCost, call_cost
from dspsim.sim.errors import ArgumentError, ConfigError

__all__ = ["BURST_BUDGET", "CALL_TRACK", "COMPUTE", "ENGINES", "FIDELITIES", "FLUID_MIN_BURSTS",
           "LOAD", "STORE", "TRANSFER_TIMINGS", "CallRun", "CoreTiming", "CountingEnvironment",
           "Slice", "Timeline", "Timing", "balanced_tiles", "check_fidelity", "dma_timing",
           "finish_timeline", "partition", "plan", "plan_tiling", "roofline_terms", "run_job",
           "tile_elements"]


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
        terms = dict(self.roofline_terms)
        fixed = terms.pop("launch overhead", 0.0)
        return fixed + max(terms.values(), default=0.0)

    @property
    def bound(self) -> str:
        """The resource whose roofline term is largest."""
        return max(self.roofline_terms, key=self.roofline_terms.get)


def check_fidelity(fidelity) -> str:
    """``fidelity`` if it names a model fidelity; an ArgumentError saying the choices if not."""
    if not isinstance(fidelity, str) or fidelity not in FIDELITIES:
        raise ArgumentError(f"fidelity={fidelity!r} is not a model fidelity; use one of "
                            f"{', '.join(repr(f) for f in FIDELITIES)} (default 'fast')")
    return fidelity


def plan(config: ChipConfig, job: Job) -> VectorCost:
    """The checks a job must pass before it runs; returns its vector cost.

    Raises ConfigError (an instruction the chip lacks) or CapacityError (tiles that do
    not fit L2, or a fixed tile that cannot be used). It touches nothing, so a launcher
    can call it before writing results.
    """
    cost = call_cost(config, job.dtype, job.mix)
    if job.storage == "shared":
        fixed_tile(config, job, cost.lanes)
    return cost


class CallRun:
    """One call launched on a timeline at its current cycle.

    It runs as the timeline's clock advances; ``then()`` is called when its barrier ends
    (at once for a call of length 0, which launches nothing). :meth:`timing` then gives
    its Timing, in cycles counted from its launch.
    """

    def __init__(self, timeline: Timeline, config: ChipConfig, job: Job, cost: VectorCost,
                 tile_size: int, *, record_slices: bool, fidelity: str, transfer_timing: str,
                 mirror_cores: bool = True, then: Callable[[], None] = lambda: None) -> None:
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
            solve = fidelity == "fast" and transfer_timing in ("fluid", "staggered", "bursts")
            run_shared(model, datapath, groups, stagger, self._done,
                       self._steady_state if solve else None)

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
        model, origin = self.model, self.model.origin
        for group in self.groups:
            for member in group.members:
                member.busy = dict(group.busy)
        cores = [dataclasses.replace(c, finish=c.finish - origin if c.finish else 0.0)
                 for c in self.cores]
        samples = window(self.timeline.ddr_samples, origin, self.end)
        if origin:
            samples = [(cycle - origin, rate) for cycle, rate in samples]
        return Timing(
            cycles=self.end - origin, cores=cores, tile_elements=self.tile_size,
            vector=self.cost, bytes_read=model.bytes_read, bytes_written=model.bytes_written,
            roofline_terms=roofline_terms(self.config, model.job, self.cost,
                                          [c.elements for c in cores]),
            slice_log=model.log, ddr_samples=samples, scheduled_events=self.events,
            fidelity=self.fidelity, transfer_timing=self.transfer_timing, origin=origin,
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


def _simulate(config: ChipConfig, job: Job, cost: VectorCost, tile_size: int, *,
              record_slices: bool, fidelity: str, mirror_cores: bool) -> Timing:
    """Run the call alone on a fresh timeline with ``tile_size``-element tiles (the whole
    range if private)."""
    timeline = Timeline(config)
    transfer_timing = dma_timing(config, job, fresh_cores(job, cost.lanes), tile_size, fidelity)
    run = CallRun(timeline, config, job, cost, tile_size, record_slices=record_slices,
                  fidelity=fidelity, transfer_timing=transfer_timing, mirror_cores=mirror_cores)
    finish_timeline(timeline)
    return run.timing()


def fresh_cores(job: Job, lanes: int) -> list[CoreTiming]:
    """Each core's part of the job, with nothing done yet."""
    if job.storage == "private":
        return [CoreTiming(job.cores[0], 0, job.length, 0, {e: 0.0 for e in ENGINES}, 0.0)]
    return [CoreTiming(core, start, stop, 0, {e: 0.0 for e in ENGINES}, 0.0)
            for core, start, stop in partition(job.length, job.cores, lanes)]


def plan_tiling(config: ChipConfig, job: Job, cost: VectorCost, *, record_slices: bool = False,
                mirror_cores: bool = True) -> tuple[TilingChoice | None, Timing | None]:
    """The tile size of a shared-storage call (None for a private or empty one), and the
    fast-model Timing of the call alone with it when the choice simulated it.

    Candidates are timed alone on fresh timelines with the fast model, so that both
    fidelities, and a call alone or in a program, run one tiling. The choice is
    remembered (:data:`TILINGS`): a call the process has planned before is not searched
    again (its Timing is then None: the caller simulates the chosen tile).
    """
    if job.storage == "private" or not job.length:
        return None, None
    key = tiling_key(config, job)
    known = TILINGS.get(key)
    if known is not None:
        return known, None
    parts = partition(job.length, job.cores, cost.lanes)
    choice, timing = choose_tiling(config, job, cost, parts, lambda tile: _simulate(
        config, job, cost, tile, record_slices=record_slices, fidelity="fast",
        mirror_cores=mirror_cores))
    TILINGS.put(key, choice)
    return choice, timing


def tiling_key(config: ChipConfig, job: Job) -> tuple:
    """What a call's tile choice depends on: the chip, the instruction mix, the dtype, the
    length, the cores, the storage and where each operand lives (not its address)."""
    return (config.model_digest, job.dtype, job.itemsize, tuple(sorted(job.mix.items())),
            job.length, job.cores, job.storage, job.tile_bytes,
            tuple(o.span.region for o in job.inputs), tuple(o.span.region for o in job.outputs))


class TilingMemo:
    """Tile choices already made in this process, the least recently used forgotten first.

    Safe to share between threads (sweeps run calls in a thread pool): a lock guards the
    table; two threads planning one call at once both search, and agree.
    """

    def __init__(self, capacity: int = 4096) -> None:
        self.capacity = capacity
        self._choices: OrderedDict[tuple, TilingChoice] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple) -> TilingChoice | None:
        """The choice remembered for ``key``, or None."""
        with self._lock:
            choice = self._choices.get(key)
            if choice is not None:
                self._choices.move_to_end(key)
            return choice

    def put(self, key: tuple, choice: TilingChoice) -> None:
        """Remember ``choice`` for ``key``."""
        with self._lock:
            self._choices[key] = choice
            self._choices.move_to_end(key)
            while len(self._choices) > self.capacity:
                self._choices.popitem(last=False)

    def clear(self) -> None:
        """Forget every choice."""
        with self._lock:
            self._choices.clear()


#: The process's remembered tile choices.
TILINGS = TilingMemo()


def run_job(config: ChipConfig, job: Job, *, record_slices: bool = True,
            fidelity: str = "fast", mirror_cores: bool = True) -> Timing:
    """Simulate one call alone and return its timing.

    ``fidelity`` is ``"fast"`` (fluid DMA flows, or bursts for short transfers; closed-form
    vector loops) or ``"detailed"`` (DMA bursts with round-robin arbitration, every vector
    iteration issued; slower, for small lengths). A shared-storage call first chooses its
    tile size (:func:`~dspsim.sim.engine.tiling.choose_tiling`, timing candidates with the fast
    model, so that both fidelities run the same tiling). ``mirror_cores=False`` makes the
    fast model simulate every core even when several do identical work (the results are
    the same to the last bit; it exists to show that). Raises CapacityError if tiles
    cannot fit, ConfigError if the chip lacks an instruction the job issues, ArgumentError
    for an unknown fidelity.
    """
    check_fidelity(fidelity)
    cost = plan(config, job)
    tiling, timing = plan_tiling(config, job, cost, record_slices=record_slices,
                                 mirror_cores=mirror_cores)
    if timing is None or fidelity != "fast":
        timing = _simulate(config, job, cost, tiling.tile_elements if tiling else job.length,
                           record_slices=record_slices, fidelity=fidelity,
                           mirror_cores=mirror_cores)
    timing.tiling = (dataclasses.replace(tiling, candidates=dict(tiling.candidates))
                     if tiling is not None else None)
    return timing
