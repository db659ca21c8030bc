"""Bandwidth sharing between concurrent DMA transfers ("flows").

A flow crosses a set of links (DDR or shared SRAM, and a core's L2 port) and is capped by
its DMA engine's own bandwidth. Concurrent flows share every link max-min fairly
(water-filling). Rates change only when a flow starts or ends, so the network schedules a
single timer for the earliest completion; because SimPy cannot cancel a timeout, each
timer carries the generation number it was scheduled under and stale ones are ignored.
Events therefore grow with the number of transfers, never with the bytes moved.

A flow may stand for several identical transfers made in lockstep by identical cores
(see :mod:`dspsim.sim.engine.machine`): its ``shares`` say how many of them cross each of its
links (all of them cross the shared DDR link, each its own core's L2 port, of which the
flow's port stands for every mirror image). The rates it gets are exactly, to the last
bit, those the identical transfers would get one by one.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import simpy

# A flow whose remaining bytes fall below this is complete (floating-point slack).
_DONE_BYTES = 1e-6


class Link:
    """A shared resource of fixed capacity in bytes per cycle."""

    def __init__(self, name: str, capacity: float) -> None:
        if not capacity > 0:
            raise ValueError(f"link {name} needs a positive capacity, got {capacity}")
        self.name = name
        self.capacity = capacity
        self.bytes_moved = 0.0

    def __repr__(self) -> str:
        return f"Link({self.name!r}, {self.capacity:.3f} B/cycle)"


#: What makes flows alike: their links, shares and cap, and whether they stand in for a
#: transfer timed burst by burst. Flows alike always get the same rate.
RouteKey = tuple[tuple[Link, ...], tuple[int, ...], float, bool]

#: Routes numbered for the whole process by what decides their rates: each link by the
#: order in which its network first met it and by its capacity, the shares, the cap and
#: whether the flow stands in. Networks (every tile candidate's timeline, every call's)
#: then share the rates of every mix of routes they have computed.
_ROUTE_NUMBERS: dict[tuple, int] = {}
#: Numbers are never handed out twice, even once _ROUTE_NUMBERS has started afresh.
_NEXT_ROUTE = itertools.count()
#: Each route's rate and the watched link's load, by mix of routes (and watched link).
_RATES_BY_MIX: dict[tuple, tuple[dict[int, float], float]] = {}
#: The same by mix up to which port is which (see FlowNetwork._symmetric_mix): the rate of
#: a route by its port's load and its other links, and the watched link's load.
_RATES_BY_SYMMETRIC_MIX: dict[tuple, tuple[dict[tuple, float], float]] = {}
#: Routes and mixes remembered before starting afresh (memory stays bounded in a long
#: study, whose chips may differ in every call).
_RATES_LIMIT = 1 << 14


class Flow:
    """One transfer in progress (or several identical ones in lockstep, see ``shares``)."""

    __slots__ = ("nbytes", "remaining", "links", "shares", "cap", "rate", "done", "route",
                 "standing")

    def __init__(self, nbytes: float, links: tuple[Link, ...], cap: float, done,
                 shares: tuple[int, ...] | None = None) -> None:
        self.nbytes = nbytes
        self.remaining = float(nbytes)
        self.links = links
        # how many of the identical transfers cross each link (1 each for a single one)
        self.shares = shares if shares is not None else (1,) * len(links)
        self.cap = cap
        self.rate = 0.0
        self.done = done  # a SimPy event to succeed, or a function to call, on completion
        # the number of its route in its network (see FlowNetwork.start); -1 until started
        self.route = -1
        # a stand-in for a transfer timed elsewhere (burst by burst): it takes its share
        # of the links but never ends by itself (see FlowNetwork.stand_in)
        self.standing = False

    def share_of(self, link: Link) -> int:
        """How many of the flow's identical transfers cross ``link`` (0 if none)."""
        return sum(share for crossed, share in zip(self.links, self.shares, strict=True)
                   if crossed is link)

    def route_key(self) -> RouteKey:
        """What the flow shares with every flow that always gets the same rate."""
        return (self.links, self.shares, self.cap, self.standing)


def max_min_rates(flows: list[Flow]) -> None:
    """Set each flow's rate to its max-min fair share given link capacities and caps.

    A flow with share s on a link counts as s identical flows there. Each of them
    subtracts its rate from the link separately, so the arithmetic (and the rates, to the
    last bit) are those of the identical flows one by one.
    """
    remaining = {}
    users: dict[Link, int] = {}
    for flow in flows:
        for link, share in zip(flow.links, flow.shares, strict=True):
            remaining[link] = link.capacity
            users[link] = users.get(link, 0) + share
    active = list(flows)
    while active:
        level = min(flow.cap for flow in active)
        for link, count in users.items():
            if count:
                level = min(level, remaining[link] / count)
        slack = level * (1 + 1e-12)
        saturated = {link for link, count in users.items()
                     if count and remaining[link] / count <= slack}
        still = []
        for flow in active:
            if flow.cap <= slack or any(link in saturated for link in flow.links):
                flow.rate = level
                for link, share in zip(flow.links, flow.shares, strict=True):
                    for _ in range(share):
                        remaining[link] -= level
                    users[link] -= share
            else:
                still.append(flow)
        active = still


