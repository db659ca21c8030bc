"""Perfetto's native protobuf trace to and from :class:`~dspsim.traces.model.TraceModel`.

Each group is a track with its tracks beneath it, in the model's order (explicit ranks, so
the call and its DDR counter come first and cores follow in number order). Names are the
model's own: unlike JSON, Perfetto appends no pid or tid. Slices are begin/end events at
whole cycles (:meth:`TraceModel.integer_spans`; one nanosecond on the axis is one cycle),
each with its args as debug annotations, including the exact ``start_cycle`` and
``cycles``. Flows are flow ids on the two slices. The trace's metadata travels as JSON in a
Chrome metadata entry named ``dspsim``, and as a readable line in the first group's
description.
"""
from __future__ import annotations

import json
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

METADATA_NAME = "dspsim"
SEQUENCE_ID = 1
EXACT_KEYS = ("start_cycle", "cycles")


def _pb2():
    # imported on first use: the generated module is large and JSON traces do not need it
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2  # noqa: PLC0415
    return perfetto_trace_pb2


# ----------------------------------------------------------------------------- writing
def _annotate(annotation, value: Any) -> None:
    if isinstance(value, bool):
        annotation.bool_value = value
    elif isinstance(value, int) and -2 ** 63 <= value < 2 ** 63:
        annotation.int_value = value
    elif isinstance(value, float):
        annotation.double_value = value
    elif isinstance(value, str):
        annotation.string_value = value
    elif isinstance(value, dict):
        for key, child in value.items():
            entry = annotation.dict_entries.add()
            entry.name = str(key)
            _annotate(entry, child)
    elif isinstance(value, (list, tuple)):
        for child in value:
            _annotate(annotation.array_values.add(), child)
    elif value is None:
        pass  # a name with no value reads back as None; Perfetto's JSON importer aborts on null
    else:  # integers beyond 64 bits, as JSON text
        annotation.legacy_json_value = json.dumps(value, default=str)


def _describe(metadata: dict[str, Any]) -> str:
    """One readable line of the metadata for the UI's track description."""
    keys = ("chip", "operator", "dtype", "length", "core_mask", "clock_mhz", "total_cycles",
            "bound")
    parts = [f"{k}={metadata[k]}" for k in keys if metadata.get(k) is not None]
    return "; ".join(parts) + ". 1 ns on the time axis is 1 core cycle."


def proto_bytes(model: TraceModel) -> bytes:
    """The model serialised as a Perfetto protobuf trace."""
    pb = _pb2()
    trace = pb.Trace()
    first = trace.packet.add()
    first.trusted_packet_sequence_id = SEQUENCE_ID
    first.sequence_flags = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
    entry = first.chrome_events.metadata.add()
    entry.name = METADATA_NAME
    entry.json_value = json.dumps(model.metadata, sort_keys=True, default=str)

    explicit = pb.TrackDescriptor.ChildTracksOrdering.Value("EXPLICIT")
    group_uuid = {}
    for rank, group in enumerate(model.groups()):
        group_uuid[group] = uuid = rank + 1
        packet = trace.packet.add()
        packet.trusted_packet_sequence_id = SEQUENCE_ID
        descriptor = packet.track_descriptor
        descriptor.uuid = uuid
        descriptor.name = group
        descriptor.child_ordering = explicit
        descriptor.sibling_order_rank = rank
        if rank == 0 and model.metadata:
            descriptor.description = _describe(model.metadata)
    track_uuid = {}
    base = len(group_uuid) + 1
    for index, track in enumerate(model.tracks):
        track_uuid[index] = uuid = base + index
        packet = trace.packet.add()
        packet.trusted_packet_sequence_id = SEQUENCE_ID
        descriptor = packet.track_descriptor
        descriptor.uuid = uuid
        descriptor.parent_uuid = group_uuid[track.group]
        descriptor.name = track.name
        descriptor.sibling_order_rank = index
        if track.kind == "counter":
            descriptor.counter.unit_name = track.unit

    outgoing: dict[int, list[int]] = {}
    incoming: dict[int, list[int]] = {}
    for flow in model.flows:
        outgoing.setdefault(flow.source, []).append(flow.id)
        incoming.setdefault(flow.target, []).append(flow.id)
    # (time, 0 for an end / 1 for a begin, order among equals, packet filler)
    events: list[tuple[int, int, int, Any]] = []
    spans = model.integer_spans()
    # begins in time order, outer slices first; at a shared instant a slice that flows
    # enter begins after the others, so that a viewer reading in order (Perfetto) has met
    # every flow's start before its end (a record and the call it releases may coincide)
    order = sorted(range(len(model.slices)),
                   key=lambda i: (spans[i][0], i in incoming, -spans[i][1],
                                  model.slices[i].track, i))
    for rank, index in enumerate(order):
        piece = model.slices[index]
        start, end = spans[index]
        instant = end == start
        events.append((start, 1, rank, ("begin", index, instant)))
        if not instant:  # inner slices (begun later) end first at a shared time
            events.append((end, 0, -rank, ("end", index, False)))
    for sample_index, sample in enumerate(model.samples):
        events.append((round(sample.at), 1, len(order) + sample_index, ("counter", sample_index,
                                                                         False)))
    events.sort(key=lambda e: e[:3])
    type_ = pb.TrackEvent.Type
    for time, _, _, (kind, index, instant) in events:
        packet = trace.packet.add()
        packet.trusted_packet_sequence_id = SEQUENCE_ID
        packet.timestamp = time
        event = packet.track_event
        if kind == "counter":
            sample = model.samples[index]
            event.type = type_.Value("TYPE_COUNTER")
            event.track_uuid = track_uuid[sample.track]
            event.double_counter_value = sample.value
            continue
        piece = model.slices[index]
        event.track_uuid = track_uuid[piece.track]
        if kind == "end":
            event.type = type_.Value("TYPE_SLICE_END")
            continue
        event.type = type_.Value("TYPE_INSTANT" if instant else "TYPE_SLICE_BEGIN")
        event.name = piece.name
        if piece.category:
            event.categories.append(piece.category)
        args = {"start_cycle": piece.start, "cycles": round(piece.end - piece.start, 6),
                **piece.args}
        for key, value in args.items():
            annotation = event.debug_annotations.add()
            annotation.name = key
            _annotate(annotation, value)
        event.flow_ids.extend(outgoing.get(index, ()))
        event.terminating_flow_ids.extend(incoming.get(index, ()))
    return trace.SerializeToString()


