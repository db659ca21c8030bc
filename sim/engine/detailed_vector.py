"""The detailed datapath's vector core: every iteration of a tile's loop issued on the
core's units.

The loop is software-pipelined, as the compiler schedules it: each
iteration's instructions (loads, arithmetic, stores) take, from the moment the
iteration starts, the first free slot on a unit of their kind and occupy it for the
instruction's occupancy; a load or store also occupies the L2 load/store path for
``vector bytes / load_store_bytes_per_cycle``. The next iteration starts once every
instruction of this one has issued. Every iteration is one SimPy event. A tile costs
the loop overhead, the issue span (until the last unit is free again) and the pipeline
fill latency. The fast model's ``iterations × max(issue bound, L2 bound)`` is the
steady state of this issue; the two differ by how the first and last iterations fill
and drain the units.
"""
from __future__ import annotations

import math
from collections.abc import Callable

from dspsim.sim.engine.model import CoreGroup, Model


class _IssueModel:
    """The per-iteration instruction stream of one instruction mix on one chip."""

    def __init__(self, model: Model) -> None:
        config, mix = model.config, model.cost.mix  # expansions resolved, as the fast model's
        vec = config.vector
        l2_access = (vec.lane_width_bits // 8) / config.l2.load_store_bytes_per_cycle
        order = {"load": 0, "store": 2}  # loads first, stores last, the rest in between
        stream: list[tuple[str, float, float]] = []  # (unit, occupancy, L2 access) each
        for name in sorted(mix, key=lambda n: order.get(n, 1)):
            unit, occupancy = vec.instructions[name].occupancy
            l2 = l2_access if name in ("load", "store") else 0.0
            stream += [(unit, occupancy, l2)] * mix[name]
        self.stream = stream
        self.units = {unit: self._useful_instances(unit, count)
                      for unit, count in vec.units.items()}

    def _useful_instances(self, unit: str, count: int) -> int:
        """How many of ``count`` units of a kind the loop can ever keep busy at once.

        Iterations start, on average, at least one iteration's L2 accesses apart, so at
        most ``occupancy / that gap + 2`` of them overlap on a unit; units beyond are never
        chosen (an idle unit is as good as another), and leaving them out keeps an
        absurd unit count from costing memory and time.
        """
        uses = [occupancy for kind, occupancy, _ in self.stream if kind == unit]
        gap = sum(l2 for _, _, l2 in self.stream)
        if not uses:
            return 1
        if gap <= 0:
            return min(count, len(uses))
        overlapping = math.ceil(max(uses) / gap) + 2
        return min(count, len(uses) * overlapping)


class _VectorLoop:
    """One tile's vector loop on one core, issued iteration by iteration."""

    __slots__ = ("model", "issue", "free", "l2_free", "iterations", "done_iterations",
                 "last_issue", "then")

    def __init__(self, model: Model, issue: _IssueModel, elements: int, then: Callable) -> None:
        self.model = model
        self.issue = issue
        self.iterations = math.ceil(elements / model.cost.lanes)
        self.done_iterations = 0
        self.then = then
        self.free: dict[str, list[float]] = {}
        self.l2_free = 0.0
        self.last_issue = 0.0

    def start(self, _event) -> None:
        now = self.model.env.now
        self.free = {unit: [now] * count for unit, count in self.issue.units.items()}
        self.l2_free = now
        self.last_issue = now
        if self.iterations and self.issue.stream:
            self.iterate(None)
        else:
            self.model.after(self.model.cost.fill_cycles, self.then)

    def iterate(self, _event) -> None:
        """Issue one iteration, which starts now; the next starts when this one has issued."""
        start = last = self.last_issue
        for unit, occupancy, l2 in self.issue.stream:
            instances = self.free[unit]
            which = instances.index(min(instances)) if len(instances) > 1 else 0
            at = instances[which] if instances[which] > start else start
            if l2 and self.l2_free > at:
                at = self.l2_free
            instances[which] = at + occupancy
            if l2:
                self.l2_free = at + l2
            if at > last:
                last = at
        self.last_issue = last
        self.done_iterations += 1
        now = self.model.env.now
        if self.done_iterations < self.iterations:
            self.model.after(max(0.0, last - now), self.iterate)
            return
        drained = max(self.l2_free, max(max(v) for v in self.free.values()))
        self.model.after(max(0.0, drained - now) + self.model.cost.fill_cycles, self.then)


class IssuedVector:
    """A tile's vector loop issued iteration by iteration on the core's units."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.issue_model = _IssueModel(model)

    def compute(self, group: CoreGroup, elements: int, then: Callable) -> None:
        """Issue the vector loop over ``elements``; call ``then()`` when it has drained."""
        loop = _VectorLoop(self.model, self.issue_model, elements, then)
        self.model.after(self.model.cost.overhead_cycles, loop.start)
