"""Perfetto protobuf traces: clean names, track order, whole-cycle slices that add up to the
result's busy cycles, args, the DDR counter, flows from Chrome-style dicts, read back."""
from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

import dspsim
from dspsim.traces.build import cycles
from dspsim.traces.formats import load_trace, read_model, trace_model, validate_trace, write_trace
from dspsim.traces.model import TraceModel, TrackSlice
from dspsim.traces.view import read_trace, summarize

BEGIN, END, INSTANT, COUNTER = (pb.TrackEvent.Type.Value(t) for t in (
    "TYPE_SLICE_BEGIN", "TYPE_SLICE_END", "TYPE_INSTANT", "TYPE_COUNTER"))


def simulated(chip="ft78ne", mask=0x0f, n=200_000, fidelity="fast", name="fp_relu_grad_s"):
    rng = np.random.default_rng(5)
    _, result = dspsim.simulate(name, rng.standard_normal(n), rng.standard_normal(n),
                                chip=chip, core_mask=mask, fidelity=fidelity)
    return result


@pytest.fixture(scope="module")
def result():
    return simulated()


def parsed(path) -> pb.Trace:
    return pb.Trace.FromString(open(path, "rb").read())


def tracks_and_events(trace):
    """{uuid: descriptor}, and per track uuid its (timestamp, event) list in file order."""
    descriptors, events = {}, {}
    for packet in trace.packet:
        if packet.HasField("track_descriptor"):
            descriptors[packet.track_descriptor.uuid] = packet.track_descriptor
        elif packet.HasField("track_event"):
            events.setdefault(packet.track_event.track_uuid, []).append(
                (packet.timestamp, packet.track_event))
    return descriptors, events


def integer_slices(events):
    """(start, end, event) of every slice of one track, checking begin/end nesting."""
    stack, slices = [], []
    for time, event in events:
        if event.type == BEGIN:
            stack.append((time, event))
        elif event.type == END:
            start, begun = stack.pop()
            assert time >= start
            slices.append((start, time, begun))
        elif event.type == INSTANT:
            slices.append((time, time, event))
    assert not stack, "a slice never ends"
    return slices


def test_names_are_clean_and_the_call_and_ddr_tracks_come_first(tmp_path, result):
    path = result.write_trace(tmp_path / "t.pftrace")
    descriptors, _ = tracks_and_events(parsed(path))
    roots = sorted((d for d in descriptors.values() if not d.parent_uuid),
                   key=lambda d: d.sibling_order_rank)
    assert [d.name for d in roots] == ["FT78NE call", "core 0", "core 1", "core 2", "core 3"]
    children = {}
    for d in descriptors.values():
        if d.parent_uuid:
            children.setdefault(descriptors[d.parent_uuid].name, []).append(d)
    ordering = pb.TrackDescriptor.ChildTracksOrdering.Value("EXPLICIT")
    assert all(d.child_ordering == ordering for d in roots)
    call = sorted(children["FT78NE call"], key=lambda d: d.sibling_order_rank)
    # the call's own tracks first, then the other shared resources' counters
    assert [d.name for d in call][:2] == ["call", "DDR bandwidth"]
    assert all(d.HasField("counter") for d in call[2:])
    assert call[1].HasField("counter") and call[1].counter.unit_name == "GB/s"
    core = sorted(children["core 0"], key=lambda d: d.sibling_order_rank)
    assert [d.name for d in core] == ["dma-in.0", "dma-in.1", "vector", "dma-out",
                                      "L2 port bandwidth"]
    # no process or thread descriptors: nothing for the UI to append ids to
    assert not any(d.HasField("process") or d.HasField("thread") for d in descriptors.values())
    assert "FT78NE" in roots[0].description and "1 ns" in roots[0].description


def test_every_slice_has_its_args_and_the_counter_its_values(tmp_path, result):
    path = result.write_trace(tmp_path / "t.perfetto-trace")
    descriptors, events = tracks_and_events(parsed(path))
    begins = [e for track in events.values() for _, e in track if e.type == BEGIN]
    assert len(begins) == len(result.timing.slices)
    for event in begins:
        names = {a.name for a in event.debug_annotations}
        assert {"start_cycle", "cycles"} <= names, event.name
        if event.categories[0] in ("dma-in", "dma-out"):
            assert {"bytes", "address", "region", "tile", "elements"} <= names
    counter = next(u for u, d in descriptors.items() if d.name == "DDR bandwidth")
    values = [e.double_counter_value for _, e in events[counter]]
    assert all(e.type == COUNTER for _, e in events[counter])
    assert len(values) == len(result.timing.ddr_samples)
    assert max(values) == pytest.approx(8.536, rel=1e-3)


