"""Checks of a Chrome trace dict as a viewer will read it: required fields, non-negative
durations, no partial overlap of slices on one thread, and no flow that ends before it
starts (Perfetto silently drops both)."""
from __future__ import annotations

import math
from typing import Any

_REQUIRED = {"X": ("name", "ph", "ts", "dur", "pid", "tid"), "C": ("name", "ph", "ts", "pid"),
             "M": ("name", "ph", "pid", "args"), "s": ("ph", "ts", "pid", "tid", "id"),
             "f": ("ph", "ts", "pid", "tid", "id"), "i": ("name", "ph", "ts", "pid", "tid")}


def _viewer_ns(microseconds: float) -> int:
    return int(microseconds * 1000)  # what a viewer truncating to integer ns sees


def _is_number(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def validate_trace(trace: dict[str, Any]) -> list[str]:
    """Problems with a Chrome trace: missing fields, negative durations, partially
    overlapping slices on one thread, flows without both ends or ending before they start
    (Perfetto would drop those slices and flows: it reads events in time order). Empty
    means valid."""
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        return ["not a trace object: no traceEvents list"]
    problems: list[str] = []
    by_thread: dict[tuple, list[tuple[int, int, str]]] = {}
    flow_ends: dict[tuple[str, Any], list[int]] = {}  # (phase, id) -> its instants (ns)
    for index, event in enumerate(trace["traceEvents"]):
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
        if phase != "M" and not (_is_number(event["ts"]) and event["ts"] >= 0):
            problems.append(f"event {index} ({event.get('name')!r}) has bad ts {event['ts']!r}")
            continue
        if phase in ("s", "f"):
            if not isinstance(event["id"], (str, int)) or isinstance(event["id"], bool):
                problems.append(f"event {index} is a flow with bad id {event['id']!r}")
                continue
            flow_ends.setdefault((phase, event["id"]), []).append(_viewer_ns(event["ts"]))
        if phase == "X":
            if not (_is_number(event["dur"]) and event["dur"] >= 0):
                problems.append(f"event {index} ({event['name']!r}) has negative or "
                                f"non-numeric dur {event['dur']!r}")
                continue
            start = _viewer_ns(event["ts"])
            end = start + _viewer_ns(event["dur"])
            by_thread.setdefault((str(event["pid"]), str(event["tid"])), []).append(
                (start, end, event["name"]))
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
    return problems + _flow_problems(flow_ends)


def _flow_problems(flow_ends: dict[tuple[str, Any], list[int]]) -> list[str]:
    """Flows that a viewer reading in time order would drop: an end without its start (or
    the other way round), or an end before its start."""
    problems = []
    for flow in sorted({key[1] for key in flow_ends}, key=str):
        starts, ends = flow_ends.get(("s", flow), []), flow_ends.get(("f", flow), [])
        if len(starts) != 1 or len(ends) != 1:
            problems.append(f"flow {flow!r} has {len(starts)} start(s) and {len(ends)} "
                            f"end(s), not one of each")
        elif ends[0] < starts[0]:
            problems.append(f"flow {flow!r} ends at {ends[0]} ns, before it starts at "
                            f"{starts[0]} ns")
    return problems
