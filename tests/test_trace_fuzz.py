"""Malformed traces of both formats end in a DspSimError, never another exception: wrong
types in metadata and events, NaN, huge numbers, binary files, deep nesting, truncated or
corrupted protobuf."""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

import dspsim
from dspsim.sim.errors import DspSimError
from dspsim.traces.compare import compare
from dspsim.traces.formats import encode_trace
from dspsim.traces.plot import plot_trace
from dspsim.traces.view import read_trace, summarize

#: FUZZ_N=3000 runs a longer, random search instead of the suite's fixed 60 examples
FUZZ = settings(max_examples=int(os.environ.get("FUZZ_N", 60)),
                derandomize=not os.environ.get("FUZZ_N"), deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


def _base():
    rng = np.random.default_rng(3)
    _, result = dspsim.simulate("fp_relu_grad_s", rng.standard_normal(3000),
                                rng.standard_normal(3000), chip="ft78ne", core_mask=0x3)
    return result.trace()


BASE = _base()
BASE_PROTO = encode_trace(BASE, "protobuf")


def deep(depth: int):
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


hostile = st.one_of(
    st.none(), st.booleans(), st.text(max_size=6),
    st.integers(min_value=-2 ** 80, max_value=2 ** 80),
    st.sampled_from([10 ** 400, -(10 ** 30), 2 ** 63, 2 ** 64 + 1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([float("nan"), float("inf"), -float("inf"), 1e308, -1e-320]),
    st.lists(st.integers(-3, 3), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(-3, 3), max_size=2),
    st.integers(min_value=20, max_value=600).map(deep),
    st.sampled_from(["[bold]x", "[/]", "core 99999999999", "x call", "\x00\udcff"]),
)


@st.composite
def mutated_trace(draw):
    """BASE with one to three fields replaced, deleted or added."""
    trace = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(["metadata", "event", "event args", "top"]))
        if where == "metadata":
            target = trace["metadata"] if isinstance(trace.get("metadata"), dict) else None
            if target is None:
                continue
            keys = sorted(target) + ["roofline_terms", "bound", "new"]
        elif where == "top":
            target, keys = trace, ["metadata", "traceEvents", "displayTimeUnit"]
        else:
            events = trace.get("traceEvents")
            if not isinstance(events, list) or not events:
                continue
            event = events[draw(st.integers(0, len(events) - 1))]
            if not isinstance(event, dict):
                continue
            target = event
            if where == "event args":
                if not isinstance(event.get("args"), dict):
                    continue
                target = event["args"]
            keys = sorted(target) + ["ph", "start_cycle", "cycles", "bytes", "name"]
        key = draw(st.sampled_from(keys))
        if draw(st.integers(0, 5)) == 0:
            target.pop(key, None)
        else:
            target[key] = draw(hostile)
    return trace


def _must_be_clean(function, *args):
    try:
        return function(*args)
    except DspSimError:
        return None


def _summarise(path):
    trace = _must_be_clean(read_trace, path)
    if trace is None:
        return None
    summary = summarize(trace, 7)  # a trace that reads must summarise
    json.dumps(summary.__dict__, default=str)
    compare(summary, summary)
    return trace


@FUZZ
@given(mutated_trace())
def test_malformed_json_traces_fail_cleanly(tmp_path, trace):
    path = tmp_path / "t.json"
    try:
        text = json.dumps(trace)
    except (ValueError, RecursionError):  # not even JSON can hold it
        return
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    _summarise(path)
    # a Chrome dict someone else made: converting it to protobuf fails cleanly too
    try:
        data = encode_trace(trace, "protobuf")
    except DspSimError:
        return
    proto = tmp_path / "t.pftrace"
    proto.write_bytes(data)
    _summarise(proto)


@st.composite
def mutated_proto(draw):
    """BASE_PROTO cut short, with bytes changed, or with one field given a hostile value."""
    kind = draw(st.sampled_from(["truncate", "flip", "field", "field", "garbage", "utf8",
                                 "descriptor"]))
    if kind == "utf8":  # text that is not UTF-8, where names, args and metadata are
        old = draw(st.sampled_from([b"FT78NE call", b"core 1", b"dma-out", b"dst[1]",
                                    b"region", b"ddr", b"GB/s", b"total_cycles"]))
        return BASE_PROTO.replace(old, old[:2] + b"\xff" + old[3:])
    if kind == "truncate":
        return BASE_PROTO[:draw(st.integers(0, len(BASE_PROTO) - 1))]
    if kind == "garbage":
        return b"\x0a" + draw(st.binary(max_size=200))
    if kind == "flip":
        data = bytearray(BASE_PROTO)
        for _ in range(draw(st.integers(1, 8))):
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        return bytes(data)
    trace = pb.Trace.FromString(BASE_PROTO)
    if kind == "descriptor":
        tracks = [p.track_descriptor for p in trace.packet if p.HasField("track_descriptor")]
        track = tracks[draw(st.integers(0, len(tracks) - 1))]
        change = draw(st.sampled_from(["parent", "name", "counter", "uuid"]))
        if change == "parent":
            track.parent_uuid = draw(st.sampled_from([track.uuid, 0, 2 ** 64 - 1,
                                                      tracks[-1].uuid]))
        elif change == "name":
            track.name = draw(st.sampled_from(["", "core -1", "core 1", "x call", "[/]"]))
        elif change == "counter":
            track.counter.unit_name = "x"
        else:
            track.uuid = tracks[0].uuid
        return trace.SerializeToString()
    events = [p for p in trace.packet if p.HasField("track_event")]
    packet = events[draw(st.integers(0, len(events) - 1))]
    change = draw(st.sampled_from(["timestamp", "track", "type", "annotation", "counter",
                                   "metadata", "drop"]))
    if change == "timestamp":
        packet.timestamp = draw(st.integers(0, 2 ** 64 - 1))
    elif change == "track":
        packet.track_event.track_uuid = draw(st.integers(0, 2 ** 64 - 1))
    elif change == "type":
        packet.track_event.type = draw(st.integers(0, 4))
    elif change == "annotation" and packet.track_event.debug_annotations:
        annotation = packet.track_event.debug_annotations[0]
        choice = draw(st.sampled_from(["nan", "string", "json", "deep"]))
        if choice == "nan":
            annotation.double_value = float("nan")
        elif choice == "string":
            annotation.string_value = draw(st.text(max_size=5))
        elif choice == "json":
            annotation.legacy_json_value = draw(st.sampled_from(["[[[", "1e999", "{}",
                                                                 "[" * 5000]))
        else:
            for _ in range(40):
                annotation = annotation.array_values.add()
            annotation.int_value = 1
    elif change == "counter":
        packet.track_event.double_counter_value = draw(st.sampled_from(
            [float("nan"), float("inf"), 1e300]))
    elif change == "metadata":
        entry = trace.packet[0].chrome_events.metadata[0]
        entry.json_value = draw(st.sampled_from(
            ["[]", "{", "null", json.dumps({"total_cycles": "x"}), "[" * 3000 + "]" * 3000,
             json.dumps({**BASE["metadata"], "clock_mhz": -1}),
             json.dumps({**BASE["metadata"], "roofline_terms": {"DDR": 1e300}})]))
    else:
        trace.packet.remove(packet)
    return trace.SerializeToString()


@FUZZ
@given(mutated_proto())
def test_malformed_protobuf_traces_fail_cleanly(tmp_path, data):
    path = tmp_path / "t.pftrace"
    path.write_bytes(data)
    _summarise(path)


@settings(max_examples=8, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutated_trace())
def test_plots_of_malformed_traces_fail_cleanly(tmp_path, trace):
    path = tmp_path / "t.json"
    try:
        path.write_text(json.dumps(trace), encoding="utf-8", errors="surrogatepass")
    except (ValueError, RecursionError):
        return
    parsed = _must_be_clean(read_trace, path)
    if parsed is not None:
        meta = parsed.metadata
        plot_trace(parsed, str(tmp_path / "t.png"), meta["ddr_peak_gbps"],
                   meta["ddr_achievable_gbps"], meta["bound"])


def test_the_commands_answer_hostile_files_with_one_line(tmp_path):
    files = {
        "binary.pftrace": os.urandom(64).replace(b"\x0a", b"\x0b", 1),
        "truncated.pftrace": BASE_PROTO[: len(BASE_PROTO) // 2],
        "deep.json": b"[" * 100_000,
        "nan.json": json.dumps({**BASE, "metadata": {**BASE["metadata"],
                                                     "total_cycles": float("nan")}}).encode(),
        "huge.json": json.dumps({**BASE, "metadata": {**BASE["metadata"],
                                                      "length": 10 ** 400}}).encode(),
        "empty.json": b"",
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    good = tmp_path / "good.pftrace"
    good.write_bytes(BASE_PROTO)
    runs = [("summary", name) for name in files] + [
        ("plot", "truncated.pftrace"), ("compare", "deep.json", str(good)),
        ("compare", str(good), "nan.json")]
    for command, *paths in runs:
        proc = subprocess.run([sys.executable, "-m", "dspsim", "trace", command,
                               *(str(tmp_path / p) for p in paths)],
                              capture_output=True, text=True, timeout=120)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:"), \
            (command, paths, proc.stderr)
    assert sorted(os.listdir(tmp_path)) == sorted([*files, "good.pftrace"])  # nothing written