@pytest.mark.parametrize("chip, mask, fidelity", [("ft78ne", 0x0f, "fast"),
                                                  ("mt7004", 0x3, "detailed")])
def test_whole_cycle_durations_add_up_to_the_result_busy_cycles(tmp_path, chip, mask, fidelity):
    result = simulated(chip, mask, 2**15 if fidelity == "detailed" else 200_000, fidelity)
    path = result.write_trace(tmp_path / "t.pftrace")
    descriptors, events = tracks_and_events(parsed(path))
    # the trace keeps hundredths of a cycle (CYCLE_DECIMALS): a track's whole cycles are the
    # total of its slices as the trace holds them, rounded, added in the order of the track
    exact = {}
    for piece in sorted(result.timing.slices, key=lambda p: (cycles(p.start), -cycles(p.end))):
        key = (f"core {piece.core}", piece.engine)
        exact[key] = exact.get(key, 0.0) + cycles(piece.end) - cycles(piece.start)
    per_engine: dict[tuple, list] = {}
    last_end = 0
    for uuid, track_events in events.items():
        d = descriptors[uuid]
        if d.HasField("counter"):
            continue
        group = descriptors[d.parent_uuid].name
        slices = integer_slices(track_events)
        ordered = sorted(slices, key=lambda s: s[0])
        assert all(a[1] <= b[0] for a, b in pairwise(ordered)), d.name  # no overlap
        last_end = max([last_end] + [s[1] for s in slices])
        if group.startswith("core"):
            # each track's whole cycles are its busy cycles rounded: nothing truncated
            assert sum(e - s for s, e, _ in slices) == round(exact[(group, d.name)])
            per_engine.setdefault((int(group.split()[1]), d.name.partition(".")[0]),
                                  []).extend((s, e) for s, e, _ in slices)
    for core in result.per_core:
        for engine, busy in core.busy_cycles.items():
            intervals = sorted(per_engine.get((core.core, engine), []))
            union, reach = 0, -1
            for s, e in intervals:
                union += max(0, e - max(s, reach))
                reach = max(reach, e)
            assert abs(union - busy) <= 1.0, (core.core, engine, union, busy)
    assert last_end <= result.cycles


def test_read_back_gives_the_same_model_and_summary_as_json(tmp_path, result):
    proto = result.write_trace(tmp_path / "t.pftrace")
    chrome = result.write_trace(tmp_path / "t.json")
    a, b = read_model(proto), read_model(chrome)
    assert a.metadata == b.metadata == result.trace_model().metadata
    assert [(t.group, t.name, t.kind) for t in a.tracks] == \
        [(t.group, t.name, t.kind) for t in b.tracks]
    key = lambda s: (s.track, s.start, s.name)  # noqa: E731
    for x, y in zip(sorted(a.slices, key=key), sorted(b.slices, key=key), strict=True):
        assert (x.name, x.category, x.args) == (y.name, y.category, y.args)
        assert x.start == y.start and x.end == pytest.approx(y.end, rel=1e-15)
    assert validate_trace(load_trace(proto)) == []
    sa, sb = summarize(read_trace(proto)), summarize(read_trace(chrome))
    assert sa.cycles == sb.cycles == result.cycles
    assert sa.engines == sb.engines and sa.ddr_timeline == pytest.approx(sb.ddr_timeline)
    for ca, cb in zip(sa.cores, sb.cores, strict=True):
        assert ca.busy == pytest.approx(cb.busy, rel=1e-12)


