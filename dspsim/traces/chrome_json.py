"""Chrome Trace Event JSON (chrome://tracing, Perfetto's JSON importer) to and from the
format-neutral :class:`~dspsim.traces.model.TraceModel`.

A group becomes a process, a slice track a thread, a counter track ``"C"`` events, a flow
an ``"s"``/``"f"`` pair. ``ts`` and ``dur`` are cycles/1000 (microseconds to the viewer) so
that its nanosecond axis reads cycles; the exact cycles are in each slice's ``args``
(``start_cycle``, ``cycles``), which the reader prefers to the rounded times.
"""
from __future__ import annotations

import json
import math
from typing import Any

from dspsim.sim.errors import ArgumentError
from dspsim.traces.model import (
    MAX_CYCLES,
    CounterSample,
    Flow,
    TraceModel,
    Track,
    TrackSlice,
    check_plain,
    check_text,
    finite_number,
)

#: The args keys that carry a slice's exact times.
EXACT_KEYS = ("start_cycle", "cycles")


def micro(cycles: int) -> float:
    """cycles/1000 as the double that a viewer multiplying by 1000 turns back into ``cycles``.

    Viewers convert microseconds to integer nanoseconds; k/1000*1000 can land one ulp below
    k and be truncated to k-1, which would make back-to-back slices overlap.
    """
    value = cycles / 1000
    if value * 1000 < cycles:
        value = math.nextafter(value, math.inf)
    return value


def _process_ids(model: TraceModel) -> dict[str, int]:
    """A pid per group: the one its tracks carry, else the next unused number."""
    pids: dict[str, int] = {}
    for track in model.tracks:
        if track.ids is not None and track.group not in pids:
            pids[track.group] = track.ids[0]
    used = set(pids.values())
    candidate = 0
    for group in model.groups():
        if group not in pids:
            while candidate in used:
                candidate += 1
            pids[group] = candidate
            used.add(candidate)
    return pids


def chrome_from_model(model: TraceModel) -> dict[str, Any]:
    """The Chrome trace dict of ``model`` (``traceEvents``, ``displayTimeUnit``, ``metadata``)."""
    events: list[dict[str, Any]] = []
    pids = _process_ids(model)
    tids: dict[int, int] = {}
    for order, group in enumerate(model.groups()):
        pid = pids[group]
        events.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                       "args": {"name": group}})
        events.append({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0,
                       "args": {"sort_index": order}})
        rank = 0
        for index, track in enumerate(model.tracks):
            if track.group != group or track.kind != "slices":
                continue
            rank += 1
            # a thread whose tid equals its pid is shown as the process's main thread
            tid = track.ids[1] if track.ids else pid * 1000 + rank
            tids[index] = tid
            events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                           "args": {"name": track.name}})
            events.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid,
                           "args": {"sort_index": rank}})
    spans = model.integer_spans()
    for piece, (start, end) in zip(model.slices, spans, strict=True):
        track = model.tracks[piece.track]
        events.append({
            "name": piece.name, "cat": piece.category, "ph": "X", "ts": micro(start),
            "dur": micro(end - start), "pid": pids[track.group], "tid": tids[piece.track],
            "args": {"start_cycle": piece.start, "cycles": round(piece.end - piece.start, 6),
                     **piece.args}})
    for sample in model.samples:
        track = model.tracks[sample.track]
        events.append({"name": track.name, "ph": "C", "ts": micro(round(sample.at)),
                       "pid": pids[track.group], "tid": 0,
                       "args": {track.unit or "value": sample.value}})
    for flow in model.flows:
        for phase, index in (("s", flow.source), ("f", flow.target)):
            piece = model.slices[index]
            # the middle of the slice: inside it and, where a zero-length slice (an
            # event's record) starts as it starts, in no other slice of its thread
            middle = (spans[index][0] + spans[index][1]) // 2
            event = {"name": "flow", "cat": "flow", "ph": phase, "id": flow.id,
                     "ts": micro(middle), "pid": pids[model.tracks[piece.track].group],
                     "tid": tids[piece.track]}
            if phase == "f":
                event["bp"] = "e"  # bind to the slice that encloses ts, as "s" does
            events.append(event)
    return {"traceEvents": events, "displayTimeUnit": "ns", "metadata": model.metadata}


def trace_bytes(trace: dict[str, Any]) -> bytes:
    """The trace serialised deterministically."""
    return json.dumps(trace, sort_keys=True, separators=(",", ":")).encode("utf-8")


