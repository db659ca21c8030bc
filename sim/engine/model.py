"""What the parts of a simulation share.

A :class:`Timeline` is the chip over a whole run: the SimPy environment, the links (DDR,
shared SRAM, every core's L2 port), the DMA engines or transfer controllers and the DDR
counter. A :class:`Model` is one call on a timeline: its job, vector cost, byte ledgers and
slice log. A plain call is a timeline of its own with one call on it; a program submits
many calls to one timeline, so that they share its links and engines transfer by transfer.

Both fidelities (:mod:`dspsim.sim.engine.pipeline`, :mod:`dspsim.sim.engine.detailed`) build on these.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from heapq import heappush
from typing import Literal, NamedTuple, get_args

import simpy
from simpy.core import NORMAL

from dspsim.sim.chip.load import ChipConfig
from dspsim.sim.engine.dma import engine_on, engine_pools
from dspsim.sim.engine.job import Job, Operand
from dspsim.sim.engine.network import Link
from dspsim.sim.engine.vector import VectorCost

#: Significant bits an instant keeps on the event queue (of a float's 53). Instants that
#: are equal in exact arithmetic but reached by different sums of delays differ in their
#: last bits, and by how much depends on where the call began (its launch cycles); kept
#: to this precision they are equal, so events due together run in the order they were
#: scheduled, whatever the offset. 2**-44 of the time is far below every slack the engine
#: allows (1e-9 relative), and whole cycles stay whole.
INSTANT_BITS = 44


def instant(when: float) -> float:
    """``when`` rounded to :data:`INSTANT_BITS` significant bits."""
    mantissa, exponent = math.frexp(when)
    return math.ldexp(round(mantissa * (1 << INSTANT_BITS)), exponent - INSTANT_BITS)


#: Trace thread names of a core's engines, in display order.
LOAD, COMPUTE, STORE = "dma-in", "vector", "dma-out"
ENGINES = (LOAD, COMPUTE, STORE)
#: The pseudo-core that holds call-level slices (launch, barrier).
CALL_TRACK = -1
#: The model fidelities ``run_job`` accepts; the first is the default.
Fidelity = Literal["fast", "detailed"]
FIDELITIES: tuple[Fidelity, ...] = get_args(Fidelity)


class _Wakeup:
    """What a plain heap entry carries: the callbacks SimPy's loop calls, and a success.

    A :class:`simpy.Timeout` builds a full event (value, environment, checks) for every
    delay; the engine's delays need only their callbacks called at an instant, so they
    are pushed on SimPy's heap as this, which its loop processes like any event.
    """

    __slots__ = ("callbacks",)
    _ok = True
    _value = None

    def __init__(self, then: Callable) -> None:
        self.callbacks = [then]


class CountingEnvironment(simpy.Environment):
    """A SimPy environment that counts the events it schedules.

    The count is read from SimPy's own event-id counter (every scheduled event draws one
    id), so that counting costs nothing per event.
    """

    def __init__(self) -> None:
        super().__init__()
        self._eid = itertools.count()

    @property
    def scheduled_events(self) -> int:
        """How many events have been scheduled so far."""
        # a count's repr is "count(N)", N the next id it hands out
        return int(repr(self._eid)[6:-1])

    def call_later(self, delay: float, then: Callable) -> None:
        """Call ``then(entry)`` ``delay`` cycles from now: one heap entry, no Timeout."""
        heappush(self._queue, (instant(self._now + delay), NORMAL, next(self._eid),
                               _Wakeup(then)))


@dataclass(frozen=True)
class Slice:
    """One activity of one engine: a tile transfer or a tile's vector work."""

    core: int  # CALL_TRACK for call-level slices
    engine: str
    name: str
    start: float
    end: float
    args: dict


@dataclass
class CoreTiming:
    """What one core did during the call."""

    core: int
    start: int  # first element (inclusive)
    stop: int  # last element (exclusive)
    tiles: int
    busy: dict[str, float]
    finish: float  # cycle at which its last store completed

    @property
    def elements(self) -> int:
        return self.stop - self.start


# ----------------------------------------------------------------------------- core groups
@dataclass
class CoreGroup:
    """Cores that do the same work at the same instants; the first one is simulated.

    The others are its mirror images: same tiles (shifted by their first element), same
    transfer and compute times, on their own L2 ports of equal capacity.
    """

    members: list[CoreTiming]
    tiles: list[tuple[int, int]]  # the first member's tiles
    busy: dict[str, float]

    @property
    def core(self) -> int:
        return self.members[0].core

    @property
    def weight(self) -> int:
        return len(self.members)


