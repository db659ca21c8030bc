"""What the steady-state solve computes about the periods it skips: how far a sliding
state may be advanced, and the counters the skipped periods would have recorded
(:mod:`dspsim.sim.engine.steady` uses them)."""
from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from operator import itemgetter

import numpy as np


def drift_periods(values: np.ndarray, drift: np.ndarray, handles: list, period: float,
                  drift_span: float) -> int:
    """How many periods a drifting state may be advanced by: no two pending instants
    that slide against each other change order (what interacts would change), no
    phase slides by more than ``drift_span`` of the period, nothing slides past
    the clock and no flow runs out of bytes."""
    # every instant of the state, past or pending, relative to the clock
    timed = np.array([h is not None and h.names[0] != "remaining" for h in handles])
    sign = np.array([h.sign if h is not None else 0 for h in handles])
    at, slide = (sign * values)[timed], (sign * drift)[timed]
    limit = math.inf
    if len(at):
        spread = float(slide.max() - slide.min())
        if spread > 0:
            limit = drift_span * period / spread
        gap = at[:, None] - at[None, :]
        closing = slide[:, None] - slide[None, :]
        meeting = gap * closing < 0
        if np.any(meeting):
            limit = min(limit, float(np.min(np.abs(gap[meeting] / closing[meeting]))))
    # nothing slides past the clock, and no flow runs out of bytes
    shrinking = np.array([h is not None for h in handles]) & (values >= 0) & (drift < 0)
    if np.any(shrinking):
        limit = min(limit, float(np.min(values[shrinking] / -drift[shrinking])))
    return int(limit) if math.isfinite(limit) else 1 << 62


def repeat_ddr_samples(timeline, start: float, end: float, periods: int) -> None:
    """Repeat ``timeline``'s DDR counter steps over [start, end) ``periods`` times from
    ``end``."""
    samples = timeline.ddr_samples
    first = bisect_left(samples, start, key=itemgetter(0))
    last = bisect_left(samples, end, lo=first, key=itemgetter(0))
    period = end - start
    steps = samples[first:last]
    if first and (first == len(samples) or samples[first][0] > start):
        steps.insert(0, (start, samples[first - 1][1]))  # in force since earlier
    later = samples[last:]  # recorded at ``end`` itself: after the skipped periods
    del samples[last:]
    shift = periods * period
    if steps:
        # one period's steps are distinct in turn; between periods the last may equal
        # the first, which then continues it
        joined = steps[1:] if steps[0][1] == steps[-1][1] else steps
        repeated = [(at + period, rate) for at, rate in steps]
        if samples and samples[-1][1] == repeated[0][1]:
            del repeated[0]
        samples.extend(repeated)
        samples.extend([(at + repeat * period, rate) for repeat in range(2, periods + 1)
                        for at, rate in joined])
    for at, rate in later:
        timeline.sample_ddr(at + shift, rate)

def repeat_busy_periods(busy: list[tuple[float, float]], start: float, end: float,
                        periods: int) -> None:
    """Repeat the busy periods (since, until) of a link that ended within (start, end]."""
    stretch = busy[bisect_right(busy, start, key=itemgetter(1)):]
    period = end - start
    busy.extend([(since + repeat * period, until + repeat * period)
                 for repeat in range(1, periods + 1) for since, until in stretch])
