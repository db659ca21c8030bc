"""The tile search's walk over tile counts: which counts it times, and when it stops.

:func:`search_counts` walks from the count the closed-form estimate proposes towards
shorter simulated times, by doubling and halving while a step saves more than
:data:`WORTH_A_STEP`, then among few tiles by neighbours; :func:`hopeless_above` says when
a candidate's simulation can no longer change what the walk decides, and
:func:`step_saves_at_most` when a step need not be simulated at all. It knows nothing of
chips: :mod:`dspsim.sim.engine.tiling` times the counts it asks for.
"""
from __future__ import annotations

import math
from collections.abc import Callable

__all__ = ["NEAR_BEST", "NEIGHBOURS", "NEIGHBOUR_TILES", "TIE_CYCLES", "WORTH_A_STEP",
           "hopeless_above", "saves", "search_counts", "step_saves_at_most", "takes_floor"]

#: Tile counts on either side of the search's best that are simulated too ...
NEIGHBOURS = 1
#: ... while it has at most this many tiles per core.
NEIGHBOUR_TILES = 16
#: Among few tiles, where burst arbitration makes the curve jagged, the neighbours of every
#: count within this fraction of the fastest are simulated too, round after round while a
#: round finds a faster count: a walk by doubling and halving can step over the best count
#: (MT7004 relu_grad 16,384 elements on one core at 250 setup cycles: 13 tiles 13,977
#: cycles, 6 tiles 14,193, 7 tiles 13,632), and more setup cycles would then find it and
#: look faster.
NEAR_BEST = 0.02
#: The doubling walk takes a step only if it saves more than this fraction of the cycles:
#: past the pipeline's knee a doubling gains a few cycles in 10^5 and costs twice the
#: events to simulate (FT78NE gelu_grad 65,536 elements on 8 cores: 187 tiles 93,115
#: cycles, 342 tiles 93,110), so the walk stops there. Well under the 1% of the scaling
#: invariants, and the same fraction below which the report calls the largest tile as fast.
WORTH_A_STEP = 5e-4


#: Simulated times closer than this are ties: results are reported in whole cycles.
TIE_CYCLES = 0.5


def saves(before: float, after: float) -> bool:
    """Whether ``after`` is worth a step of the walk from ``before``: fewer cycles by more
    than :data:`WORTH_A_STEP` of them (and by more than a tie)."""
    return after < before - max(TIE_CYCLES, WORTH_A_STEP * before)


def takes_floor(cycles: float, floor: float) -> bool:
    """Whether ``cycles`` are the call's least possible (``floor``), up to a tie."""
    return cycles <= floor + TIE_CYCLES


def hopeless_above(fastest: float, tiles: int) -> float:
    """Cycles beyond which a candidate of ``tiles`` tiles per core can change nothing the
    search decides when the fastest so far takes ``fastest``: it would be no step of the
    walk (:func:`saves`) from any count at least as slow as the fastest, nor, among few
    tiles, within :data:`NEAR_BEST` of it (whose neighbours are simulated too)."""
    limit = max(fastest + TIE_CYCLES, fastest / (1 - WORTH_A_STEP))
    if tiles <= NEIGHBOUR_TILES:
        limit = max(limit, fastest * (1 + NEAR_BEST))
    return limit


def step_saves_at_most(before: float, after: float) -> float:
    """What one more step of the walk in the same direction (doubling the tile count
    again, or halving it again) can save at most, once the step to it saved
    ``before - after`` cycles: half of that. A call's cycles over its tile count ``k``
    behave as ``a + b / k + c * k``: the pipeline's fill and drain (a tile's first load,
    its last compute and store) shrink in proportion to the tile, and every tile adds its
    DMA setup and loop overhead. On such a curve each doubling saves at most half of
    what the doubling before it saved, and so does each halving."""
    return max(0.0, (before - after) / 2)


