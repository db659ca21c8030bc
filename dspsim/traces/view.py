"""Reading dspsim traces back: per-core engine activity, DDR use, bound, and differences.

A trace (see :mod:`dspsim.traces.formats`; Perfetto protobuf or Chrome JSON, both read into one
model) holds a group of tracks per core with one track per engine (``dma-in``, ``vector``,
``dma-out``; ``dma-in.0``, ``dma-in.1``… when a core has several engines per direction),
a call group with the launch and barrier slices and the "DDR bandwidth" counter, and a
``metadata`` object. Every value the summary uses is checked as it is read, so a
malformed file ends in an ArgumentError naming what is wrong. Slices carry their exact
cycles in ``args`` (``start_cycle``, ``cycles``) and their bytes and memory region.

The bounding resource, the roofline terms and the DDR peak and achievable bandwidths are
those the simulator reported, carried in the trace's metadata: the summary reads them
rather than modelling the chip a second time, so it needs no chip description.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import numpy as np

from dspsim.sim.engine.machine import ENGINES as ENGINE_ORDER
from dspsim.sim.errors import ArgumentError
from dspsim.traces.read import CALL, MODEL_METADATA, Trace, TraceSlice, read_trace
from dspsim.traces.speed import SpeedOfLight, speed_of_light
from dspsim.traces.usage import RESOURCES

__all__ = ["CALL", "MODEL_METADATA", "MAX_BUCKETS", "Trace", "TraceSlice", "TraceSummary",
           "CoreSummary", "check_buckets", "gaps", "intersection", "length_of", "merge",
           "read_trace", "summarize"]


# ----------------------------------------------------------------------------- intervals
def merge(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The union of intervals as sorted disjoint intervals."""
    merged: list[list[float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        elif end > start:
            merged.append([start, end])
    return [(a, b) for a, b in merged]


def length_of(intervals: list[tuple[float, float]]) -> float:
    return sum(b - a for a, b in intervals)


def intersection(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    """Total length common to two sorted disjoint interval lists."""
    i = j = 0
    total = 0.0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0.0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def gaps(intervals: list[tuple[float, float]], start: float, end: float) -> list[float]:
    """Lengths of the idle stretches of ``intervals`` (merged) within [start, end]."""
    out, cursor = [], start
    for a, b in intervals:
        if a > cursor:
            out.append(a - cursor)
        cursor = max(cursor, b)
    if end > cursor:
        out.append(end - cursor)
    return out


# ----------------------------------------------------------------------------- summary
@dataclass
class CoreSummary:
    core: int
    tiles: int
    busy: dict[str, float]  # per engine (its threads merged), cycles
    active: float  # cycles in which any engine of the core worked
    overlap: float  # cycles in which vector work and a DMA transfer ran together
    finish: float  # cycle at which its last activity ended
    vector_gaps: list[float]  # idle stretches of the vector engine between its first and last tile

    def share(self, engine: str, total: float) -> float:
        return self.busy.get(engine, 0.0) / total if total else 0.0


@dataclass
class TraceSummary:
    label: str
    metadata: dict[str, Any]
    total_cycles: float
    cores: list[CoreSummary]
    call_cycles: dict[str, float]  # launch, barrier
    ddr_bytes: float
    ddr_mean_gbps: float
    ddr_timeline: list[float]  # mean GB/s in equal slices of the call
    ddr_saturated_share: float  # share of the call at >= 99% of the achievable bandwidth
    ddr_peak_gbps: float
    ddr_achievable_gbps: float
    roofline_terms: dict[str, float]
    bound: str
    critical_core: int | None
    finishing_together: list[int]  # cores finishing within a cycle of the critical core
    engines: list[str] = field(default_factory=list)
    #: every resource's busy share and share of peak, the bound and the advice (None for a
    #: trace written before traces described their resources)
    speed_of_light: SpeedOfLight | None = None

    @property
    def cycles(self) -> int:
        """Whole cycles of the call, rounded up as RunResult.cycles is."""
        return math.ceil(self.total_cycles - 1e-9) if self.total_cycles else 0


def _ddr_average(samples: list[tuple[float, float]], lo: float, hi: float) -> float:
    """Mean of the step function ``samples`` over [lo, hi)."""
    return float(_ddr_averages(samples, [lo], [hi])[0])


def _ddr_averages(samples: list[tuple[float, float]], lows, highs) -> np.ndarray:
    """Means of the step function ``samples`` over each [low, high), all at once."""
    lows, highs = np.asarray(lows, float), np.asarray(highs, float)
    if not samples:
        return np.zeros(len(lows))
    times = np.array([c for c, _ in samples], float)
    rates = np.array([r for _, r in samples], float)
    # the integral of the rate from the first sample to each sample
    area = np.concatenate(([0.0], np.cumsum(rates[:-1] * np.diff(times))))

    def integral(t: np.ndarray) -> np.ndarray:
        k = np.searchsorted(times, t, side="right") - 1
        inside = k >= 0
        k = np.clip(k, 0, None)
        return np.where(inside, area[k] + rates[k] * (t - times[k]), 0.0)

    width = highs - lows
    with np.errstate(invalid="ignore", divide="ignore"):
        means = (integral(highs) - integral(lows)) / width
    return np.where(width > 0, means, 0.0)


def _core_summary(trace: Trace, core: int) -> CoreSummary:
    slices = trace.of_core(core)
    engines = sorted({s.engine for s in slices})
    spans = {e: merge([(s.start, s.end) for s in slices if s.engine == e]) for e in engines}
    # an engine is busy while any of its threads (operands side by side) has a slice
    busy = {e: length_of(spans[e]) for e in engines}
    vector = spans.get("vector", [])
    dma = merge([iv for e, ivs in spans.items() if e != "vector" for iv in ivs])
    vector_gaps = gaps(vector, vector[0][0], vector[-1][1]) if vector else []
    return CoreSummary(
        core=core, tiles=sum(1 for s in slices if s.engine == "vector"), busy=busy,
        active=length_of(merge([(s.start, s.end) for s in slices])),
        overlap=intersection(vector, dma), finish=max((s.end for s in slices), default=0.0),
        vector_gaps=vector_gaps)


#: The most slices the DDR timeline of a summary may have.
MAX_BUCKETS = 10_000


def check_buckets(buckets, name: str = "buckets") -> None:
    """An ArgumentError unless ``buckets`` is a whole number from 1 to MAX_BUCKETS."""
    if isinstance(buckets, bool) or not isinstance(buckets, numbers.Integral) or not (
            1 <= int(buckets) <= MAX_BUCKETS):
        raise ArgumentError(f"{name} {buckets!r:.40} must be a whole number from 1 to "
                            f"{MAX_BUCKETS:,} (the slices of the DDR timeline)")


def summarize(trace: Trace, buckets: int = 20) -> TraceSummary:
    """Per-core engine activity, DDR use over time, the bound and the critical core."""
    total = trace.total_cycles
    meta = trace.metadata
    cores = [_core_summary(trace, c) for c in trace.cores]
    terms = {name: float(cycles) for name, cycles in meta["roofline_terms"].items()}
    bound = meta["bound"] or "none (length 0)"
    ddr_bytes = sum(s.args.get("bytes", 0) for s in trace.slices
                    if s.args.get("region") == meta.get("dram_level", "ddr")
                    and s.core is not None)
    check_buckets(buckets)
    buckets = int(buckets)
    edges = [total * i / buckets for i in range(buckets + 1)]
    timeline = [float(g) for g in _ddr_averages(trace.ddr, edges[:-1], edges[1:])]
    achievable = float(meta["ddr_achievable_gbps"])
    saturated = sum(min(nxt, total) - cycle
                    for (cycle, rate), (nxt, _) in pairwise([*trace.ddr, (total, 0.0)])
                    if rate >= 0.99 * achievable and nxt > cycle)
    engines = sorted({e for c in cores for e in c.busy},
                     key=lambda e: ENGINE_ORDER.index(e) if e in ENGINE_ORDER else 99)
    critical = max(cores, key=lambda c: c.finish) if cores else None
    together = [c.core for c in cores if critical and critical.finish - c.finish < 1.0]
    return TraceSummary(
        label=trace.label(), metadata=trace.metadata, total_cycles=total, cores=cores,
        call_cycles={s.name: s.cycles for s in trace.of_core(None)}, ddr_bytes=ddr_bytes,
        ddr_mean_gbps=_ddr_average(trace.ddr, 0.0, total), ddr_timeline=timeline,
        ddr_saturated_share=saturated / total if total else 0.0,
        ddr_peak_gbps=float(meta["ddr_peak_gbps"]), ddr_achievable_gbps=achievable,
        roofline_terms=terms, bound=bound, critical_core=critical.core if critical else None,
        finishing_together=together, engines=engines,
        speed_of_light=(speed_of_light(trace.model) if trace.model is not None
                        and trace.model.metadata.get(RESOURCES) else None))

