"""The one trace builder: a call's or a program's timeline as a :class:`TraceModel`.

Both kinds share the layout, the engine order and the time unit:

* a first group with the timeline's own tracks: ``<CHIP> call`` holds the ``call`` track
  (launch and barrier slices); ``<CHIP> program`` holds one ``stream NAME`` track per
  stream (each call, its launch and barrier nested, a zero-length ``record`` slice where
  an event completed, a ``wait`` slice from when a stream reached a wait until the event
  released it); either holds the ``DDR bandwidth`` counter (GB/s in use);
* then one group per core (``core N``), one track per engine (``dma-in``, ``vector``,
  ``dma-out``; ``dma-in.0``, ``dma-in.1``… when a core has several engines per direction)
  in that order. In a program every call that ran on the core is a parent slice on each of
  its engine tracks, with that engine's tile slices nested under it; parent, record and
  wait slices carry ``program_slice`` in their args, so that readers counting engine
  activity can tell them from tiles;
* flows from each event's record slice to each wait it released, from each call to the
  next on its stream, and from each call to every call that read what it wrote;
* counters for every shared resource: DDR (the model's own rates), shared SRAM, each DMA
  pool's engines busy (per controller group of a shared pool; a core's own engines in its
  group) and each core's L2 port (see :func:`_resource_counters`).

Cycle counts (slice times and args) keep hundredths of a cycle (:data:`CYCLE_DECIMALS`).

Times stay cycles (floats) in the model; the writers (:mod:`dspsim.traces.formats`) turn
them into whole nanoseconds on a viewer's axis, one per cycle.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dspsim.sim.engine.machine import Timing
from dspsim.sim.engine.model import CALL_TRACK, ENGINES, Slice
from dspsim.sim.program.scheduler import ProgramTiming
from dspsim.traces.model import CounterSample, Flow, TraceModel, TrackSlice
from dspsim.traces.usage import RESOURCES, resource_usage

__all__ = ["CALL_PID", "DDR_COUNTER", "TIME_UNIT_NOTE", "core_pid", "engine_order",
           "model_from_program", "model_from_timing"]

#: The Chrome process id of the first group (the call's or the program's own tracks).
CALL_PID = 0
TIME_UNIT_NOTE = ("1 ns on the time axis is 1 core cycle (in JSON, ts and dur are "
                  "cycles/1000 in microseconds)")
DDR_COUNTER = "DDR bandwidth"


def core_pid(core: int) -> int:
    """The Chrome process id of a core's group."""
    return core + 1


def engine_order(engine: str) -> tuple[int, int]:
    """Sort key of an engine track: dma-in, vector, dma-out, then any other; by number."""
    base, _, sub = engine.partition(".")
    return (ENGINES.index(base) if base in ENGINES else len(ENGINES),
            int(sub) if sub.isdigit() else 0)


def _core_tracks(model: TraceModel, engines_of: Mapping[int, set[str]]
                 ) -> dict[tuple[int, str], int]:
    """A group per core, a track per engine in :func:`engine_order`; their indices."""
    tracks = {}
    for core in sorted(engines_of):
        pid = core_pid(core)
        for index, engine in enumerate(sorted(engines_of[core], key=engine_order), start=1):
            # a thread whose tid equals its pid is shown as the process's main thread
            tracks[(core, engine)] = model.track(f"core {core}", engine,
                                                 ids=(pid, pid * 1000 + index))
    return tracks


#: Decimals a cycle count keeps in a trace: the fluid model's hundredths of a cycle are
#: what its times mean; further digits are floating-point noise.
CYCLE_DECIMALS = 2


def cycles(value: float) -> float:
    """A cycle count as a trace keeps it (see :data:`CYCLE_DECIMALS`)."""
    return round(float(value), CYCLE_DECIMALS)


def rounded_args(args: dict[str, Any]) -> dict[str, Any]:
    """Args as a viewer should show them: fractional numbers to hundredths, whole ones as
    integers; text, lists and integers as given."""
    out = {}
    for key, value in args.items():
        if isinstance(value, float):
            value = cycles(value)
            value = int(value) if value.is_integer() else value
        out[key] = value
    return out


def _engine_slice(track: int, piece: Slice, args: dict[str, Any]) -> TrackSlice:
    if "data_cycles" in args:
        # from the grant, both ends rounded: rounding the length on its own may start the
        # data a hundredth before the engine's previous transfer has ended
        granted = cycles(piece.end - args["data_cycles"])
        args["data_cycles"] = cycles(cycles(piece.end) - granted)
    return TrackSlice(track, piece.name, piece.engine.partition(".")[0], cycles(piece.start),
                      cycles(piece.end), rounded_args(args))


def _counter(model: TraceModel, group: str, name: str, unit: str, samples, scale: float,
             decimals: int) -> None:
    track = model.track(group, name, "counter", unit)
    for at, value in samples:
        model.samples.append(CounterSample(track, at, round(value * scale, decimals)))