def search_counts(time_count: Callable[[int], float], fewest: int, most: int,
                  start: int, floor: float = 0.0) -> int | None:
    """Walk the tile counts from ``start`` towards shorter simulated times.

    Doubling or halving the count while either saves time worth the step
    (:data:`WORTH_A_STEP`; the estimate is close, not exact, and a narrow DMA pool makes
    the curve lumpy), then the neighbours of the best when it has few tiles, where one
    tile more or less still matters, and of every count nearly as fast
    (:data:`NEAR_BEST`), round after round while a round finds a faster count.
    ``time_count`` times a count (and remembers it): by simulating it, or by a lower
    bound when that bound already exceeds the fastest simulated time. Once a count takes
    ``floor`` cycles (up to a tie), the least any count can take, none can be faster: the
    walk only halves it while the half takes the floor too (ties go to fewer tiles).
    Where the fewest tiles are as fast as the estimate's count a step or more above them,
    the curve between is flat and the walk stops there. It first times the count halfway
    between them (on a log scale), unless the floor leaves no room for a step: a curve
    can dip between two equal ends, and the walk then goes on from there. Two counts
    closer than a step say nothing of the curve beyond them, and the walk goes on.
    After a step, the next step the same way (to more than :data:`NEIGHBOUR_TILES`
    tiles) is timed only if it could still save a step's worth
    (:func:`step_saves_at_most`). Returns the count that left untimed, if any.
    """
    visited: set[int] = set()
    untimed: list[int] = []  # a step not timed: it could not save a step's worth
    _walk(time_count, fewest, most, start, floor, visited, untimed)
    return untimed[-1] if untimed and untimed[-1] not in visited else None


def _walk(time_count: Callable[[int], float], fewest: int, most: int, start: int,
          floor: float, visited: set[int], untimed: list[int]) -> None:
    """:func:`search_counts`'s walk: adds each count it times to ``visited`` and each
    step it leaves untimed to ``untimed``."""

    def at_floor(count: int) -> bool:
        return takes_floor(timed(count), floor)

    def reached_floor() -> bool:
        """Whether a count seen takes the floor; if so, also time the halves of the fewest
        that does while each takes the floor too (the caller chooses the fewest tiles
        among the counts timed that tie)."""
        floored = [c for c in visited if at_floor(c)]
        if not floored:
            return False
        count = min(floored)
        while count > fewest and at_floor(clamp(count / 2)):
            count = clamp(count / 2)
        return True

    def timed(count: int) -> float:  # the caller's, remembering which counts it saw
        visited.add(count)
        return time_count(count)

    def clamp(count: float) -> int:
        return min(most, max(fewest, int(round(count))))

    current = clamp(start)
    timed(current)  # first: a fast time there lets the others be bounded instead of simulated
    # (closer than a step: one core, three 4 GB/s engines, DDR bound, 11 and 12 tiles
    # 84,351 and 84,388 cycles, 96 tiles 82,864)
    if current >= 2 * fewest and not (saves(timed(fewest), timed(current))
                                      or saves(timed(current), timed(fewest))):
        # as fast with the largest tiles as where the estimate points: flat, or a valley
        # between (one core of a pool whose port binds: 15 and 50 tiles 131,367 and
        # 131,310 cycles, 28 tiles 129,636)
        quicker = min(timed(fewest), timed(current))
        middle = clamp(math.sqrt(fewest * current))
        if (middle in (fewest, current) or not saves(quicker, floor)
                or not saves(quicker, timed(middle))):
            return
        current = middle
    came_from = None  # the count the walk last stepped from
    while True:
        if reached_floor():
            return
        steps = {clamp(current / 2), clamp(current * 2)} - {current}
        if came_from is not None:
            # the next step the same way, timed only if it could still save a step (among
            # few tiles the curve is jagged, and the neighbour rounds below need every
            # count the walk would time; a step clamped to the fewest or most tiles has
            # no step ahead)
            ahead = clamp(current * 2) if current > came_from else clamp(current / 2)
            if (ahead not in visited and ahead > NEIGHBOUR_TILES and not saves(
                    timed(current),
                    timed(current) - step_saves_at_most(timed(came_from), timed(current)))):
                steps.discard(ahead)
                untimed.append(ahead)
        better = [c for c in steps if saves(timed(current), timed(c))]
        if not better:
            break
        came_from, current = current, min(better, key=timed)
    if current > NEIGHBOUR_TILES:
        return
    refined: set[int] = set()
    fastest = min(timed(c) for c in visited)
    while not reached_floor():
        near = sorted(c for c in visited - refined
                      if c <= NEIGHBOUR_TILES and timed(c) <= fastest * (1 + NEAR_BEST))
        for count in near:
            refined.add(count)
            for neighbour in (count - NEIGHBOURS, count + NEIGHBOURS):
                if reached_floor():
                    return
                if fewest <= neighbour <= most:
                    timed(neighbour)
        before, fastest = fastest, min(timed(c) for c in visited)
        if not near or fastest >= before - TIE_CYCLES:
            return  # a round of neighbours found nothing faster: the curve's best is known
