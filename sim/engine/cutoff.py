"""Stopping a candidate tiling's simulation once it can no longer win the tile search.

The tile search (:func:`~dspsim.sim.engine.tiling.choose_tiling`) simulates candidate
tile counts and keeps the fastest. Once one is known, a later candidate matters only if it
could come close to it; :class:`Cutoff` watches that candidate as it runs and stops it
(:class:`CannotWin`) as soon as a lower bound on its cycles passes the search's limit.
The bound is what no timing of the rest of the call can beat: every core still computes
the tiles it has not started, one after the other, and then stores its last one; and
every byte not yet asked of a shared region's link still crosses that link, no faster
than its capacity. A candidate that loses by its fill (large tiles) or by its tiles'
overheads is thus given up within its first tiles instead of simulated to its end.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from dspsim.sim.engine.model import Model
from dspsim.sim.engine.tiling_model import moved_lower_bound

__all__ = ["CannotWin", "Cutoff"]


class CannotWin(Exception):
    """A candidate tiling's simulation stopped: its cycles are at least ``cycles``."""

    def __init__(self, cycles: float) -> None:
        super().__init__(f"at least {cycles:,.1f} cycles")
        self.cycles = cycles


class Cutoff:
    """Watches a call's pipelines and raises :class:`CannotWin` once a lower bound on the
    call's cycles (counted from its launch) exceeds ``limit``."""

    def __init__(self, model: Model, pipelines: list, limit: float) -> None:
        self.model = model
        self.pipelines = pipelines
        self.limit = limit
        config, job = model.config, model.job
        size, cost = job.itemsize, model.cost
        self.tail = config.barrier_cycles
        # per pipeline: the vector cycles of its tiles from each tile on, the elements of
        # its tiles from each tile on (all its cores'), and the least time its last
        # tile's stores take
        self._compute_left = []
        self._elements_left = []
        self._last_store = []
        for pipeline in pipelines:
            counts = [stop - first for first, stop in pipeline.tiles]
            # balanced tiles come in one or two sizes
            per_size = {count: cost.tile_cycles(count) for count in set(counts)}
            sizes = np.array(counts, dtype=float)
            cycles = np.array([per_size[count] for count in counts])
            self._compute_left.append(suffix_sums(cycles))
            self._elements_left.append(suffix_sums(sizes * pipeline.group.weight))
            self._last_store.append(moved_lower_bound(config, job.outputs,
                                                      int(sizes[-1]) * size))
        # cycles per element each direction needs of each shared region's link
        capacity = {name: link.capacity for name, link in model.links.items()}
        self._per_element = [(loads, region, operands * size / capacity[region])
                             for loads, moved in ((True, job.inputs), (False, job.outputs))
                             for region, operands in
                             Counter(o.span.region for o in moved).items()]

    def bound(self, computed=None) -> float:
        """A lower bound on the call's cycles from its launch: what each pipeline has
        left to compute and store, and what every pipeline has not yet issued over each
        shared region's link. ``computed`` is a pipeline that has just computed a tile
        (and so issued its stores this instant)."""
        now = self.model.env.now - self.model.origin
        own = 0.0
        crossing: dict[str, float] = {}  # cycles each link needs for what is not yet issued
        for pipeline, compute_left, last_store, elements in zip(
                self.pipelines, self._compute_left, self._last_store, self._elements_left,
                strict=True):
            if pipeline.next_compute < len(pipeline.tiles):  # its last store is to come
                # the tile in hand has been computing since it began
                begun = (now - (pipeline.compute_started - self.model.origin)
                         if pipeline.computing else 0.0)
                own = max(own, compute_left[pipeline.next_compute] - begun + last_store)
            elif pipeline is computed:  # its last tile's stores were issued just now
                own = max(own, last_store)
            for loads, region, cycles_per_element in self._per_element:
                issued = pipeline.next_load if loads else pipeline.next_store
                crossing[region] = (crossing.get(region, 0.0)
                                    + elements[issued] * cycles_per_element)
        return float(now + max(own, max(crossing.values(), default=0.0)) + self.tail)

    def tile_computed(self, pipeline) -> None:
        """A pipeline finished computing a tile: on the first one, stop the call if it
        cannot win (the bound holds whichever pipeline it is seen from; one of them
        keeps the checks to one per tile)."""
        if pipeline is not self.pipelines[0]:
            return
        bound = self.bound(pipeline)
        if bound > self.limit:
            raise CannotWin(bound)


def suffix_sums(values: np.ndarray) -> np.ndarray:
    """``out[i]`` is the sum of ``values[i:]`` (0 past the end)."""
    return np.append(np.cumsum(values[::-1])[::-1], 0.0)