def _resource_counters(model: TraceModel, gbps_per_byte_cycle: float) -> None:
    """Counters of every shared resource besides DDR (whose counter holds the model's own
    rates): shared SRAM's bandwidth in use and each DMA pool's engines busy in the first
    group, each core's L2 port bandwidth (and its own DMA engines) in the core's group.
    Each transfer adds its mean rate over its data phase (see :mod:`dspsim.traces.usage`)."""
    if not model.metadata.get(RESOURCES):
        return
    usage = resource_usage(model)
    group = model.tracks[0].group
    labels = {r["name"]: r["label"] for r in usage.resources.get("regions", [])}
    for region, step in usage.links.items():
        if region != "ddr":
            _counter(model, group, f"{labels.get(region, region)} bandwidth", "GB/s",
                     step.samples(), gbps_per_byte_cycle, 3)
    for pool, step in usage.pools.items():
        parts = pool.split(" ")
        owner = " ".join(parts[:2]) if parts[0] == "core" and len(parts) > 2 else ""
        if owner:  # a core's own engines: in its group
            _counter(model, owner, "DMA engines busy", "engines", step.samples(), 1.0, 3)
        else:
            _counter(model, group, f"DMA {pool} busy", "engines", step.samples(), 1.0, 3)
    for core, step in sorted(usage.ports.items()):
        _counter(model, f"core {core}", "L2 port bandwidth", "GB/s", step.samples(),
                 gbps_per_byte_cycle, 3)


def _ddr_counter(model: TraceModel, group: str, samples: Sequence[tuple[float, float]],
                 gbps_per_byte_cycle: float) -> None:
    if not samples:
        return
    track = model.track(group, DDR_COUNTER, "counter", "GB/s")
    for cycle, rate in samples:
        model.samples.append(CounterSample(track, cycle, round(rate * gbps_per_byte_cycle, 6)))


def _header(metadata: dict[str, Any], cycles: float, terms: dict[str, float],
            bound: str | None) -> dict[str, Any]:
    return {**metadata, "time_unit": TIME_UNIT_NOTE, "total_cycles": cycles,
            "roofline_terms": dict(terms), "bound": bound}


def model_from_timing(timing: Timing, metadata: dict[str, Any],
                      ddr_gbps_per_byte_cycle: float) -> TraceModel:
    """The trace of one call. ``ddr_gbps_per_byte_cycle`` converts the model's bytes per
    cycle into GB/s for the DDR counter."""
    model = TraceModel(metadata=_header(metadata, timing.cycles, timing.roofline_terms,
                                        timing.bound if timing.roofline_terms else None))
    group = f"{metadata.get('chip', 'chip')} call"
    slices = timing.slices
    engines_of: dict[int, set[str]] = {}
    for piece in slices:
        if piece.core != CALL_TRACK:
            engines_of.setdefault(piece.core, set()).add(piece.engine)
    call_track = model.track(group, "call", ids=(CALL_PID, 1))
    if timing.ddr_samples:
        model.track(group, DDR_COUNTER, "counter", "GB/s")
    tracks = _core_tracks(model, engines_of)
    for piece in slices:
        track = call_track if piece.core == CALL_TRACK else tracks[(piece.core, piece.engine)]
        model.slices.append(_engine_slice(track, piece, dict(piece.args)))
    _ddr_counter(model, group, timing.ddr_samples, ddr_gbps_per_byte_cycle)
    _resource_counters(model, ddr_gbps_per_byte_cycle)
    return model