# ----------------------------------------------------------------------------- slices
class Activity(NamedTuple):
    """One recorded activity of a simulated core group (or of the call as a whole)."""

    group: CoreGroup | None  # None: a call-level activity (launch, barrier)
    engine: str
    operand: Operand | None  # the operand a transfer moved; None for vector work
    tile: int | None  # None for private-storage vector work and call-level activities
    start: float
    end: float
    name: str = ""  # call-level activities: their name; transfers: the engine that moved it
    cycles: float = 0.0  # call-level activities only: their configured cycles
    granted: float = 0.0  # transfers: when the engine took it (setup and wait end there)


class SliceLog:
    """The slices of the simulated cores, expanded to every member core on demand.

    Recording stores one small tuple per activity; names, addresses and per-core copies
    are built only when a trace is asked for.
    """

    def __init__(self, job: Job, setup_cycles: float, cost: VectorCost,
                 engine_on: Callable[[str, int, int], str] = lambda name, core, other: name
                 ) -> None:
        self.job = job
        self.setup_cycles = setup_cycles
        self.cost = cost
        #: engine_on(name, core, other): the engine of ``other``'s pool that stands where
        #: ``name`` stands in ``core``'s (a mirrored core's transfers name its own engines)
        self.engine_on = engine_on
        self.activities: list[Activity] = []
        # stretches of activities repeated by a closed-form steady state:
        # (position in activities, first, last, period, repeats, tiles per period by group)
        self._repeats: list[tuple[int, int, int, float, int, dict[int, int]]] = []
        self._expanded: dict[float, list[Slice]] = {}

    def transfer(self, group: CoreGroup, engine: str, operand: Operand, tile: int,
                 start: float, end: float, served_by: str, granted: float) -> None:
        self.activities.append(Activity(group, engine, operand, tile, start, end, served_by,
                                        0.0, granted))

    def compute(self, group: CoreGroup, tile: int | None, start: float, end: float) -> None:
        self.activities.append(Activity(group, COMPUTE, None, tile, start, end))

    def call(self, name: str, start: float, end: float, cycles: float) -> None:
        self.activities.append(Activity(None, "call", None, None, start, end, name, cycles))

    def repeat(self, first: int, last: int, period: float, repeats: int,
               advances: dict[int, int]) -> None:
        """The activities recorded ``first`` to ``last`` happen again ``repeats`` times, each
        ``period`` cycles later and ``advances[id(group)]`` tiles further than the one before.

        Kept as one record, expanded when slices are asked for: a steady state advanced in
        closed form costs no Python work per skipped tile unless its trace is wanted.
        """
        self._repeats.append((len(self.activities), first, last, period, repeats, advances))

    def all_activities(self):
        """Every activity in recording order, the repeated stretches expanded."""
        activities, position = self.activities, 0
        for at, first, last, period, repeats, advances in self._repeats:
            yield from activities[position:at]
            position = at
            recorded = activities[first:last]
            for repeat in range(1, repeats + 1):
                offset = repeat * period
                for activity in recorded:
                    tile = activity.tile
                    if tile is not None and activity.group is not None:
                        tile += repeat * advances[id(activity.group)]
                    yield activity._replace(tile=tile, start=activity.start + offset,
                                            end=activity.end + offset,
                                            granted=activity.granted + offset)
        yield from activities[position:]

    def slices(self, origin: float = 0.0) -> list[Slice]:
        """Every activity as a Slice of every core that did it, in recording order, with
        times counted from cycle ``origin`` of the timeline."""
        expanded = self._expanded.get(origin)
        if expanded is None:
            expanded = self._expanded[origin] = [
                s for activity in self.all_activities() for s in self._expand(activity, origin)]
        return expanded

    def _expand(self, activity: Activity, origin: float):
        group, engine, operand, tile, start, end = activity[:6]
        start, end = start - origin, end - origin
        if group is None:
            yield Slice(CALL_TRACK, engine, activity.name, start, end,
                        {"cycles": activity.cycles})
            return
        job, first_member = self.job, group.members[0]
        if tile is None:
            first, stop = first_member.start, first_member.stop
        else:
            first, stop = group.tiles[tile]
        for member in group.members:
            shift = member.start - first_member.start  # mirror images: same tiles, shifted
            lo, hi = first + shift, stop + shift
            if operand is not None:
                yield Slice(member.core, engine, f"{operand.name}[{tile}]", start, end, {
                    "tile": tile, "operand": operand.name, "bytes": (hi - lo) * job.itemsize,
                    "address": hex(operand.span.address + lo * job.itemsize),
                    "region": operand.span.region, "setup_cycles": self.setup_cycles,
                    # the engine is held, and the links carry its bytes, only this long
                    "data_cycles": end - (activity.granted - origin),
                    "dma_engine": activity.name if member is first_member else
                    self.engine_on(activity.name, first_member.core, member.core),
                    "elements": [lo, hi]})
            elif tile is None:  # private-storage vector work: the whole range
                yield Slice(member.core, COMPUTE, job.label, start, end, {
                    "elements": [lo, hi], "iterations": self.cost.iterations(hi - lo)})
            else:
                yield Slice(member.core, COMPUTE, f"{job.label}[{tile}]", start, end, {
                    "tile": tile, "elements": [lo, hi],
                    "iterations": self.cost.iterations(hi - lo)})


