"""Chrome Trace Event JSON: build from a Timing, write atomically, validate.

Layout of a trace: one process per core with one thread per engine (dma-in, vector,
dma-out), a "call" process holding the launch and barrier slices and the DDR bandwidth
counter, and a top-level ``metadata`` object naming chip, operator, dtype, length,
core_mask and clock. ``ts`` and ``dur`` are cycles / 1000, so Perfetto's nanosecond axis
reads cycles exactly; exact cycles and bytes are in each slice's ``args``.
"""
from __future__ import annotations

import json
import math
import os
import tempfile
from typing import Any, Iterable

from dspsim.sim.errors import ArgumentError
from dspsim.sim.machine import CALL_TRACK, ENGINES, Timing

CALL_PID = 0
TIME_UNIT_NOTE = "ts and dur are cycles/1000: 1 ns on the time axis is 1 core cycle"


def _micro(cycles: int) -> float:
    """cycles/1000 as the double that a viewer multiplying by 1000 turns back into ``cycles``.

    Viewers convert microseconds to integer nanoseconds; k/1000*1000 can land one ulp below
    k and be truncated to k-1, which would make back-to-back slices overlap.
    """
    value = cycles / 1000
    if value * 1000 < cycles:
        value = math.nextafter(value, math.inf)
    return value


def core_pid(core: int) -> int:
    return core + 1


def _thread_order(engine: str) -> tuple[int, int]:
    base, _, sub = engine.partition(".")
    return (ENGINES.index(base) if base in ENGINES else len(ENGINES), int(sub or 0))


def build_trace(timing: Timing, metadata: dict[str, Any], ddr_gbps_per_byte_cycle: float
                ) -> dict[str, Any]:
    """The Chrome trace of one call.

    ``ddr_gbps_per_byte_cycle`` converts the model's bytes/cycle into GB/s for the counter.
    """
    events: list[dict[str, Any]] = []
    chip = metadata.get("chip", "chip")
    events.append({"name": "process_name", "ph": "M", "pid": CALL_PID, "tid": 0,
                   "args": {"name": f"{chip} call"}})
    events.append({"name": "process_sort_index", "ph": "M", "pid": CALL_PID, "tid": 0,
                   "args": {"sort_index": 0}})
    engines_of: dict[int, set[str]] = {}
    for s in timing.slices:
        engines_of.setdefault(s.core, set()).add(s.engine)
    engines_of.pop(CALL_TRACK, None)
    threads = {(CALL_TRACK, "call"): 1}
    events.append({"name": "thread_name", "ph": "M", "pid": CALL_PID, "tid": 1,
                   "args": {"name": "call"}})
    for core in sorted(engines_of):
        pid = core_pid(core)
        events.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                       "args": {"name": f"core {core}"}})
        events.append({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0,
                       "args": {"sort_index": pid}})
        for index, engine in enumerate(sorted(engines_of[core], key=_thread_order), start=1):
            # a thread whose tid equals its pid is shown as the process's main thread
            tid = pid * 1000 + index
            threads[(core, engine)] = tid
            events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                           "args": {"name": engine}})
            events.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid,
                           "args": {"sort_index": tid}})
    for s in timing.slices:
        start, end = round(s.start), round(s.end)
        pid = CALL_PID if s.core == CALL_TRACK else core_pid(s.core)
        events.append({
            "name": s.name, "cat": s.engine.partition(".")[0], "ph": "X",
            "ts": _micro(start), "dur": _micro(end - start), "pid": pid,
            "tid": threads[(s.core, s.engine)],
            "args": {"start_cycle": s.start, "cycles": s.end - s.start, **s.args}})
    for cycle, rate in timing.ddr_samples:
        events.append({"name": "DDR bandwidth", "ph": "C", "ts": _micro(round(cycle)),
                       "pid": CALL_PID, "tid": 0,
                       "args": {"GB/s": round(rate * ddr_gbps_per_byte_cycle, 6)}})
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "metadata": {**metadata, "time_unit": TIME_UNIT_NOTE,
                     "total_cycles": timing.cycles,
                     "roofline_terms": dict(timing.roofline_terms),
                     "bound": timing.bound if timing.roofline_terms else None},
    }


