"""Assembling a program's result from the model's timing: each call's record, per core,
DDR over time, the lower bounds no schedule can beat, the critical path, the events and
which call read what another wrote."""
from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

from dspsim.binding import BoundCall
from dspsim.programs.result import CallRecord, ProgramResult
from dspsim.result import RunResult
from dspsim.seam import call_result
from dspsim.sim.chip.load import ChipConfig
from dspsim.sim.engine.machine import ENGINES, Timing
from dspsim.sim.program.graph import CallItem, Dependencies, Node, RecordItem, WaitItem
from dspsim.sim.program.scheduler import ProgramTiming, ScheduledCall

#: windows of the DDR utilisation time series
DDR_WINDOWS = 20


def build_result(config: ChipConfig, streams: dict[str, list[CallItem | RecordItem | WaitItem]],
                 calls: Sequence[BoundCall], timing: ProgramTiming, graph: Dependencies,
                 warnings: list[str]) -> ProgramResult:
    """Assemble the ProgramResult of a program from the model's ProgramTiming.

    ``streams`` holds each stream's items in order (its calls as graph items), ``calls``
    each call's checked arguments by call index.
    """
    records = []
    for scheduled in timing.calls:
        result = call_result(config, calls[scheduled.index], scheduled.timing,
                             timing.fidelity)
        records.append(_record(scheduled, result))
    cycles = math.ceil(timing.cycles - 1e-9) if timing.cycles else 0
    ddr_capacity = config.bytes_per_cycle(config.ddr.bandwidth_gbps)
    bounds = _bounds(config, records, graph, timing)
    all_warnings = list(warnings) + sorted({w for r in records for w in r.result.warnings})
    return ProgramResult(
        chip=config.name, fidelity=timing.fidelity, clock_mhz=config.clock_mhz, cycles=cycles,
        streams=list(streams), calls=records,
        per_core=_per_core(records, timing.cycles),
        ddr=_ddr(records, timing, ddr_capacity, config.clock_mhz, config.ddr.name),
        bounds=bounds, bound=max(bounds, key=bounds.__getitem__) if bounds else "none",
        critical_path=_critical_path(records), events=_events(streams, timing),
        scheduled_events=timing.scheduled_events,
        tiles=sum(r.result.tiles for r in records), warnings=all_warnings, timing=timing,
        data_dependencies=data_dependencies(calls, timing.memory_order))


def data_dependencies(calls: Sequence[BoundCall], order: Sequence[int]) -> list[dict[str, Any]]:
    """For each call, in the order the program computes them, the last earlier call whose
    output overlaps each of its inputs: ``{"writer", "reader", "operand"}``.

    Outputs are kept sorted by place per storage (a region, or one core's L2); an input
    is compared only with the outputs of its storage that start below its end.
    """
    written: dict[tuple, list[tuple[int, int, int, int]]] = {}  # storage -> sorted outputs
    found = []
    for rank, index in enumerate(order):
        call = calls[index]
        for operand in call.inputs:
            span = operand.span
            outputs = written.get((span.region, span.core), [])
            last = bisect.bisect_left(outputs, (span.end_offset,))
            writers = [w for w in outputs[:last] if w[1] > span.offset]
            if writers:
                writer = max(writers, key=lambda w: w[2])[3]
                found.append({"writer": writer, "reader": index, "operand": operand.name})
        out = call.output.span
        bisect.insort(written.setdefault((out.region, out.core), []),
                      (out.offset, out.end_offset, rank, index))
    return found


def _events(streams: dict[str, list[CallItem | RecordItem | WaitItem]],
            timing: ProgramTiming) -> list[dict[str, Any]]:
    """Each recorded event: its stream, the cycle it completed, and each wait for it: the
    waiting stream, the first call the wait held (if any), when the stream reached the wait
    and when the event released it."""
    events: dict[str, dict[str, Any]] = {}
    for name, items in streams.items():
        for item in items:
            if isinstance(item, RecordItem):
                events.setdefault(item.event, {"event": item.event, "waits": []}).update(
                    recorded_on=name, cycle=timing.event_cycles.get(item.event))
    ends = {c.index: c.end for c in timing.calls}
    for name, items in streams.items():
        for position, item in enumerate(items):
            if isinstance(item, WaitItem) and item.event in events:
                released = next((i.index for i in items[position + 1:]
                                 if isinstance(i, CallItem)), None)
                earlier = [ends[i.index] for i in items[:position]
                           if isinstance(i, CallItem)]
                reached = max(earlier, default=0.0)
                recorded = events[item.event].get("cycle")
                events[item.event]["waits"].append({
                    "stream": name, "call": released, "reached_cycle": reached,
                    "released_cycle": max(reached, recorded if recorded is not None else 0.0)})
    return list(events.values())


def _record(scheduled: ScheduledCall, result: RunResult) -> CallRecord:
    return CallRecord(
        index=scheduled.index, operator=result.operator, stream=scheduled.stream,
        cores=tuple(scheduled.cores), core_mask=result.core_mask, enqueue_cycle=0,
        ready_cycle=scheduled.ready, start_cycle=scheduled.start, end_cycle=scheduled.end,
        waited_for=scheduled.waited_for, after_call=scheduled.after_call,
        cores_held_by=scheduled.cores_held_by, transfer_timing=scheduled.transfer_timing,
        result=result)


