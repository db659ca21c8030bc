"""The tile search: how many tiles each core of a shared-storage call streams its part in.

``length`` is split over the cores into contiguous balanced parts (:func:`partition`);
each core then streams its part through L2 in tiles (:func:`balanced_tiles`). How many
tiles is the decision that shapes scaling curves. The largest tile that fits is not the
fastest: a core with one tile loads, computes and stores with nothing overlapped, and with
few tiles the pipeline's fill and drain (the first load, the last compute and store) are a
large share of the call. More tiles shrink the fill and drain but pay a DMA setup and a
loop overhead per tile. A tuned library picks the count in between, and so does
:func:`choose_tiling`: a closed-form estimate of the double-buffered pipeline (fill,
steady state, drain) proposes the best tile counts, the simulator times each proposal,
and the fastest wins. Because the call's time is then a minimum over tilings, one more
vector of work or one core fewer can never make it faster by switching tilings.

A chip (``tiling: {policy: fixed, tile_bytes: N}``) or a call may fix the tile size
instead, to model a library that uses one. The work split itself is
:mod:`dspsim.sim.engine.work_split`; the estimate and the lower bound that steer the
search are :mod:`dspsim.sim.engine.tiling_model`, and its walk over tile counts
:mod:`dspsim.sim.engine.tile_walk`.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dspsim.sim.chip.load import ChipConfig
from dspsim.sim.engine.job import Job
from dspsim.sim.engine.tile_walk import (
    TIE_CYCLES,
    WORTH_A_STEP,
    hopeless_above,
    saves,
    search_counts,
    takes_floor,
)
from dspsim.sim.engine.tiling_model import (
    cycles_floor,
    cycles_lower_bound,
    estimated_best_count,
)
from dspsim.sim.engine.vector import VectorCost
from dspsim.sim.engine.work_split import (
    balanced_tiles,
    partition,
    tile_elements,
    tile_for_count,
)
from dspsim.sim.errors import CapacityError

# the work split and the walk are read from here too: a call's tiling, how it cuts its
# work and how the search walks
__all__ = ["MAX_TILES_PER_CORE", "NO_TILING", "TIE_CYCLES", "WORTH_A_STEP", "Abandoned",
           "TilingChoice", "balanced_tiles", "choose_tiling", "fixed_tile", "hopeless_above",
           "partition", "search_counts", "takes_floor", "tile_elements", "tile_for_count"]

#: A tuned library cuts one core's part into at most this many tiles: beyond it the fill
#: and drain are well under 0.1% of the call, and every tile costs simulation events.
MAX_TILES_PER_CORE = 1024


@dataclass(frozen=True)
class Abandoned:
    """A candidate tiling whose simulation stopped once it could no longer win: its
    cycles are at least ``cycles``."""

    cycles: float


@dataclass
class TilingChoice:
    """The tile size a call uses, and why."""

    policy: str  # "optimal" or "fixed"
    tile_elements: int  # elements per tile (per operand) on the busiest core
    tiles_per_core: int  # tiles of the busiest core
    tile_bytes: int  # bytes of one operand's tile buffer
    largest_fitting_elements: int  # the largest whole-vector tile whose buffers fit L2
    reason: str
    # simulated cycles of each candidate tile count (busiest core), for "optimal"
    candidates: dict[int, float] = field(default_factory=dict)
    # candidates not simulated: a lower bound on their cycles exceeds the fastest simulated
    bounded: dict[int, float] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """Plain data for results and traces."""
        return {"policy": self.policy, "tile_elements": self.tile_elements,
                "tiles_per_core": self.tiles_per_core, "tile_bytes": self.tile_bytes,
                "largest_fitting_elements": self.largest_fitting_elements,
                "reason": self.reason,
                "candidates": [{"tiles_per_core": k, "cycles": v}
                               for k, v in sorted(self.candidates.items())],
                "not_simulated_lower_bounds": [{"tiles_per_core": k, "cycles_at_least": v}
                                               for k, v in sorted(self.bounded.items())]}


#: the tiling of a call that has none (private storage, length 0): every key, no value, so
#: that every call's JSON has one key set
NO_TILING: dict[str, Any] = {
    "policy": None, "tile_elements": None, "tiles_per_core": None, "tile_bytes": None,
    "largest_fitting_elements": None, "reason": None, "candidates": [],
    "not_simulated_lower_bounds": []}


# ----------------------------------------------------------------------------- choice
def fixed_tile(config: ChipConfig, job: Job, lanes: int) -> tuple[int, str] | None:
    """The tile size in elements that the call or the chip fixes, and who fixed it.

    None under the optimal policy. Raises CapacityError when no tile fits L2, or when the
    fixed tile holds less than a vector or its buffers do not fit.
    """
    largest = tile_elements(config, job, lanes)
    if job.tile_bytes is not None:
        nbytes, source = job.tile_bytes, "the call"
    elif config.tiling.policy == "fixed" and config.tiling.tile_bytes is not None:
        nbytes, source = config.tiling.tile_bytes, f"the chip's tiling section ({config.source})"
    else:
        return None
    tile = nbytes // job.itemsize // lanes * lanes
    if tile < lanes or tile > largest:
        raise CapacityError(
            f"{config.name}: a fixed tile of {nbytes:,} bytes (from {source}) must hold at "
            f"least one {lanes}-lane vector ({lanes * job.itemsize:,} bytes) and its "
            f"{2 * (len(job.inputs) + len(job.outputs))} buffers must fit L2: at most "
            f"{largest * job.itemsize:,} bytes per operand here")
    return tile, source


def choose_tiling(config: ChipConfig, job: Job, cost: VectorCost,
                  parts: list[tuple[int, int, int]],
                  simulate: Callable[[int, float], Any]) -> tuple[TilingChoice, Any]:
    """Pick the tile size of a shared-storage call.

    ``simulate(tile_elements, limit)`` runs the call with that tile size and returns its
    timing (anything with a ``cycles`` attribute), or :class:`Abandoned` once the call is
    sure to take more than ``limit`` cycles; it is called once for each proposed tile
    count. Returns the choice and the chosen tiling's timing (None for a fixed tile, which
    is not simulated here).
    """
    lanes = cost.lanes
    largest = tile_elements(config, job, lanes)
    elements = max(stop - start for _, start, stop in parts)
    busy = sum(1 for _, start, stop in parts if stop > start)
    fewest = max(1, math.ceil(elements / largest))
    fixed = fixed_tile(config, job, lanes)
    if fixed is not None:
        tile, source = fixed
        return TilingChoice("fixed", min(tile, elements), max(1, math.ceil(elements / tile)),
                            tile * job.itemsize, largest,
                            f"fixed at {tile * job.itemsize:,} bytes per operand by {source}"), None
    most = max(fewest, min(MAX_TILES_PER_CORE, math.ceil(elements / lanes)))
    by_tile: dict[int, Any] = {}  # counts that cut the same tile are the same tiling
    timings: dict[int, Any] = {}
    bounds: dict[int, float] = {}  # by tile: lower bounds of tilings not simulated
    stopped: set[int] = set()  # tiles among them whose simulation was begun

    def timed(count: int) -> float:
        tile = tile_for_count(elements, count, lanes)
        if tile in by_tile:
            return by_tile[tile].cycles
        limit = math.inf
        if tile not in bounds and by_tile:
            fastest = min(t.cycles for t in by_tile.values())
            bound = cycles_lower_bound(config, job, cost, parts, count)
            if bound > fastest + TIE_CYCLES:
                bounds[tile] = bound
            limit = hopeless_above(fastest, math.ceil(elements / tile))
        if tile in bounds:
            return bounds[tile]
        result = simulate(tile, limit)
        if isinstance(result, Abandoned):
            bounds[tile] = result.cycles
            stopped.add(tile)
            return result.cycles
        by_tile[tile] = timings[count] = result
        return result.cycles

    start = estimated_best_count(config, job, cost, busy, elements, fewest, most)
    floor, resource = cycles_floor(config, job, cost, parts)
    unworthy = search_counts(timed, fewest, most, start, floor)
    quickest = min(t.cycles for t in timings.values())
    # among tilings equally fast to the reported cycle, the fewest tiles: fewer transfers
    # to set up on the chip, and fewer events to simulate
    chosen = min(c for c, t in timings.items() if t.cycles <= quickest + TIE_CYCLES)
    tile = tile_for_count(elements, chosen, lanes)
    # name each candidate by the tiles it really cuts (rounding to whole vectors may merge)
    candidates = {math.ceil(elements / tile_for_count(elements, c, lanes)): t.cycles
                  for c, t in timings.items()}
    bounded = {math.ceil(elements / t): b for t, b in bounds.items()}
    best = math.ceil(elements / tile)
    largest_stopped = tile_for_count(elements, fewest, lanes) in stopped
    fewest = math.ceil(elements / tile_for_count(elements, fewest, lanes))
    if len(candidates) + len(bounded) == 1:
        reason = ("the only tiling: each core's part fits L2 at once" if best == 1
                  else "the only tiling worth simulating")
    elif fewest in bounded:
        reason = (f"fastest of {len(candidates)} simulated tile counts; the largest tile that "
                  f"fits L2 ({fewest} per core) takes at least "
                  f"{bounded[fewest] / candidates[best] - 1:.1%} longer (a lower bound, not "
                  f"simulated{' to its end' if largest_stopped else ''})")
    elif best == fewest or not saves(candidates[fewest], candidates[best]):
        reason = (f"fastest of {len(candidates)} simulated tile counts; the largest tile that "
                  f"fits L2 is as fast (within {WORTH_A_STEP:.2%})")
    else:
        slower = candidates[fewest] / candidates[best] - 1
        reason = (f"fastest of {len(candidates)} simulated tile counts; the largest tile that "
                  f"fits L2 ({fewest} per core) takes {slower:.1%} longer")
    if len(bounded) > len(stopped):
        unsimulated = len(bounded) - len(stopped)
        reason += (f"; {unsimulated} more not simulated, "
                   f"{'its lower bound' if unsimulated == 1 else 'their lower bounds'} "
                   f"exceeding the fastest")
    if unworthy is not None:
        untimed = math.ceil(elements / tile_for_count(elements, unworthy, lanes))
        reason += (f"; {untimed} per core not simulated: a step of the walk saves at most "
                   f"half of what the one before it saved, here less than {WORTH_A_STEP:.2%}")
    if takes_floor(quickest, floor) and len(candidates) > 1:
        reason += (f"; none can be faster: it takes the call's least possible time "
                   f"(launch, barrier, a DMA setup and the {resource} term)")
    if stopped:
        reason += (f"; {len(stopped)} more stopped once a lower bound on "
                   f"{'its' if len(stopped) == 1 else 'their'} cycles exceeded the fastest")
    choice = TilingChoice("optimal", tile, best, tile * job.itemsize, largest, reason, candidates,
                          bounded)
    return choice, timings[chosen]