def trace_bytes(trace: dict[str, Any]) -> bytes:
    """The trace serialised deterministically."""
    return json.dumps(trace, sort_keys=True, separators=(",", ":")).encode("utf-8")


def write_trace(trace: dict[str, Any], path: str | os.PathLike) -> str:
    """Write ``trace`` to ``path`` atomically (a temporary file, then a rename)."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".trace-", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise ArgumentError(f"cannot write trace to {path}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(trace_bytes(trace))
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def load_trace(path: str | os.PathLike) -> dict[str, Any]:
    """Read a trace file; a clear error if it is not a Chrome trace object."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except OSError as exc:
        raise ArgumentError(f"cannot read trace {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ArgumentError(f"{path} is not JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise ArgumentError(f"{path} is not a Chrome trace: no traceEvents list")
    return data


_REQUIRED = {"X": ("name", "ph", "ts", "dur", "pid", "tid"), "C": ("name", "ph", "ts", "pid"),
             # flow arrows (a program's events, from record to wait)
             "s": ("name", "ph", "ts", "pid", "tid", "id"),
             "f": ("name", "ph", "ts", "pid", "tid", "id"),
             "M": ("name", "ph", "pid", "args")}


def _viewer_ns(microseconds: float) -> int:
    return int(microseconds * 1000)  # what a viewer truncating to integer ns sees


def validate_trace(trace: dict[str, Any]) -> list[str]:
    """Problems with a trace: missing fields, negative durations, partially overlapping
    slices on one thread (which Perfetto would drop). An empty list means valid."""
    problems: list[str] = []
    events: Iterable = trace.get("traceEvents", []) if isinstance(trace, dict) else []
    if not isinstance(trace, dict) or "traceEvents" not in trace:
        return ["not a trace object: no traceEvents"]
    by_thread: dict[tuple, list[tuple[int, int, str]]] = {}
    for index, event in enumerate(events):
        if not isinstance(event, dict):
            problems.append(f"event {index} is not an object")
            continue
        phase = event.get("ph")
        if phase not in _REQUIRED:
            problems.append(f"event {index} has unsupported phase {phase!r}")
            continue
        missing = [k for k in _REQUIRED[phase] if k not in event]
        if missing:
            problems.append(f"event {index} ({event.get('name')!r}) lacks {', '.join(missing)}")
            continue
        if phase == "X":
            if not (isinstance(event["dur"], (int, float)) and event["dur"] >= 0):
                problems.append(f"event {index} ({event['name']!r}) has negative or "
                                f"non-numeric dur {event['dur']!r}")
                continue
            start = _viewer_ns(event["ts"])
            end = start + _viewer_ns(event["dur"])
            by_thread.setdefault((event["pid"], event["tid"]), []).append(
                (start, end, event["name"]))
        if phase in ("X", "C", "s", "f") and not (isinstance(event["ts"], (int, float)) and event["ts"] >= 0):
            problems.append(f"event {index} ({event['name']!r}) has bad ts {event['ts']!r}")
    for (pid, tid), slices in by_thread.items():
        slices.sort(key=lambda s: (s[0], -s[1]))
        open_ends: list[tuple[int, str]] = []
        for start, end, name in slices:
            while open_ends and open_ends[-1][0] <= start:
                open_ends.pop()
            if open_ends and end > open_ends[-1][0]:
                problems.append(f"pid {pid} tid {tid}: slice {name!r} [{start}, {end}) ns "
                                f"partially overlaps {open_ends[-1][1]!r} ending at "
                                f"{open_ends[-1][0]}")
            open_ends.append((end, name))
    return problems
