"""The Chrome trace of a whole program, in the conventions of :mod:`dspsim.traces.formats`.

* one process per core, one thread per engine (``dma-in``, ``vector``, ``dma-out``, or
  ``dma-in.0``... per operand); on each engine thread every call that ran on the core is a
  parent slice, with that engine's tile slices nested under it;
* a program process with one thread per stream (its calls, with their launch and barrier
  nested; a zero-length ``record`` slice where each event completed; a ``wait`` slice from
  when the stream reached a wait until the event released it), and the "DDR bandwidth"
  counter of the whole chip;
* flow arrows from each event's record to each wait it released.

``ts``/``dur`` are cycles/1000 (1 ns on Perfetto's axis is 1 cycle); exact cycles are in
``args``. Parent and record slices carry ``program_slice`` in their args, so that trace readers that
count engine activity can tell them from tiles.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from dspsim.sim.engine.model import CALL_TRACK, ENGINES

if TYPE_CHECKING:
    from dspsim.programs.result import ProgramResult

PROGRAM_PID = 0
TIME_UNIT_NOTE = "ts and dur are cycles/1000: 1 ns on the time axis is 1 core cycle"


def _micro(cycles: int) -> float:
    """cycles/1000 as a double that a viewer multiplying by 1000 reads back as ``cycles``."""
    value = cycles / 1000
    if value * 1000 < cycles:
        value = math.nextafter(value, math.inf)
    return value


def _thread_order(engine: str) -> tuple[int, int]:
    base, _, sub = engine.partition(".")
    return (ENGINES.index(base) if base in ENGINES else len(ENGINES), int(sub or 0))


def _slice(name: str, start: float, end: float, pid: int, tid: int, cat: str,
           args: dict[str, Any]) -> dict[str, Any]:
    first, last = round(start), round(end)
    return {"name": name, "cat": cat, "ph": "X", "ts": _micro(first),
            "dur": _micro(last - first), "pid": pid, "tid": tid,
            "args": {"start_cycle": start, "cycles": end - start, **args}}


def _meta(kind: str, pid: int, tid: int, value: Any) -> dict[str, Any]:
    key = "name" if kind.endswith("_name") else "sort_index"
    return {"name": kind, "ph": "M", "pid": pid, "tid": tid, "args": {key: value}}


def build_program_trace(result: "ProgramResult") -> dict[str, Any]:
    """The Chrome trace of ``result`` (see the module docstring)."""
    events: list[dict[str, Any]] = [_meta("process_name", PROGRAM_PID, 0,
                                          f"{result.chip} program"),
                                    _meta("process_sort_index", PROGRAM_PID, 0, 0)]
    stream_tid = {name: k + 1 for k, name in enumerate(result.streams)}
    for name, tid in stream_tid.items():
        events += [_meta("thread_name", PROGRAM_PID, tid, f"stream {name}"),
                   _meta("thread_sort_index", PROGRAM_PID, tid, tid)]
    # every call's slices, in timeline cycles
    per_call = {c.index: c.result.timing.slice_log.slices(0.0)
                if c.result.timing.slice_log is not None else [] for c in result.calls}
    engines: dict[int, set[str]] = {}
    for record in result.calls:
        for core in record.cores:
            engines.setdefault(core, set())
        for s in per_call[record.index]:
            if s.core != CALL_TRACK:
                engines.setdefault(s.core, set()).add(s.engine)
    threads: dict[tuple[int, str], int] = {}
    for core in sorted(engines):
        pid = core + 1
        events += [_meta("process_name", pid, 0, f"core {core}"),
                   _meta("process_sort_index", pid, 0, pid)]
        for k, engine in enumerate(sorted(engines[core] or {"vector"}, key=_thread_order), 1):
            tid = threads[(core, engine)] = pid * 1000 + k
            events += [_meta("thread_name", pid, tid, engine),
                       _meta("thread_sort_index", pid, tid, tid)]
    for record in result.calls:
        about = {"program_slice": True, "call": record.index, "stream": record.stream,
                 "cores": list(record.cores), "waited_for": record.waited_for,
                 "ready_cycle": record.ready_cycle}
        events.append(_slice(record.operator, record.start_cycle, record.end_cycle,
                             PROGRAM_PID, stream_tid[record.stream], "call", about))
        for core in record.cores:
            for (owner, engine), tid in threads.items():
                if owner == core:
                    events.append(_slice(record.operator, record.start_cycle,
                                         record.end_cycle, core + 1, tid, "call", about))
        for s in per_call[record.index]:
            if s.core == CALL_TRACK:
                events.append(_slice(s.name, s.start, s.end, PROGRAM_PID,
                                     stream_tid[record.stream], "call",
                                     {**s.args, "call": record.index}))
            else:
                events.append(_slice(s.name, s.start, s.end, s.core + 1,
                                     threads[(s.core, s.engine)], s.engine.partition(".")[0],
                                     {**s.args, "call": record.index}))
    events += _flows(result, stream_tid)
    gbps = result.clock_mhz * 1e-3
    samples = result.timing.ddr_samples if result.timing is not None else []
    for cycle, rate in samples:
        events.append({"name": "DDR bandwidth", "ph": "C", "ts": _micro(round(cycle)),
                       "pid": PROGRAM_PID, "tid": 0, "args": {"GB/s": round(rate * gbps, 6)}})
    return {"traceEvents": events, "displayTimeUnit": "ns", "metadata": _metadata(result)}


def _flows(result: "ProgramResult", stream_tid: dict[str, int]) -> list[dict[str, Any]]:
    """A ``record`` slice where each event completed, a ``wait`` slice on each waiting
    stream from when it reached the wait until the event released it, and a flow arrow
    from the record to the release.

    The record and wait slices sit on whole cycles, and each arrow's ends on those same
    cycles, so that a reader binding an arrow to the slice enclosing its instant (as
    Chrome and dspsim's own trace reader do) finds them.
    """
    events: list[dict[str, Any]] = []
    flow_id = 0
    for event in result.events:
        if event.get("cycle") is None:
            continue
        tid = stream_tid[event["recorded_on"]]
        recorded = round(event["cycle"])
        marker = {"event": event["event"], "program_slice": True}
        events.append(_slice(f"record {event['event']}", recorded, recorded, PROGRAM_PID, tid,
                             "event", marker))
        for wait in event["waits"]:
            flow_id += 1
            waiting = stream_tid[wait["stream"]]
            reached = round(wait["reached_cycle"])
            released = max(reached, round(wait["released_cycle"]))
            events.append(_slice(f"wait {event['event']}", reached, released, PROGRAM_PID,
                                 waiting, "event", {**marker, "releases_call": wait["call"]}))
            common = {"name": f"event {event['event']}", "cat": "event", "id": flow_id,
                      "pid": PROGRAM_PID}
            events.append({**common, "ph": "s", "ts": _micro(recorded), "tid": tid})
            events.append({**common, "ph": "f", "bp": "e", "ts": _micro(released),
                           "tid": waiting})
    return events


def _metadata(result: "ProgramResult") -> dict[str, Any]:
    """What trace readers need: chip, clock, totals, bounds, DDR figures, the calls."""
    return {
        "chip": result.chip, "operator": f"program of {len(result.calls)} calls",
        "dtype": ", ".join(sorted({c.result.dtype for c in result.calls})),
        "length": sum(c.result.length for c in result.calls), "core_mask": None,
        "clock_mhz": result.clock_mhz, "fidelity": result.fidelity,
        "streams": list(result.streams), "time_unit": TIME_UNIT_NOTE,
        "total_cycles": result.timing.cycles if result.timing else float(result.cycles),
        "roofline_terms": dict(result.bounds), "bound": result.bound,
        "ddr_peak_gbps": result.calls[0].result.ddr_peak_gbps if result.calls else 0.0,
        "ddr_achievable_gbps": result.ddr["achievable_gbps"],
        "program": [{"call": c.index, "operator": c.operator, "stream": c.stream,
                     "cores": list(c.cores), "start_cycle": c.start_cycle,
                     "end_cycle": c.end_cycle, "waited_for": c.waited_for}
                    for c in result.calls],
    }