def model_from_program(timing: ProgramTiming, *, chip: str, streams: Sequence[str],
                       operators: Mapping[int, str], events: Sequence[dict[str, Any]],
                       metadata: dict[str, Any], bounds: dict[str, float], bound: str,
                       ddr_gbps_per_byte_cycle: float,
                       data_dependencies: Sequence[dict[str, Any]] = ()) -> TraceModel:
    """The trace of a program from the model's ProgramTiming.

    ``operators`` names each call by call index; ``events`` are the program result's
    (recording stream, completion cycle, each wait's stream, reached and released cycles
    and the call it released); ``bounds``/``bound`` its lower bounds and the largest;
    ``data_dependencies`` each call that read what an earlier call wrote (``writer``,
    ``reader``, ``operand``). Flows join a stream's consecutive calls and each writer to
    its readers.
    """
    model = TraceModel(metadata=_header(metadata, timing.cycles, bounds, bound))
    group = f"{chip} program"
    stream_track = {name: model.track(group, f"stream {name}", ids=(CALL_PID, k))
                    for k, name in enumerate(streams, start=1)}
    per_call = {c.index: c.timing.slice_log.slices(0.0) if c.timing.slice_log is not None
                else [] for c in timing.calls}
    engines_of: dict[int, set[str]] = {}
    for call in timing.calls:
        for core in call.cores:
            engines_of.setdefault(core, set())
        for piece in per_call[call.index]:
            if piece.core != CALL_TRACK:
                engines_of[piece.core].add(piece.engine)
    tracks = _core_tracks(model, {core: engines or {"vector"}
                                  for core, engines in engines_of.items()})
    if timing.ddr_samples:
        model.track(group, DDR_COUNTER, "counter", "GB/s")
    call_slice: dict[int, int] = {}
    ends: dict[int, dict[str, int]] = {}  # call -> its launch and barrier slices
    for call in timing.calls:
        about = rounded_args({"program_slice": True, "call": call.index, "stream": call.stream,
                              "cores": list(call.cores), "waited_for": call.waited_for,
                              "ready_cycle": call.ready})
        name = operators[call.index]
        start, end = cycles(call.start), cycles(call.end)
        call_slice[call.index] = len(model.slices)
        model.slices.append(TrackSlice(stream_track[call.stream], name, "call", start, end,
                                       dict(about)))
        for (core, _engine), track in tracks.items():
            if core in call.cores:
                model.slices.append(TrackSlice(track, name, "call", start, end, dict(about)))
        for piece in per_call[call.index]:
            track = (stream_track[call.stream] if piece.core == CALL_TRACK
                     else tracks[(piece.core, piece.engine)])
            if piece.core == CALL_TRACK:
                ends.setdefault(call.index, {})[piece.name] = len(model.slices)
            model.slices.append(_engine_slice(track, piece, {**piece.args,
                                                             "call": call.index}))
    def entry(call: int) -> int:
        """Where an arrow enters a call: its launch slice (its own slice if it has none)."""
        return ends.get(call, {}).get("launch", call_slice[call])

    _event_flows(model, events, stream_track, entry)
    _call_flows(model, timing, call_slice, ends, data_dependencies)
    _ddr_counter(model, group, timing.ddr_samples, ddr_gbps_per_byte_cycle)
    _resource_counters(model, ddr_gbps_per_byte_cycle)
    return model


def _call_flows(model: TraceModel, timing: ProgramTiming, call_slice: Mapping[int, int],
                ends: Mapping[int, Mapping[str, int]],
                data_dependencies: Sequence[dict[str, Any]]) -> None:
    """Flows between calls on their stream tracks: from each call to the next on its
    stream (stream order), and from each call to every call that read what it wrote
    (data). An arrow leaves the earlier call's barrier and enters the later call's launch
    (the call's own slice when it has none, at length 0): the slices where one ends and the
    other begins, and those a reader binding a flow to the innermost slice at its instant
    finds."""
    def arrow(source: int, target: int) -> None:
        start = ends.get(source, {}).get("barrier", call_slice[source])
        end = ends.get(target, {}).get("launch", call_slice[target])
        model.flows.append(Flow(len(model.flows) + 1, start, end))

    previous: dict[str, int] = {}
    for call in sorted(timing.calls, key=lambda c: c.index):
        if call.stream in previous:
            arrow(previous[call.stream], call.index)
        previous[call.stream] = call.index
    for dependency in data_dependencies:
        arrow(dependency["writer"], dependency["reader"])


def _event_flows(model: TraceModel, events: Sequence[dict[str, Any]],
                 stream_track: dict[str, int], entry: Callable[[int], int]) -> None:
    """A ``record`` slice where each event completed, a ``wait`` slice on each waiting
    stream from when it reached the wait until the event released it, and a flow from the
    record to the launch of the call each wait released (``entry(call)``), or to a wait at
    a stream's end that did not block.

    The arrow enters the released call, not the wait: a wait that blocked began before
    the record, and a viewer reading events in time order (Perfetto) meets a flow ending
    there before the flow begins, and drops it. The released call begins no earlier than
    the record. Record and wait slices sit on whole cycles, so that a reader binding a
    flow's end to the slice enclosing its instant (as Chrome and dspsim's own reader do)
    finds them.
    """
    for event in events:
        if event.get("cycle") is None:
            continue
        recorded = round(event["cycle"])
        marker = {"event": event["event"], "program_slice": True}
        model.slices.append(TrackSlice(stream_track[event["recorded_on"]],
                                       f"record {event['event']}", "event", recorded,
                                       recorded, dict(marker)))
        source = len(model.slices) - 1
        for wait in event["waits"]:
            reached = round(wait["reached_cycle"])
            released = max(reached, round(wait["released_cycle"]))
            model.slices.append(TrackSlice(stream_track[wait["stream"]],
                                           f"wait {event['event']}", "event", reached,
                                           released, {**marker,
                                                      "releases_call": wait["call"]}))
            if wait["call"] is not None:
                model.flows.append(Flow(len(model.flows) + 1, source, entry(wait["call"])))
            elif reached >= recorded:  # a wait at a stream's end takes the arrow itself,
                # unless it blocked: it would end before it began, and no viewer draws it
                model.flows.append(Flow(len(model.flows) + 1, source, len(model.slices) - 1))
