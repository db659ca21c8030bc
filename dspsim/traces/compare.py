"""``trace compare``: what changed between two runs — total, per core, per engine."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dspsim.traces.view import ENGINE_ORDER, TraceSummary

COMPARED_METADATA = ("chip", "operator", "dtype", "storage", "length", "core_mask", "clock_mhz",
                     "fidelity")


@dataclass
class TraceComparison:
    """What changed from run A to run B. Every pair is (A, B); None where a run lacks it."""

    a: TraceSummary
    b: TraceSummary
    metadata: dict[str, tuple[Any, Any]]  # only the keys that differ
    total_cycles: tuple[int, int]  # whole cycles, rounded up as RunResult.cycles
    microseconds: tuple[float, float]
    bound: tuple[str, str]
    critical_core: tuple[int | None, int | None]
    ddr_mean_gbps: tuple[float, float]
    engines: dict[str, tuple[float, float]]  # busy cycles added up over the cores
    cores: dict[int, dict[str, tuple[float | None, float | None]]]  # finish and per engine


def _microseconds(summary: TraceSummary) -> float:
    return summary.cycles / float(summary.metadata.get("clock_mhz") or 1.0)


def compare(a: TraceSummary, b: TraceSummary) -> TraceComparison:
    """Total, per-core and per-engine differences between two summarised traces."""
    metadata = {k: (a.metadata.get(k), b.metadata.get(k)) for k in COMPARED_METADATA
                if a.metadata.get(k) != b.metadata.get(k)}
    engines = [e for e in ENGINE_ORDER if e in a.engines or e in b.engines]
    engines += [e for e in a.engines + b.engines if e not in engines]

    def engine_total(summary: TraceSummary, engine: str) -> float:
        return sum(c.busy.get(engine, 0.0) for c in summary.cores)

    cores_a = {c.core: c for c in a.cores}
    cores_b = {c.core: c for c in b.cores}
    cores = {}
    for core in sorted(set(cores_a) | set(cores_b)):
        ca, cb = cores_a.get(core), cores_b.get(core)
        entry = {"finish": (ca.finish if ca else None, cb.finish if cb else None)}
        for engine in engines:
            entry[engine] = (ca.busy.get(engine, 0.0) if ca else None,
                             cb.busy.get(engine, 0.0) if cb else None)
        cores[core] = entry
    return TraceComparison(
        a=a, b=b, metadata=metadata, total_cycles=(a.cycles, b.cycles),
        microseconds=(_microseconds(a), _microseconds(b)), bound=(a.bound, b.bound),
        critical_core=(a.critical_core, b.critical_core),
        ddr_mean_gbps=(a.ddr_mean_gbps, b.ddr_mean_gbps),
        engines={e: (engine_total(a, e), engine_total(b, e)) for e in engines}, cores=cores)