def _per_core(records: list[CallRecord], total: float) -> dict[int, dict[str, Any]]:
    """Per core: cycles held by calls (launch to barrier), idle cycles, engine busy cycles."""
    cores: dict[int, dict[str, Any]] = {}
    for record in records:
        for core in record.cores:
            entry = cores.setdefault(core, {"busy_cycles": 0.0, "calls": [],
                                            "engine_busy_cycles": {e: 0.0 for e in ENGINES}})
            entry["busy_cycles"] += record.cycles
            entry["calls"].append(record.index)
        for core_result in record.result.per_core:
            if core_result.core in cores:
                for engine, busy in core_result.busy_cycles.items():
                    cores[core_result.core]["engine_busy_cycles"][engine] += busy
    for entry in cores.values():
        entry["idle_cycles"] = max(0.0, total - entry["busy_cycles"])
    return dict(sorted(cores.items()))


def _ddr(records: list[CallRecord], timing: ProgramTiming, capacity: float,
         clock_mhz: float, dram: str) -> dict[str, Any]:
    """DDR (the ``dram`` level's) bytes, average utilisation, and utilisation over time in
    equal windows."""
    read = sum(r.result.bytes_read.get(dram, 0) for r in records)
    written = sum(r.result.bytes_written.get(dram, 0) for r in records)
    total = timing.cycles
    gbps = clock_mhz * 1e-3  # bytes/cycle -> GB/s
    windows = []
    if total > 0:
        edges = [total * k / DDR_WINDOWS for k in range(DDR_WINDOWS + 1)]
        for lo, hi in pairwise(edges):
            moved = _integral(timing.ddr_samples, lo, hi)
            rate = moved / (hi - lo)
            windows.append({"start_cycle": lo, "end_cycle": hi, "gbps": rate * gbps,
                            "utilisation": rate / capacity})
    return {"bytes_read": read, "bytes_written": written, "bytes": read + written,
            "achievable_gbps": capacity * gbps,
            "achieved_gbps": (read + written) / total * gbps if total else 0.0,
            "utilisation": (read + written) / (total * capacity) if total else 0.0,
            "over_time": windows}


def _integral(samples: list[tuple[float, float]], lo: float, hi: float) -> float:
    """The integral over [lo, hi) of the step function given by (cycle, value) samples."""
    area = 0.0
    for (at, value), (following, _) in pairwise([*samples, (math.inf, 0.0)]):
        start, end = max(at, lo), min(following, hi)
        if end > start:
            area += value * (end - start)
    return area


def _bounds(config, records: list[CallRecord], graph: Dependencies,
            timing: ProgramTiming) -> dict[str, float]:
    """Lower bounds on the program's cycles, each from one resource or constraint alone."""
    alone = {r.index: _timing(r.result).roofline_cycles if r.result.length else 0.0
             for r in records}
    bounds: dict[str, float] = {}
    for region in config.shared_regions:
        moved = sum(r.result.bytes_read.get(region.name, 0)
                    + r.result.bytes_written.get(region.name, 0) for r in records)
        if not moved and region.kind != "dram":
            continue
        bounds[region.label] = moved / config.bytes_per_cycle(region.bandwidth_gbps)
    per_core: dict[int, float] = {}
    for record in records:
        for core in record.cores:
            per_core[core] = per_core.get(core, 0.0) + alone[record.index]
    bounds["calls on the busiest core"] = max(per_core.values(), default=0.0)
    finish: dict[Node, float] = {}
    for node in graph.order:
        start = max((finish[dep] for dep, _ in graph.deps[node]), default=0.0)
        finish[node] = start + (alone[node[1]] if node[0] == "call" else 0.0)
    bounds["longest dependency chain"] = max(finish.values(), default=0.0)
    return bounds


def _timing(result: RunResult) -> Timing:
    """The model's record of one call of a program (a program's calls always keep it)."""
    assert result.timing is not None, f"call of {result.operator} kept no timing"
    return result.timing


def _critical_path(records: list[CallRecord]) -> list[dict[str, Any]]:
    """The chain of calls that ends last, back to one that waited for nothing, with what
    each waited for."""
    if not records:
        return []
    by_index = {r.index: r for r in records}
    record: CallRecord | None = max(records, key=lambda r: (r.end_cycle, r.index))
    path, seen = [], set()
    while record is not None and record.index not in seen:
        seen.add(record.index)
        if record.waited_for == "cores busy":
            held = ", ".join(map(str, record.cores))
            why = f"cores busy ({held}, held by call {record.cores_held_by})"
        else:
            why = record.waited_for
        path.append({"call": record.index, "operator": record.operator,
                     "stream": record.stream, "start_cycle": record.start_cycle,
                     "end_cycle": record.end_cycle, "waited_for": why,
                     "bound": record.result.bound})
        record = by_index.get(record.after_call) if record.after_call is not None else None
    return path[::-1]
