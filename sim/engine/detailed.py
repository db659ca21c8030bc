"""The detailed datapath's DMA: bursts with round-robin arbitration on every link.

It plugs into the tile pipeline of :mod:`dspsim.sim.engine.machine` (which does the partition,
tiling, double buffering, launch, barrier, roofline and slices for both fidelities) and
replaces the fast model's two abstractions with finer ones (the fast model also borrows
the burst DMA for calls whose transfers are too short for fluid sharing):

* **DMA.** A transfer is cut into bursts of ``dma.burst_bytes``. The engine issues them
  no faster than its own bandwidth (nor does its last byte land sooner than that
  bandwidth allows) and keeps at most :data:`OUTSTANDING_BURSTS` of them in flight. Each
  burst then crosses the links of its path one after the other (a load: DDR or shared
  SRAM, then the core's L2 port; a store: the other way round). A link
  moves one burst at a time for ``bytes / capacity`` cycles and grants the next burst
  round-robin among the transfers waiting for it. The fast model's max-min fair fluid
  shares are what this arbitration converges to over many bursts.
* **Vector core.** Every iteration issued on the core's units:
  :mod:`dspsim.sim.engine.detailed_vector`.

It is slower (events grow with bursts and iterations, not tiles) and meant for small
lengths: to check the fast model, and to look at arbitration in a trace.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Protocol

from dspsim.sim.engine.model import LOAD, CountingEnvironment, PerCore, Timeline
from dspsim.sim.engine.network import FlowNetwork, Link

#: Bursts an engine may have issued and not yet delivered. Enough to keep both links of a
#: path busy with more waiting, so that the limit never caps throughput; small enough that
#: a transfer held up on one link does not flood the queue of another.
OUTSTANDING_BURSTS = 4


def _still_ahead(target: float, now: float) -> bool:
    """Whether ``target`` is a later instant than ``now``, beyond floating-point slack.

    The slack is relative: at large cycle counts a float cannot step by 1e-9 cycles, and
    waiting for an instant the clock cannot reach would never end.
    """
    return target - now > 1e-9 * max(1.0, abs(now))


class Clock(Protocol):
    """What bursts and links need of a timeline (or of a call on it): its environment,
    whose clock they read and on whose heap bursts wait as events of their own, and
    ``after``, to be called back later."""

    @property
    def env(self) -> CountingEnvironment: ...

    def after(self, delay: float, then: Callable) -> None:
        """Call ``then(entry)`` ``delay`` cycles from now."""


class OnCore(Protocol):
    """Whose transfer it is: the core whose L2 port it crosses (a :class:`CoreGroup`'s
    representative, or a bare core of a DMA experiment)."""

    @property
    def core(self) -> int: ...


class _InRegion(Protocol):
    @property
    def region(self) -> str: ...


class MovedOperand(Protocol):
    """What a transfer moves: something whose span lies in a shared region (an
    :class:`~dspsim.sim.engine.job.Operand`, or a DMA experiment's bare region)."""

    @property
    def span(self) -> _InRegion: ...


class LinkArbiter:
    """A link moving one burst at a time, granting waiting transfers round-robin."""

    __slots__ = ("env", "push_later", "link", "capacity", "waiting", "queues", "busy",
                 "busy_since", "log")

    def __init__(self, model: Clock, link: Link, log: list | None = None) -> None:
        # looked up once: they run for every burst (the clock read without the property)
        self.env = model.env
        self.push_later = model.env.push_later
        self.link = link
        self.capacity = link.capacity  # less what fluid flows of other calls take
        self.waiting: deque = deque()  # transfers with a burst queued here, in grant order
        self.queues: dict[object, deque] = {}
        self.busy = False
        self.busy_since = 0.0
        self.log = log  # (start, end) of busy periods, for the bandwidth counter

    def submit(self, transfer: _BurstTransfer, burst: _Burst) -> None:
        if not self.busy:
            # an idle link has nothing queued (a grant follows every release while any
            # burst waits): the burst crosses at once, without a queue
            self.busy = True
            self.busy_since = self.env._now
            burst.callbacks = _CROSSED
            self.push_later(burst.nbytes / self.capacity, burst)
            return
        queue = self.queues.get(transfer)
        if queue is None:  # a transfer's queue here is dropped once empty
            self.queues[transfer] = deque((burst,))
            self.waiting.append(transfer)
        else:
            queue.append(burst)

    def _grant(self) -> None:
        transfer = self.waiting.popleft()
        queue = self.queues[transfer]
        burst = queue.popleft()
        if queue:
            self.waiting.append(transfer)  # its next burst waits for its next turn
        else:
            del self.queues[transfer]
        burst.callbacks = _CROSSED
        self.push_later(burst.nbytes / self.capacity, burst)

    def released(self) -> None:
        """The burst in service has crossed: grant the next one, or go idle."""
        if self.waiting:
            self._grant()
            return
        self.busy = False
        if self.log is not None:
            self.log.append((self.busy_since, self.env._now))


class _Burst:
    """A burst on its way; while it crosses a link it is its own pending event (the loop
    calls ``callbacks`` with it), so that a crossing builds no wrapper."""

    __slots__ = ("transfer", "nbytes", "hop", "callbacks")
    _ok = True
    _value = None

    def __init__(self, transfer: _BurstTransfer, nbytes: int) -> None:
        self.transfer = transfer
        self.nbytes = nbytes
        self.hop = 0
        self.callbacks: tuple | None = None

    def crossed(self) -> None:
        """Its link has passed it: on to the next link of its path, or delivered."""
        path = self.transfer.path
        path[self.hop].released()
        self.hop += 1
        if self.hop < len(path):
            path[self.hop].submit(self.transfer, self)
        else:
            self.transfer.delivered(self.nbytes)


#: What the loop calls when a burst has crossed a link: the burst is the event.
_CROSSED = (_Burst.crossed,)


class _BurstTransfer:
    """One DMA transfer as a train of bursts over its path of links."""

    __slots__ = ("model", "env", "path", "burst_bytes", "engine_rate", "left", "to_issue",
                 "in_flight", "next_issue", "pacing", "earliest_end", "then", "callbacks")
    # while it waits for its engine's pace it is its own pending event, as a burst is
    _ok = True
    _value = None

    def __init__(self, model: Clock, path: tuple[LinkArbiter, ...], nbytes: int,
                 burst_bytes: int, engine_rate: float, then: Callable) -> None:
        self.model = model
        self.env = model.env
        self.path = path
        self.burst_bytes = burst_bytes
        self.engine_rate = engine_rate
        self.left = nbytes  # bytes not yet delivered
        self.to_issue = nbytes  # bytes not yet issued
        self.in_flight = 0
        self.next_issue = model.env.now
        self.pacing = False
        # the engine moves at most engine_rate bytes per cycle: the last byte cannot land
        # sooner than that allows, even when the links pass the final burst quickly
        self.earliest_end = model.env.now + nbytes / engine_rate
        self.then = then
        self.callbacks: tuple | None = None

    def issue(self, _event=None) -> None:
        """Issue bursts while credits and the engine's own bandwidth allow."""
        self.pacing = False
        now = self.env._now
        first = self.path[0]
        while self.to_issue and self.in_flight < OUTSTANDING_BURSTS:
            # _still_ahead(self.next_issue, now), inlined: it runs for every burst
            if self.next_issue - now > 1e-9 * (now if now > 1.0 else 1.0):
                self.pacing = True
                self.callbacks = _PACED
                self.env.push_later(self.next_issue - now, self)
                return
            nbytes = self.burst_bytes if self.burst_bytes < self.to_issue else self.to_issue
            self.to_issue -= nbytes
            self.in_flight += 1
            self.next_issue = now + nbytes / self.engine_rate
            first.submit(self, _Burst(self, nbytes))

    def _done(self, _event) -> None:
        self.then()

    def delivered(self, nbytes: int) -> None:
        self.in_flight -= 1
        self.left -= nbytes
        if not self.left:
            now = self.env._now
            if _still_ahead(self.earliest_end, now):
                self.model.after(self.earliest_end - now, self._done)
            else:
                self.then()
        elif not self.pacing:
            self.issue()


#: What the loop calls when a burst train's engine may issue again: the train is the event.
_PACED = (_BurstTransfer.issue,)


class BurstDMA:
    """Transfers as trains of bursts, arbitrated round-robin on every link.

    ``model`` is the timeline: the arbiters are the chip's, shared by every call on it.
    """

    def __init__(self, model: Timeline) -> None:
        self.model = model
        self.ddr_busy: list[tuple[float, float]] = []
        dram = model.config.ddr.name  # the level whose busy periods the DDR counter shows
        self.arbiters = {name: LinkArbiter(model, link, self.ddr_busy if name == dram else None)
                         for name, link in model.links.items()}
        self.ports = PerCore(lambda core: LinkArbiter(model, model.l2_ports[core]))

    def transfer(self, group: OnCore, direction: str, operand: MovedOperand, nbytes: int,
                 rate: float, then: Callable) -> None:
        """Move ``nbytes`` of ``operand`` as bursts, issued at most at ``rate`` bytes/cycle
        (the engine's); call ``then()`` when all have arrived."""
        shared, port = self.arbiters[operand.span.region], self.ports[group.core]
        path = (shared, port) if direction == LOAD else (port, shared)
        model = self.model
        network = self._fluid_network()
        if network is not None:  # a program whose other calls move fluid flows
            stand_in = network.stand_in((shared.link, port.link), rate)
            done = then

            def then():
                network.withdraw(stand_in)
                done()
        _BurstTransfer(model, path, nbytes, model.config.dma.burst_bytes, rate, then).issue()

    def _fluid_network(self) -> FlowNetwork | None:
        """The timeline's fluid flow network if a call on it moves fluid flows, made to
        tell these arbiters what its flows take of each link."""
        network = self.model.datapaths.get("fluid")
        if network is None:
            return None
        assert isinstance(network, FlowNetwork), "the fluid datapath is a flow network"
        if network.on_shares_changed is None:
            network.on_shares_changed = self._fluid_changed
        return network

    def _fluid_changed(self) -> None:
        """Fluid flows changed: each link passes bursts at what they leave of it (at
        least the max-min share of the transfers timed here, which stand in there)."""
        network = self.model.datapaths["fluid"]
        assert isinstance(network, FlowNetwork), "the fluid datapath is a flow network"
        for arbiter in list(self.arbiters.values()) + list(self.ports.values()):
            left = arbiter.link.capacity - network.fluid_load(arbiter.link)
            arbiter.capacity = max(left, 1e-9 * arbiter.link.capacity)

    def finish(self) -> None:
        """Add the DDR link's busy periods to the timeline's bandwidth counter."""
        capacity = self.model.links[self.model.config.ddr.name].capacity
        samples = self.model.ddr_samples
        samples[:] = with_busy_periods(samples, self.ddr_busy, capacity)


def with_busy_periods(samples: list[tuple[float, float]], busy: list[tuple[float, float]],
                      capacity: float) -> list[tuple[float, float]]:
    """The DDR counter (steps of (cycle, bytes per cycle) in cycle order) of fluid flows
    ``samples`` with bursts moving over the link in the ``busy`` periods (since, until),
    in order and apart. While bursts move, the link is full: they pass at whatever the
    fluid flows leave of it. Outside, the fluid flows' rate holds."""
    merged: list[tuple[float, float]] = []

    def step(at: float, rate: float) -> None:
        if merged and merged[-1][0] == at:
            merged.pop()  # superseded at the same cycle
        if not merged or merged[-1][1] != rate:
            merged.append((at, rate))

    fluid, index = 0.0, 0
    for since, until in busy:
        while index < len(samples) and samples[index][0] < since:
            fluid = samples[index][1]
            step(*samples[index])
            index += 1
        step(since, capacity)
        while index < len(samples) and samples[index][0] <= until:
            fluid = samples[index][1]  # in force once the bursts are done
            index += 1
        step(until, fluid)
    for at, rate in samples[index:]:
        step(at, rate)
    return merged
