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
import os
from dataclasses import dataclass, field
from typing import Any

from dspsim.sim.errors import ArgumentError
from dspsim.sim.machine import ENGINES as ENGINE_ORDER
from dspsim.sim.trace import load_trace
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
                f"n={m.get('length', 0):,}{mask}")


def _names(events: list[dict]) -> tuple[dict[int, str], dict[tuple[int, int], str]]:
    processes, threads = {}, {}
    for event in events:
        if event.get("ph") != "M":
            continue
        name = (event.get("args") or {}).get("name")
        if event.get("name") == "process_name":
            processes[event.get("pid")] = name
        elif event.get("name") == "thread_name":
            threads[(event.get("pid"), event.get("tid"))] = name
    return processes, threads


def _core_of(process: str | None, path: str, pid) -> int | None:
    if process and process.startswith("core "):
        return int(process.split()[1])
    if process and process.endswith((" call", " program")):
        return None
    raise ArgumentError(f"{path}: process {pid} is named {process!r}, neither 'core N' nor "
                        f"'<chip> call'; is this a dspsim trace?")


def read_trace(path: str | os.PathLike) -> Trace:
    """Parse a dspsim trace file; a clear error if it is not one."""
    path = os.fspath(path)
    data = load_trace(path)
    metadata = data.get("metadata")
    if not isinstance(metadata, dict) or "total_cycles" not in metadata:
        raise ArgumentError(f"{path} has no dspsim metadata (chip, operator, total_cycles); "
                            f"write traces with `dspsim run` or RunResult.write_trace")
    missing = [key for key in MODEL_METADATA if key not in metadata]
    if missing:
        raise ArgumentError(f"{path}: its metadata lacks {', '.join(missing)}; write the trace "
                            f"again with this dspsim (`dspsim run` or RunResult.write_trace)")
    events = data["traceEvents"]
    processes, threads = _names(events)
    slices, ddr = [], []
    try:
        for event in events:
            if event.get("ph") == "X":
                args = event.get("args") or {}
                if args.get("program_slice"):
                    continue  # a program's parent slice of a call, not engine activity
                start = args.get("start_cycle", event["ts"] * 1000)
                cycles = args.get("cycles", event["dur"] * 1000)
                core = _core_of(processes.get(event["pid"]), path, event["pid"])
                thread = threads.get((event["pid"], event["tid"]), CALL)
                slices.append(TraceSlice(core, thread, event["name"], float(start),
                                         float(cycles), args))
            elif event.get("ph") == "C" and event.get("name") == "DDR bandwidth":
                ddr.append((round(event["ts"] * 1000), float(event["args"]["GB/s"])))
    except (KeyError, TypeError, ValueError) as exc:
        raise ArgumentError(f"{path}: malformed trace event ({exc!r}); is this a dspsim "
                            f"trace?") from None
    return Trace(path, metadata, float(metadata["total_cycles"]), slices, sorted(ddr))


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
    if hi <= lo:
        return 0.0
    total = 0.0
    for i, (cycle, rate) in enumerate(samples):
        nxt = samples[i + 1][0] if i + 1 < len(samples) else hi
        a, b = max(cycle, lo), min(nxt, hi)
        if b > a:
            total += rate * (b - a)
    return total / (hi - lo)


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


def summarize(trace: Trace, buckets: int = 20) -> TraceSummary:
    """Per-core engine activity, DDR use over time, the bound and the critical core."""
    total = trace.total_cycles
    meta = trace.metadata
    cores = [_core_summary(trace, c) for c in trace.cores]
    terms = {name: float(cycles) for name, cycles in meta["roofline_terms"].items()}
    bound = meta["bound"] or "none (length 0)"
    ddr_bytes = sum(s.args.get("bytes", 0) for s in trace.slices
                    if s.args.get("region") == "ddr" and s.core is not None)
    buckets = max(1, buckets)
    timeline = [_ddr_average(trace.ddr, total * i / buckets, total * (i + 1) / buckets)
                for i in range(buckets)]
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

