"""Reading dspsim traces back: per-core engine activity, DDR use, bound, and differences.

A trace (see :mod:`dspsim.sim.trace`) holds one process per core with one thread per
engine (``dma-in``, ``vector``, ``dma-out``; ``dma-in.0``, ``dma-in.1``… when a core
has several engines per direction), a call process with the launch and barrier slices
and the "DDR bandwidth" counter, and a ``metadata`` object. Slices carry their exact
cycles in ``args`` (``start_cycle``, ``cycles``) and their bytes and memory region.

The bounding resource, the roofline terms and the DDR peak and achievable bandwidths are
those the simulator reported, carried in the trace's metadata: the summary reads them
rather than modelling the chip a second time, so it needs no chip description.
"""
from __future__ import annotations

import math
import numbers
import os
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dspsim.sim.errors import ArgumentError
from dspsim.sim.machine import ENGINES as ENGINE_ORDER
from dspsim.sim.trace import DDR_COUNTER, read_model
from dspsim.sim.trace_model import finite_number

CALL = "call"


@dataclass(frozen=True)
class TraceSlice:
    """One engine activity, in exact cycles."""

    core: int | None  # None: the call track (launch, barrier)
    thread: str  # dma-in, dma-in.1, vector, ...
    name: str
    start: float
    cycles: float
    args: dict

    @property
    def engine(self) -> str:
        return self.thread.partition(".")[0]

    @property
    def end(self) -> float:
        return self.start + self.cycles


@dataclass
class Trace:
    """A parsed trace file."""

    path: str
    metadata: dict[str, Any]
    total_cycles: float
    slices: list[TraceSlice]
    ddr: list[tuple[float, float]]  # (cycle, GB/s in use from then on)

    @property
    def cores(self) -> list[int]:
        return sorted({s.core for s in self.slices if s.core is not None})

    def of_core(self, core: int | None) -> list[TraceSlice]:
        return [s for s in self.slices if s.core == core]

    def label(self) -> str:
        m = self.metadata
        mask = "" if m.get("core_mask") is None else f", core_mask {m['core_mask']:#x}"
        return (f"{m.get('chip')} · {m.get('operator')} · {m.get('dtype')} · "
                f"n={m.get('length') or 0:,}{mask}")


def _core_of(group: str, path: str) -> int | None:
    """The core a group of tracks belongs to; None for the call's own group."""
    match = re.fullmatch(r"core (\d{1,6})", group)
    if match:
        return int(match.group(1))
    if group.endswith(" call"):
        return None
    raise ArgumentError(f"{path}: a track group is named {group[:60]!r}, neither 'core N' nor "
                        f"'<chip> call'; is this a dspsim trace?")


def _metadata(metadata: dict[str, Any], path: str) -> dict[str, Any]:
    """The metadata the summary relies on, checked: an ArgumentError naming the first key
    of the wrong type or range."""
    if "total_cycles" not in metadata:
        raise ArgumentError(f"{path} has no dspsim metadata (chip, operator, total_cycles); "
                            f"write traces with `dspsim run` or RunResult.write_trace")
    missing = [key for key in MODEL_METADATA if key not in metadata]
    if missing:
        raise ArgumentError(f"{path}: its metadata lacks {', '.join(missing)}; write the trace "
                            f"again with this dspsim (`dspsim run` or RunResult.write_trace)")
    meta = dict(metadata)
    try:
        meta["total_cycles"] = finite_number(meta["total_cycles"], "total_cycles")
        for key in ("ddr_peak_gbps", "ddr_achievable_gbps"):
            meta[key] = finite_number(meta[key], key, 0.0, 1e12)
        terms = meta["roofline_terms"]
        if not isinstance(terms, dict):
            raise ValueError("roofline_terms is not an object")
        meta["roofline_terms"] = {k: finite_number(v, f"roofline term {k!r}")
                                  for k, v in terms.items()}
        if meta["bound"] is not None and not isinstance(meta["bound"], str):
            raise ValueError(f"bound is {meta['bound']!r:.40}, not text")
        if meta.get("clock_mhz") is not None:
            meta["clock_mhz"] = finite_number(meta["clock_mhz"], "clock_mhz", 1e-9, 1e12)
        for key in ("length", "core_mask"):
            value = meta.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or not 0 <= value < 2 ** 64):
                raise ValueError(f"{key} is {value!r:.40}, not a non-negative integer")
    except ValueError as exc:
        raise ArgumentError(f"{path}: bad metadata: {exc}") from None
    return meta


def _slice_args(args: dict, where: str) -> dict:
    """Args the summary adds up, checked."""
    if "bytes" in args:
        try:
            finite_number(args["bytes"], "bytes", 0.0, 2.0 ** 63)
        except ValueError as exc:
            raise ArgumentError(f"{where}: {exc}") from None
    return args


def read_trace(path: str | os.PathLike) -> Trace:
    """Parse a dspsim trace file, Perfetto protobuf or Chrome JSON; a clear error if it is
    not one."""
    path = os.fspath(path)
    model = read_model(path)
    metadata = _metadata(model.metadata, path)
    cores = {group: _core_of(group, path) for group in model.groups()}
    slices = []
    for piece in model.slices:
        track = model.tracks[piece.track]
        slices.append(TraceSlice(cores[track.group], track.name, piece.name, piece.start,
                                 piece.end - piece.start,
                                 _slice_args(piece.args, f"{path}: slice {piece.name[:40]!r}")))
    ddr = [(round(s.at), s.value) for s in model.samples
           if model.tracks[s.track].name == DDR_COUNTER]
    return Trace(path, metadata, metadata["total_cycles"], slices, sorted(ddr))


#: What the simulator measured and the summary reports as is.
MODEL_METADATA = ("roofline_terms", "bound", "ddr_peak_gbps", "ddr_achievable_gbps")


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
            1 <= buckets <= MAX_BUCKETS):
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
                    if s.args.get("region") == "ddr" and s.core is not None)
    check_buckets(buckets)
    buckets = int(buckets)
    edges = [total * i / buckets for i in range(buckets + 1)]
    timeline = [float(g) for g in _ddr_averages(trace.ddr, edges[:-1], edges[1:])]
    achievable = float(meta["ddr_achievable_gbps"])
    saturated = sum(min(nxt, total) - cycle for (cycle, rate), nxt in
                    zip(trace.ddr, [c for c, _ in trace.ddr[1:]] + [total])
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
        finishing_together=together, engines=engines)