class PerCore(dict):
    """A per-core dictionary whose entries are built on first use."""

    def __init__(self, build: Callable[[int], object]) -> None:
        super().__init__()
        self._build = build

    def __missing__(self, core: int):
        value = self[core] = self._build(core)
        return value


class Timeline:
    """The chip's shared state for a whole run: clock, links, DMA engines, DDR counter.

    The DMA datapath (fluid flow network or burst arbiters) that times transfers is kept
    here too, created by the first call that needs it, so that every call on the timeline
    shares it.
    """

    def __init__(self, config: ChipConfig) -> None:
        self.config = config
        self.env = CountingEnvironment()
        self.ddr_samples: list[tuple[float, float]] = []
        self.links = {r.name: Link(r.name, config.bytes_per_cycle(r.bandwidth_gbps))
                      for r in config.shared_regions}
        # a core's port and engines are made when a call first uses the core: a chip may
        # describe many more cores than a run uses
        self.l2_ports = PerCore(lambda core: Link(f"l2 port {core}",
                                                   config.l2.load_store_bytes_per_cycle))
        clock = lambda: self.env.now  # noqa: E731
        made: dict = {}  # the pools built so far: the chip's DMA model says who shares
        self.pools = PerCore(lambda core: engine_pools(config, (core,), clock, made)[core])
        #: datapath models by kind ("fluid", "bursts"), shared by every call
        self.datapaths: dict[str, object] = {}
        #: calls launched and not yet ended: a call alone may skip its steady state
        self.running = 0

    def after(self, delay: float, then: Callable) -> None:
        """Call ``then(entry)`` ``delay`` cycles from now (``delay`` >= 0)."""
        self.env.call_later(delay, then)

    def sample_ddr(self, now: float, rate: float) -> None:
        """Record the DDR bandwidth in use (bytes/cycle) from ``now`` on."""
        samples = self.ddr_samples
        if samples and samples[-1][0] == now:
            samples[-1] = (now, rate)
        elif not samples or samples[-1][1] != rate:
            samples.append((now, rate))

    def shared(self, kind: str, build: Callable[[], object]):
        """The timeline's datapath model of ``kind``, built by ``build()`` on first use."""
        model = self.datapaths.get(kind)
        if model is None:
            model = self.datapaths[kind] = build()
        return model

    def finish(self) -> None:
        """Let the datapath models summarise what they saw (the DDR counter)."""
        for model in self.datapaths.values():
            finish = getattr(model, "finish", None)
            if finish is not None:
                finish()
        samples = self.ddr_samples
        # only burst-timed calls add samples here, after any fluid ones of the run
        if "bursts" in self.datapaths and "fluid" in self.datapaths and any(
                later[0] < earlier[0] for earlier, later in zip(samples, samples[1:])):
            # burst-timed calls add their samples at the end: keep the counter in cycle
            # order, which its readers search by bisection
            samples.sort(key=lambda sample: sample[0])


class Model:
    """One call on a timeline: its job, cost, byte ledgers and slice log.

    The chip's shared state (``env``, ``links``, ``l2_ports``, ``pools``) is the
    timeline's; ``origin`` is the cycle at which the call was launched.
    """

    def __init__(self, config: ChipConfig, job: Job, cost: VectorCost, record_slices: bool,
                 timeline: Timeline) -> None:
        self.config = config
        self.job = job
        self.cost = cost
        self.timeline = timeline
        self.env = timeline.env
        self.origin = float(timeline.env.now)
        self.log = (SliceLog(job, config.dma.setup_cycles, cost,
                             lambda name, core, other: engine_on(config, name, core, other))
                    if record_slices else None)
        self.links = timeline.links
        self.l2_ports = timeline.l2_ports
        self.pools = timeline.pools
        self.after = timeline.env.call_later
        self.sample_ddr = timeline.sample_ddr
        self.ddr_samples = timeline.ddr_samples
        self.bytes_read = {r.name: 0 for r in config.shared_regions}
        self.bytes_written = {r.name: 0 for r in config.shared_regions}