def test_a_chrome_dict_with_flows_becomes_protobuf_with_flow_ids(tmp_path):
    chrome = {"traceEvents": [
        {"name": "process_name", "ph": "M", "pid": 7, "tid": 0, "args": {"name": "stream 0"}},
        {"name": "process_name", "ph": "M", "pid": 8, "tid": 0, "args": {"name": "stream 1"}},
        {"name": "thread_name", "ph": "M", "pid": 7, "tid": 70, "args": {"name": "calls"}},
        {"name": "thread_name", "ph": "M", "pid": 8, "tid": 80, "args": {"name": "calls"}},
        {"name": "relu", "ph": "X", "ts": 0.0, "dur": 1.5, "pid": 7, "tid": 70, "cat": "call",
         "args": {"core_mask": 3}},
        {"name": "record e0", "ph": "X", "ts": 1.5, "dur": 0.0, "pid": 7, "tid": 70},
        {"name": "gelu", "ph": "X", "ts": 2.0, "dur": 1.0, "pid": 8, "tid": 80,
         "args": {"waited_for": ["e0"]}},
        {"name": "nested", "ph": "X", "ts": 2.25, "dur": 0.5, "pid": 8, "tid": 80},
        {"name": "e0", "ph": "s", "id": "e0", "ts": 1.5, "pid": 7, "tid": 70, "cat": "event"},
        {"name": "e0", "ph": "f", "id": "e0", "ts": 2.0, "pid": 8, "tid": 80, "bp": "e",
         "cat": "event"},
        {"name": "DDR bandwidth", "ph": "C", "ts": 0.5, "pid": 7, "args": {"GB/s": 3.5}},
    ], "metadata": {"program": "two streams"}}
    path = write_trace(chrome, tmp_path / "program.pftrace")
    descriptors, events = tracks_and_events(parsed(path))
    assert sorted(d.name for d in descriptors.values() if not d.parent_uuid) == \
        ["stream 0", "stream 1"]
    begun = {e.name: e for track in events.values() for _, e in track if e.type in
             (BEGIN, INSTANT)}
    assert list(begun["record e0"].flow_ids) and \
        list(begun["record e0"].flow_ids) == list(begun["gelu"].terminating_flow_ids)
    assert begun["record e0"].type == INSTANT  # zero length
    model = read_model(path)
    (flow,) = model.flows
    assert model.slices[flow.source].name == "record e0"
    assert model.slices[flow.target].name == "gelu"
    gelu = next(s for s in model.slices if s.name == "gelu")
    assert (gelu.start, gelu.end, gelu.args) == (2000.0, 3000.0, {"waited_for": ["e0"]})
    # and back to Chrome JSON: the flow survives as an s/f pair
    again = load_trace(path)
    assert [e["ph"] for e in again["traceEvents"] if e["ph"] in "sf"] == ["s", "f"]
    assert validate_trace(again) == []
    assert trace_model(again).flows[0].id == flow.id


def test_nested_slices_keep_their_nesting_in_whole_cycles():
    model = TraceModel(metadata={})
    track = model.track("g", "t")
    model.slices += [TrackSlice(track, "outer", "", 0.4, 10.6, {}),
                     TrackSlice(track, "inner", "", 0.4, 3.2, {}),
                     TrackSlice(track, "inner2", "", 3.2, 10.6, {})]
    spans = model.integer_spans()
    assert spans == [(0, 11), (0, 3), (3, 11)]


def test_null_args_are_written_without_json_null(tmp_path):
    # Perfetto's trace processor aborts on a debug annotation holding JSON null (a program
    # trace's `releases_call: None` crashed the UI): a null is a name with no value
    chrome = {"traceEvents": [
        {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "calls"}},
        {"name": "wait", "ph": "X", "ts": 0.0, "dur": 1.0, "pid": 1, "tid": 1,
         "args": {"releases_call": None, "nested": {"inner": None}, "items": [None, 1]}},
    ], "metadata": {}}
    path = write_trace(chrome, tmp_path / "nulls.pftrace")
    annotations = [a for packet in parsed(path).packet
                   for a in packet.track_event.debug_annotations]

    def no_json(annotation):
        return (annotation.WhichOneof("value") != "legacy_json_value"
                and all(map(no_json, annotation.dict_entries))
                and all(map(no_json, annotation.array_values)))
    assert annotations and all(map(no_json, annotations))
    wait = next(s for s in read_model(path).slices if s.name == "wait")
    assert wait.args == {"releases_call": None, "nested": {"inner": None}, "items": [None, 1]}
