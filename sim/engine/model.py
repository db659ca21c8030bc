"""What the parts of a simulation share.

A :class:`Timeline` is the chip over a whole run: the SimPy environment, the links (DDR,
shared SRAM, every core's L2 port), the DMA engines or transfer controllers and the DDR
counter. A :class:`Model` is one call on a timeline: its job, vector cost, byte ledgers and
slice log. A plain call is a timeline of its own with one call on it; a program submits
many calls to one timeline, so that they share its links and engines transfer by transfer.

Both fidelities (:mod:`dspsim.sim.engine.pipeline`, :mod:`dspsim.sim.engine.detailed`) build
on these; what cores are and the slices a call records are in
:mod:`dspsim.sim.engine.cores` and :mod:`dspsim.sim.engine.slices`.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable
from heapq import heappop, heappush
from math import frexp, ldexp
from typing import Any

import simpy
from simpy.core import NORMAL, StopSimulation
from simpy.events import EventPriority

from dspsim.sim.chip.load import ChipConfig
from dspsim.sim.engine.cores import (
    CALL_TRACK,
    COMPUTE,
    ENGINES,
    FIDELITIES,
    LOAD,
    STORE,
    CoreGroup,
    CoreTiming,
    Fidelity,
)
from dspsim.sim.engine.dma import engine_on, engine_pools
from dspsim.sim.engine.job import Job
from dspsim.sim.engine.network import Link
from dspsim.sim.engine.slices import Activity, Slice, SliceLog
from dspsim.sim.engine.vector import VectorCost

# the names other modules read from here: a call's shared vocabulary
__all__ = ["CALL_TRACK", "COMPUTE", "ENGINES", "FIDELITIES", "INSTANT_BITS", "LOAD", "STORE",
           "Activity", "CoreGroup", "CoreTiming", "CountingEnvironment", "Fidelity", "Model",
           "PerCore", "Slice", "SliceLog", "Timeline", "instant"]

#: Significant bits an instant keeps on the event queue (of a float's 53). Instants that
#: are equal in exact arithmetic but reached by different sums of delays differ in their
#: last bits, and by how much depends on where the call began (its launch cycles); kept
#: to this precision they are equal, so events due together run in the order they were
#: scheduled, whatever the offset. 2**-44 of the time is far below every slack the engine
#: allows (1e-9 relative), and whole cycles stay whole.
INSTANT_BITS = 44


_INSTANT_SCALE = 1 << INSTANT_BITS


def instant(when: float) -> float:
    """``when`` rounded to :data:`INSTANT_BITS` significant bits."""
    mantissa, exponent = frexp(when)
    return ldexp(round(mantissa * _INSTANT_SCALE), exponent - INSTANT_BITS)


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

    def run(self, until: Any = None) -> Any:
        """Process events until none is left (as :meth:`simpy.Environment.run`; with
        ``until``, SimPy's own loop).

        The loop is :meth:`simpy.Environment.step`'s body inlined: a call of a method per
        event is a fair share of the cost of a burst-timed call's events.
        """
        if until is not None:
            return super().run(until)
        queue: list = self._queue
        try:
            while queue:
                self._now, _, _, event = heappop(queue)
                callbacks, event.callbacks = event.callbacks, None
                for callback in callbacks:
                    callback(event)
                if not event._ok and not hasattr(event, "_defused"):
                    # a failed event nobody handled crashes the run, as in step()
                    failure = type(event._value)(*event._value.args)
                    failure.__cause__ = event._value
                    raise failure
        except StopSimulation as stop:
            # as step(): the event's other callbacks run when the simulation resumes
            event.callbacks = callbacks[callbacks.index(callback) + 1:]
            self.schedule(event, EventPriority(-1))
            return stop.args[0]
        return None

    def push_later(self, delay: float, entry: Any) -> None:
        """Process ``entry`` ``delay`` cycles from now: anything the loop processes as an
        event (``callbacks`` to call with it, ``_ok``, ``_value``), as a burst crossing a
        link is, so that no wrapper is built for it."""
        # instant(), inlined: every event of a call is pushed here
        mantissa, exponent = frexp(self._now + delay)
        heappush(self._queue, (ldexp(round(mantissa * _INSTANT_SCALE), exponent - INSTANT_BITS),
                               NORMAL, next(self._eid), entry))

    def call_later(self, delay: float, then: Callable) -> None:
        """Call ``then(entry)`` ``delay`` cycles from now: one heap entry, no Timeout."""
        self.push_later(delay, _Wakeup(then))


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
    shares it. ``after(delay, then)`` calls ``then(entry)`` ``delay`` cycles from now
    (``delay`` >= 0): the environment's :meth:`~CountingEnvironment.call_later` itself,
    with no call in between, since every burst and tile step goes through it.
    """

    after: Callable[[float, Callable], None]

    def __init__(self, config: ChipConfig) -> None:
        self.config = config
        self.env = CountingEnvironment()
        self.after = self.env.call_later
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