# ----------------------------------------------------------------------------- reading
def _str(value: Any, what: str) -> str:
    """A text field as read: proto2 hands back bytes for text that is not UTF-8."""
    if not isinstance(value, str):
        raise ValueError(f"{what} is not valid UTF-8 text")
    return check_text(value, what)


def _value(annotation) -> Any:
    which = annotation.WhichOneof("value")
    if annotation.dict_entries:
        return {entry.name: _value(entry) for entry in annotation.dict_entries}
    if annotation.array_values:
        return [_value(child) for child in annotation.array_values]
    if which == "string_value":
        return _str(annotation.string_value, f"annotation {annotation.name!r:.40}")
    if which in ("bool_value", "uint_value", "int_value", "double_value"):
        return getattr(annotation, which)
    if which == "legacy_json_value":
        try:
            return json.loads(annotation.legacy_json_value)
        except (ValueError, RecursionError):
            raise ValueError(f"annotation {annotation.name!r} holds bad JSON") from None
    if which == "pointer_value":
        return annotation.pointer_value
    return None


def is_protobuf(data: bytes) -> bool:
    """Whether ``data`` looks like a Perfetto trace: it starts with a ``packet`` field."""
    return data[:1] == b"\x0a"


def model_from_proto(data: bytes, where: str = "trace") -> TraceModel:
    """The model of a Perfetto protobuf trace; an ArgumentError if it is not one dspsim can
    read (truncated, not protobuf, events without tracks, unterminated slices)."""
    from google.protobuf.message import DecodeError  # noqa: PLC0415
    pb = _pb2()
    try:
        trace = pb.Trace.FromString(data)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise ArgumentError(f"{where} is not a readable Perfetto trace ({exc}); it may be "
                            f"truncated") from None
    try:
        return _read(trace, pb)
    except (ValueError, RecursionError) as exc:
        raise ArgumentError(f"{where}: {exc}; is this a trace dspsim wrote?") from None


