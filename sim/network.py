"""Bandwidth sharing between concurrent DMA transfers ("flows").

A flow crosses a set of links (DDR or shared SRAM, and a core's L2 port) and is capped by
its DMA engine's own bandwidth. Concurrent flows share every link max-min fairly
(water-filling). Rates change only when a flow starts or ends, so the network schedules a
single timer for the earliest completion; because SimPy cannot cancel a timeout, each
timer carries the generation number it was scheduled under and stale ones are ignored.
Events therefore grow with the number of transfers, never with the bytes moved.
"""
from __future__ import annotations

from typing import Callable

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


class Flow:
    """One transfer in progress."""

    __slots__ = ("nbytes", "remaining", "links", "cap", "rate", "done")

    def __init__(self, nbytes: float, links: tuple[Link, ...], cap: float, done: simpy.Event):
        self.nbytes = nbytes
        self.remaining = float(nbytes)
        self.links = links
        self.cap = cap
        self.rate = 0.0
        self.done = done


def max_min_rates(flows: list[Flow]) -> None:
    """Set each flow's rate to its max-min fair share given link capacities and caps."""
    remaining = {}
    users: dict[Link, int] = {}
    for flow in flows:
        for link in flow.links:
            remaining[link] = link.capacity
            users[link] = users.get(link, 0) + 1
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
                for link in flow.links:
                    remaining[link] -= level
                    users[link] -= 1
            else:
                still.append(flow)
        active = still


class FlowNetwork:
    """Runs flows over links inside a SimPy environment."""

    def __init__(self, env: simpy.Environment,
                 on_rates_changed: Callable[[float, list[Flow]], None] | None = None) -> None:
        self.env = env
        self.flows: list[Flow] = []
        self._generation = 0
        self._last_update = env.now
        self._on_rates_changed = on_rates_changed

    def transfer(self, nbytes: float, links: tuple[Link, ...], cap: float) -> simpy.Event:
        """Start moving ``nbytes`` over ``links`` at most at ``cap`` bytes/cycle.

        Returns an event that succeeds when the last byte has arrived.
        """
        done = self.env.event()
        if nbytes <= 0:
            done.succeed()
            return done
        self._advance()
        self.flows.append(Flow(nbytes, links, cap, done))
        self._reschedule()
        return done

    def _advance(self) -> None:
        elapsed = self.env.now - self._last_update
        if elapsed > 0:
            for flow in self.flows:
                flow.remaining -= flow.rate * elapsed
        self._last_update = self.env.now

    def _reschedule(self) -> None:
        max_min_rates(self.flows)
        if self._on_rates_changed is not None:
            self._on_rates_changed(self.env.now, self.flows)
        self._generation += 1
        if not self.flows:
            return
        delay = min(flow.remaining / flow.rate for flow in self.flows)
        timer = self.env.timeout(max(delay, 0.0))
        generation = self._generation
        timer.callbacks.append(lambda _event: self._on_timer(generation))

    def _on_timer(self, generation: int) -> None:
        if generation != self._generation:
            return  # rates changed since this timer was set: a newer timer stands
        self._advance()
        finished = [f for f in self.flows
                    if f.remaining <= _DONE_BYTES or f.remaining / f.rate <= 1e-9]
        if not finished:  # rounding left a sliver: finish the nearest flow
            finished = [min(self.flows, key=lambda f: f.remaining / f.rate)]
        for flow in finished:
            self.flows.remove(flow)
            for link in flow.links:
                link.bytes_moved += flow.nbytes
        self._reschedule()
        for flow in finished:
            flow.done.succeed()