def parse_json(data: bytes, where: str) -> Any:
    """JSON text as Python data; an ArgumentError for anything that is not JSON."""
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ArgumentError(f"{where} is neither JSON text nor a Perfetto protobuf trace"
                            ) from None
    except RecursionError:
        raise ArgumentError(f"{where}: JSON nested too deeply to be a trace") from None
    except ValueError as exc:  # JSONDecodeError, and integers of more digits than allowed
        raise ArgumentError(f"{where} is not valid JSON: {str(exc)[:120]}") from None


# ----------------------------------------------------------------------------- reading
def _ident(value: Any, what: str) -> int | str:
    if isinstance(value, str):
        return check_text(value, what)
    if (isinstance(value, int) and not isinstance(value, bool)
                                  and -2 ** 63 <= value < 2 ** 63):
        return value
    raise ValueError(f"{what} is {value!r:.40}, not an integer or text")


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} is {value!r:.40}, not text")
    return check_text(value, what)


def _args(event: dict, what: str) -> dict[str, Any]:
    args = event.get("args", {})
    if not isinstance(args, dict):
        raise ValueError(f"{what}: args is not an object")
    check_plain(args, f"{what} args")
    return args


def _sort_key(value) -> tuple:
    return (0, value, "") if isinstance(value, (int, float)) else (1, 0, str(value))


def model_from_chrome(data: Any, where: str = "trace") -> TraceModel:
    """The model of a Chrome trace dict; an ArgumentError naming the first bad event."""
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise ArgumentError(f"{where} is not a Chrome trace: no traceEvents list")
    metadata = data.get("metadata", {})
    try:
        if not isinstance(metadata, dict):
            raise ValueError("metadata is not an object")
        check_plain(metadata, "metadata")
        return _read_events(data["traceEvents"], dict(metadata))
    except ValueError as exc:
        raise ArgumentError(f"{where}: {exc}; is this a trace dspsim wrote?") from None


#: a Chrome process or thread id: a number, or text in traces of other tools
Ident = int | str
#: where a flow arrow ends: pid, tid, the time, and whether it binds to the enclosing slice
FlowEnd = tuple[Ident, Ident, float, bool]