def _read(trace, pb) -> TraceModel:
    metadata: dict[str, Any] = {}
    descriptors: dict[int, Any] = {}
    appearance: dict[int, int] = {}
    events = []
    for packet in trace.packet:
        if packet.HasField("track_descriptor"):
            descriptor = packet.track_descriptor
            descriptors[descriptor.uuid] = descriptor
            appearance.setdefault(descriptor.uuid, len(appearance))
        elif packet.HasField("track_event"):
            events.append((packet.timestamp, packet.track_event))
        elif packet.HasField("chrome_events"):
            for entry in packet.chrome_events.metadata:
                if entry.name == METADATA_NAME:
                    try:
                        metadata = json.loads(_str(entry.json_value, "its metadata"))
                    except json.JSONDecodeError as exc:
                        raise ValueError(f"its metadata is not JSON ({exc})") from None
                    if not isinstance(metadata, dict):
                        raise ValueError("its metadata is not an object")
                    check_plain(metadata, "metadata")

    def rank(uuid):
        return (descriptors[uuid].sibling_order_rank, appearance[uuid])

    parents = {d.parent_uuid for d in descriptors.values() if d.parent_uuid}
    leaves = [u for u, d in descriptors.items() if u not in parents or d.HasField("counter")]
    root_of = {u: (descriptors[u].parent_uuid if descriptors[u].parent_uuid in descriptors
                   else u) for u in leaves}
    leaves.sort(key=lambda u: (rank(root_of[u]), rank(u)))
    model = TraceModel(metadata=metadata)
    track_of: dict[int, int] = {}
    for uuid in leaves:
        descriptor = descriptors[uuid]
        name = _str(descriptor.name, f"the name of track {uuid}")
        group = (_str(descriptors[root_of[uuid]].name, f"the name of track {root_of[uuid]}")
                 if root_of[uuid] != uuid else name)
        kind = "counter" if descriptor.HasField("counter") else "slices"
        track_of[uuid] = model.add_track(Track(group, name, kind, _str(
            descriptor.counter.unit_name, f"the unit of track {uuid}")))

    type_ = pb.TrackEvent.Type
    open_slices: dict[int, list] = {}
    flows_out: dict[int, int] = {}
    flows_in: dict[int, int] = {}
    for time, event in events:
        if event.track_uuid not in track_of:
            raise ValueError(f"an event at {time} is on track {event.track_uuid}, which no "
                             f"descriptor names")
        track = track_of[event.track_uuid]
        at = finite_number(time, "a timestamp")
        if event.type == type_.Value("TYPE_COUNTER"):
            if not (event.HasField("double_counter_value") or event.HasField("counter_value")):
                raise ValueError(f"a counter event at {time} on {model.tracks[track].name!r} "
                                 f"has no value")
            value = (event.double_counter_value if event.HasField("double_counter_value")
                     else event.counter_value)
            model.samples.append(CounterSample(track, at, finite_number(
                value, "a counter value", -MAX_CYCLES)))
        elif event.type in (type_.Value("TYPE_SLICE_BEGIN"), type_.Value("TYPE_INSTANT")):
            name = _str(event.name, f"a slice name at {time}")
            args = {_str(a.name, f"an annotation name of {name!r:.40}"): _value(a)
                    for a in event.debug_annotations}
            check_plain(args, f"slice {name!r:.40} args")
            category = _str(event.categories[0], f"the category of {name!r:.40}") \
                if event.categories else ""
            begun = (name, category, at, args,
                     list(event.flow_ids), list(event.terminating_flow_ids))
            if event.type == type_.Value("TYPE_INSTANT"):
                _close(model, track, begun, at, flows_out, flows_in)
            else:
                open_slices.setdefault(track, []).append(begun)
        elif event.type == type_.Value("TYPE_SLICE_END"):
            if not open_slices.get(track):
                raise ValueError(f"a slice ends at {time} on {model.tracks[track].name!r} "
                                 f"without having begun")
            _close(model, track, open_slices[track].pop(), at, flows_out, flows_in)
    unterminated = [model.tracks[t].name for t, stack in open_slices.items() if stack]
    if unterminated:
        raise ValueError(f"slices on {unterminated[0]!r} never end")
    model.flows = [Flow(fid, flows_out[fid], flows_in[fid]) for fid in flows_out
                   if fid in flows_in]
    model.samples.sort(key=lambda s: s.at)
    return model


def _close(model: TraceModel, track: int, begun, end: float, flows_out, flows_in) -> None:
    name, category, start, args, outgoing, incoming = begun
    if all(k in args for k in EXACT_KEYS):
        start = finite_number(args["start_cycle"], f"slice {name!r} start_cycle")
        end = start + finite_number(args["cycles"], f"slice {name!r} cycles")
    if end < start or end > MAX_CYCLES:
        raise ValueError(f"slice {name!r} ends at {end:g}, before its start or too late")
    index = len(model.slices)
    model.slices.append(TrackSlice(track, name, category, start, end,
                                   {k: v for k, v in args.items() if k not in EXACT_KEYS}))
    for fid in outgoing:
        flows_out.setdefault(fid, index)
    for fid in incoming:
        flows_in.setdefault(fid, index)