class FlowTimer:
    """The scheduled end of the network's earliest flow, under one generation of rates.

    Stale once rates have changed since (a newer timer stands); it then does nothing.
    """

    __slots__ = ("network", "generation")

    def __init__(self, network: FlowNetwork, generation: int) -> None:
        self.network = network
        self.generation = generation

    @property
    def stale(self) -> bool:
        """Whether rates changed after this timer was set."""
        return self.generation != self.network._generation

    def __call__(self, _event) -> None:
        self.network._on_timer(self.generation)


class FlowNetwork:
    """Runs flows over links inside a SimPy environment.

    ``on_rates_changed(now, load)`` is told, whenever rates change, the bytes per cycle
    in use on the ``watched`` link (the DDR counter of the trace).
    """

    def __init__(self, env: simpy.Environment,
                 on_rates_changed: Callable[[float, float], None] | None = None,
                 watched: Link | None = None) -> None:
        self.env = env
        # the engine's environment pushes plain heap entries; any other a Timeout
        self._call_later = getattr(env, "call_later", None) or (
            lambda delay, then: env.timeout(delay).callbacks.append(then))
        self.flows: list[Flow] = []
        #: called whenever rates change (the burst arbiters' view of the fluid flows)
        self.on_shares_changed: Callable[[], None] | None = None
        self._generation = 0
        self._last_update = env.now
        self._on_rates_changed = on_rates_changed
        self._watched = watched
        # max-min rates depend only on how many flows use each route: they are remembered
        # for the process (_RATES_BY_MIX), routes numbered for it (_ROUTE_NUMBERS)
        self._route_ids: dict[RouteKey, int] = {}
        self._route_counts: dict[int, int] = {}
        self._link_order: dict[Link, int] = {}  # links by when this network first met them
        # what each of its routes' numbers stands for: (links, shares, cap, stand-in), each
        # link as (order met, capacity)
        self._route_shapes: dict[int, tuple] = {}
        self._watched_key = None if watched is None else (self._link_key(watched),)

    def transfer(self, nbytes: float, links: tuple[Link, ...], cap: float) -> simpy.Event:
        """Start moving ``nbytes`` over ``links`` at most at ``cap`` bytes/cycle.

        Returns an event that succeeds when the last byte has arrived.
        """
        done = self.env.event()
        if nbytes <= 0:
            done.succeed()
            return done
        self.start(nbytes, links, cap, done)
        return done

    def start(self, nbytes: float, links: tuple[Link, ...], cap: float, done,
              shares: tuple[int, ...] | None = None) -> None:
        """Start a flow (``shares``: see :class:`Flow`); ``done`` is a SimPy event to
        succeed or a function to call when its last byte has arrived (``nbytes`` > 0)."""
        self._advance()
        flow = Flow(nbytes, links, cap, done, shares)
        self._route(flow)

    def stand_in(self, links: tuple[Link, ...], cap: float) -> Flow:
        """Count a transfer timed burst by burst elsewhere as a flow on ``links`` (capped
        at ``cap``) until :meth:`withdraw`: fluid flows then leave it its max-min share,
        and :attr:`fluid_load` tells the burst arbiters what the fluid flows take."""
        self._advance()
        flow = Flow(math.inf, links, cap, None)
        flow.standing = True
        self._route(flow)
        return flow

    def _link_key(self, link: Link) -> tuple[int, float]:
        """What tells ``link`` from this network's other links, and what it can carry."""
        order = self._link_order.setdefault(link, len(self._link_order))
        return order, link.capacity

    def _route_number(self, flow: Flow) -> int:
        """The process-wide number of ``flow``'s route (see :data:`_ROUTE_NUMBERS`)."""
        key = flow.route_key()
        number = self._route_ids.get(key)
        if number is None:
            alike = (tuple(self._link_key(link) for link in flow.links), flow.shares,
                     flow.cap, flow.standing)
            number = _ROUTE_NUMBERS.get(alike)
            if number is None:
                if len(_ROUTE_NUMBERS) > _RATES_LIMIT:
                    _ROUTE_NUMBERS.clear()  # networks keep the numbers they were given
                # next() is drawn first: threads never share a number by mistake
                number = _ROUTE_NUMBERS.setdefault(alike, next(_NEXT_ROUTE))
            self._route_ids[key] = number
            self._route_shapes[number] = alike
        return number

    def _route(self, flow: Flow) -> None:
        """Number ``flow``'s route, count it on the route and set the new rates."""
        flow.route = self._route_number(flow)
        self.flows.append(flow)
        self._route_counts[flow.route] = self._route_counts.get(flow.route, 0) + 1
        self._reschedule()

    def withdraw(self, flow: Flow) -> None:
        """The transfer ``flow`` stood in for has ended."""
        self._advance()
        self._remove(flow)
        self._reschedule()

    def fluid_load(self, link: Link) -> float:
        """Bytes per cycle the fluid flows (not the stand-ins) now move over ``link``."""
        return sum(f.rate * f.share_of(link) for f in self.flows if not f.standing)

    def _remove(self, flow: Flow) -> None:
        self.flows.remove(flow)
        left = self._route_counts[flow.route] - 1
        if left:
            self._route_counts[flow.route] = left
        else:
            del self._route_counts[flow.route]

    def _advance(self) -> None:
        elapsed = self.env.now - self._last_update
        if elapsed > 0:
            for flow in self.flows:
                flow.remaining -= flow.rate * elapsed
        self._last_update = self.env.now

    def _rates(self) -> dict[int, float]:
        """Each route's max-min rate for the flows in progress (remembered by their mix
        for the whole process)."""
        key = (frozenset(self._route_counts.items()), self._watched_key)
        known = _RATES_BY_MIX.get(key)
        if known is None:
            known = self._symmetric_rates()
            if len(_RATES_BY_MIX) > _RATES_LIMIT:
                _RATES_BY_MIX.clear()
            _RATES_BY_MIX[key] = known
        if self._on_rates_changed is not None:
            self._on_rates_changed(self.env.now, known[1])
        return known[0]

    def _symmetric_mix(self) -> tuple[tuple, dict[tuple, tuple]] | None:
        """The mix of routes in progress up to which port is which, and each port's load.

        A route's last link is its port (a core's L2 port): ports that carry alike loads
        (the same capacity, and routes alike over the same other links) are
        interchangeable, and get the same rates to the last bit. Eight cores of FT78NE
        sharing its pool make thousands of mixes that differ only in which core's port
        carries which load. None when the mix does not have that shape (a port is also
        another route's earlier link, or is the watched link).
        """
        by_port: dict[tuple, list[tuple]] = {}
        earlier: set[tuple] = set()
        for number, count in self._route_counts.items():
            links, shares, cap, standing = self._route_shapes[number]
            if len(links) < 2:
                return None
            earlier.update(links[:-1])
            by_port.setdefault(links[-1], []).append((links[:-1], shares, cap, standing, count))
        watched = self._watched_key
        if not earlier.isdisjoint(by_port) or (watched is not None and watched[0] in by_port):
            return None
        loads = {port: (port[1], tuple(sorted(routes))) for port, routes in by_port.items()}
        return (tuple(sorted(loads.values())), watched), loads

    def _symmetric_rates(self) -> tuple[dict[int, float], float]:
        """Each route's max-min rate for the flows in progress, and the watched link's
        load: from the mix up to which port is which when it was met before."""
        symmetric = self._symmetric_mix()
        if symmetric is not None:
            key, loads = symmetric

            def alike(number: int) -> tuple:  # a route by its port's load, not its port
                links, shares, cap, standing = self._route_shapes[number]
                return loads[links[-1]], links[:-1], shares, cap, standing

            known = _RATES_BY_SYMMETRIC_MIX.get(key)
            if known is not None:
                by_alike, load = known
                return {number: by_alike[alike(number)] for number in self._route_counts}, load
        max_min_rates(self.flows)
        watched = self._watched
        load = (sum(f.rate * f.share_of(watched) for f in self.flows if not f.standing)
                if watched else 0.0)
        if symmetric is not None:
            if len(_RATES_BY_SYMMETRIC_MIX) > _RATES_LIMIT:
                _RATES_BY_SYMMETRIC_MIX.clear()
            _RATES_BY_SYMMETRIC_MIX[key] = ({alike(f.route): f.rate for f in self.flows}, load)
        return {f.route: f.rate for f in self.flows}, load

    def _reschedule(self) -> None:
        self._generation += 1
        if not self.flows:
            if self._on_rates_changed is not None:
                self._on_rates_changed(self.env.now, 0.0)
            if self.on_shares_changed is not None:
                self.on_shares_changed()
            return
        rates = self._rates()
        delay = float("inf")
        for flow in self.flows:
            rate = flow.rate = rates[flow.route]
            if flow.remaining / rate < delay:
                delay = flow.remaining / rate
        if self.on_shares_changed is not None:
            self.on_shares_changed()
        if delay == float("inf"):
            return  # only stand-ins: they end when their transfers do
        generation = self._generation
        self._call_later(max(delay, 0.0), FlowTimer(self, generation))

    def _on_timer(self, generation: int) -> None:
        if generation != self._generation:
            return  # rates changed since this timer was set: a newer timer stands
        self._advance()
        finished = [f for f in self.flows
                    if f.remaining <= _DONE_BYTES or f.remaining / f.rate <= 1e-9]
        if not finished:  # rounding left a sliver: finish the nearest flow
            finished = [min(self.flows, key=lambda f: f.remaining / f.rate)]
        for flow in finished:
            self._remove(flow)
            for link, share in zip(flow.links, flow.shares, strict=True):
                link.bytes_moved += flow.nbytes * share
        self._reschedule()
        for flow in finished:
            if isinstance(flow.done, simpy.Event):
                flow.done.succeed()
            else:
                flow.done()