def _read_events(events: list, metadata: dict) -> TraceModel:
    # pid, or (pid, tid) -> (name, sort index); either may be missing
    processes: dict[Ident, tuple[str | None, float | None]] = {}
    threads: dict[tuple[Ident, Ident], tuple[str | None, float | None]] = {}
    for index, event in enumerate(events):
        if not isinstance(event, dict):
            raise ValueError(f"event {index} is not an object")
        if event.get("ph") != "M":
            continue
        what = f"event {index}"
        pid = _ident(event.get("pid"), f"{what} pid")
        args = _args(event, what)
        kind = event.get("name")
        if kind == "process_name":
            name = _text(args.get("name"), f"{what} name")
            processes[pid] = (name, processes.get(pid, (None, None))[1])
        elif kind == "process_sort_index":
            rank = finite_number(args.get("sort_index"), f"{what} sort_index", -MAX_CYCLES)
            processes[pid] = (processes.get(pid, (None, None))[0], rank)
        elif kind in ("thread_name", "thread_sort_index"):
            key = (pid, _ident(event.get("tid"), f"{what} tid"))
            thread_name, thread_rank = threads.get(key, (None, None))
            if kind == "thread_name":
                thread_name = _text(args.get("name"), f"{what} name")
            else:
                thread_rank = finite_number(args.get("sort_index"), f"{what} sort_index",
                                            -MAX_CYCLES)
            threads[key] = (thread_name, thread_rank)

    # (pid, tid), name, category, start, end, args
    raw_slices: list[tuple[tuple[Ident, Ident], str, str, float, float, dict[str, Any]]] = []
    raw_samples: list[tuple[Ident, str, str, float, float]] = []  # pid, track, unit, at, value
    flow_ends: dict[Ident, dict[str, FlowEnd]] = {}
    for index, event in enumerate(events):
        phase = event.get("ph")
        what = f"event {index} ({phase!r:.10})"
        if phase in ("X", "i", "I"):
            pid = _ident(event.get("pid"), f"{what} pid")
            tid = _ident(event.get("tid"), f"{what} tid")
            name = _text(event.get("name"), f"{what} name")
            category = event.get("cat", "")
            category = _text(category, f"{what} cat")
            args = _args(event, what)
            if all(k in args for k in EXACT_KEYS):
                start = finite_number(args["start_cycle"], f"{what} start_cycle")
                cycles = finite_number(args["cycles"], f"{what} cycles")
            else:
                start = finite_number(event.get("ts"), f"{what} ts", 0, MAX_CYCLES / 1000) * 1000
                duration = event.get("dur", 0) if phase == "X" else 0
                cycles = finite_number(duration, f"{what} dur", 0, MAX_CYCLES / 1000) * 1000
            if start + cycles > MAX_CYCLES:
                raise ValueError(f"{what} ends after {MAX_CYCLES:g} cycles")
            rest = {k: v for k, v in args.items() if k not in EXACT_KEYS}
            raw_slices.append(((pid, tid), name, category, start, start + cycles, rest))
        elif phase == "C":
            pid = _ident(event.get("pid"), f"{what} pid")
            name = _text(event.get("name"), f"{what} name")
            at = finite_number(event.get("ts"), f"{what} ts", 0, MAX_CYCLES / 1000) * 1000
            args = _args(event, what)
            if not args:
                raise ValueError(f"{what} is a counter event without a value (its args are "
                                 f"empty)")
            for unit, given in args.items():
                value = finite_number(given, f"{what} {unit}", -MAX_CYCLES)
                track = name if len(args) == 1 else f"{name} {unit}"
                raw_samples.append((pid, track, unit, at, value))
        elif phase in ("s", "f"):
            flow_id = _ident(event.get("id"), f"{what} id")
            where: FlowEnd = (
                _ident(event.get("pid"), f"{what} pid"), _ident(event.get("tid"), f"{what} tid"),
                finite_number(event.get("ts"), f"{what} ts", 0, MAX_CYCLES / 1000) * 1000,
                event.get("bp") == "e")
            flow_ends.setdefault(flow_id, {})[phase] = where

    model = TraceModel(metadata=metadata)

    def group_of(pid: Ident) -> str:
        name = processes.get(pid, (None, None))[0]
        return name if name else f"process {pid}"

    def process_rank(pid: Ident) -> tuple:
        rank = processes.get(pid, (None, None))[1]
        return (0, rank, _sort_key(pid)) if rank is not None else (1, 0, _sort_key(pid))

    thread_keys = sorted({key for key, *_ in raw_slices},
                         key=lambda k: (process_rank(k[0]), _thread_rank(threads, k)))
    pids = sorted({k[0] for k in thread_keys} | {s[0] for s in raw_samples}, key=process_rank)
    track_of: dict[tuple[Ident, Ident], int] = {}  # (pid, tid) or (pid, counter name)
    for pid in pids:  # a process's threads, then its counters
        for thread in thread_keys:
            if thread[0] == pid:
                label = threads.get(thread, (None, None))[0] or f"thread {thread[1]}"
                ids = ((thread[0], thread[1])
                       if isinstance(thread[0], int) and isinstance(thread[1], int) else None)
                track_of[thread] = model.add_track(Track(group_of(pid), label, ids=ids))
        for sample_pid, track, unit, _, _ in raw_samples:
            if sample_pid == pid and (pid, track) not in track_of:
                track_of[(pid, track)] = model.add_track(
                    Track(group_of(pid), track, "counter", unit))
    for key, name, category, start, end, args in raw_slices:
        model.slices.append(TrackSlice(track_of[key], name, category, start, end, args))
    for pid, name, _, at, value in sorted(raw_samples, key=lambda s: s[3]):
        model.samples.append(CounterSample(track_of[(pid, name)], at, value))
    model.flows = _bind_flows(model, track_of, flow_ends)
    return model


def _thread_rank(threads, key) -> tuple:
    rank = threads.get(key, (None, None))[1]
    return (0, rank, _sort_key(key[1])) if rank is not None else (1, 0, _sort_key(key[1]))


def _bind_flows(model: TraceModel, track_of: dict[tuple[Ident, Ident], int],
                flow_ends: dict[Ident, dict[str, FlowEnd]]) -> list[Flow]:
    """Flow arrows bound to slices as Chrome binds them: ``s`` and ``f`` with ``bp: e`` to
    the innermost slice enclosing their time, other ``f`` to the next slice that starts."""
    by_track: dict[int, list[int]] = {}
    for index, piece in enumerate(model.slices):
        by_track.setdefault(piece.track, []).append(index)

    def bind(pid: Ident, tid: Ident, at: float, enclosing: bool) -> int | None:
        candidates = by_track.get(track_of.get((pid, tid), -1), [])
        inside = [i for i in candidates if model.slices[i].start <= at <= model.slices[i].end]
        after = [i for i in candidates if model.slices[i].start >= at]
        innermost = (max(inside, key=lambda i: (model.slices[i].start, -model.slices[i].end))
                     if inside else None)
        following = min(after, key=lambda i: model.slices[i].start) if after else None
        if enclosing:
            return innermost if innermost is not None else following
        return following if following is not None else innermost

    flows = []
    for number, ends in enumerate(flow_ends.values(), start=1):
        if "s" not in ends or "f" not in ends:
            continue
        source = bind(*ends["s"][:3], True)
        target = bind(*ends["f"])
        if source is not None and target is not None:
            flows.append(Flow(number, source, target))
    return flows
