"""Traces: required fields, per-thread nesting, metadata, DDR counter, atomic writes."""
import json
import os

import numpy as np
import pytest

import dspsim
from dspsim.traces.formats import load_trace, validate_trace, write_trace


@pytest.fixture(scope="module")
def result():
    rng = np.random.default_rng(5)
    n = 200_000
    _, r = dspsim.simulate("fp_relu_grad_s", rng.standard_normal(n), rng.standard_normal(n),
                           chip="ft78ne", core_mask=0x0f)
    return r


def test_trace_is_valid_and_complete(result):
    trace = result.trace()
    assert validate_trace(trace) == []
    meta = trace["metadata"]
    for key in ("chip", "operator", "dtype", "length", "core_mask", "clock_mhz"):
        assert key in meta
    assert meta["chip"] == "FT78NE" and meta["core_mask"] == 0x0f and meta["clock_mhz"] == 1000
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    processes = {e["args"]["name"] for e in trace["traceEvents"]
                 if e["ph"] == "M" and e["name"] == "process_name"}
    assert {"core 0", "core 1", "core 2", "core 3"} <= processes
    # relu_grad loads two operands side by side: one dma-in thread each
    assert {"dma-in.0", "dma-in.1", "vector", "dma-out"} <= set(names.values())
    threads = [e for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"]
    assert all(e["tid"] != e["pid"] for e in threads)  # else Perfetto calls it "main thread"
    assert meta["bound"] == result.bound
    assert meta["roofline_terms"] == pytest.approx(result.roofline_terms)
    every = [e for e in trace["traceEvents"] if e["ph"] == "C"]
    # a counter per shared resource: DDR, the DMA pool's controller groups, each L2 port
    assert {e["name"] for e in every} >= {"DDR bandwidth", "DMA edma3cc0.tc busy",
                                          "L2 port bandwidth"}
    counters = [e for e in every if e["name"] == "DDR bandwidth"]
    assert max(e["args"]["GB/s"] for e in counters) == pytest.approx(8.536, rel=1e-3)


def test_slices_are_cycles_over_1000_and_busy_matches_result(result):
    trace = result.trace()
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    end = max(round((e["ts"] + e["dur"]) * 1000) for e in slices)
    assert end == round(trace["metadata"]["total_cycles"])
    assert result.cycles - 1 <= end <= result.cycles  # the report rounds up
    for core in result.per_core:
        pid = core.core + 1
        vector = sum(e["args"]["cycles"] for e in slices
                     if e["pid"] == pid and e["cat"] == "vector")
        assert vector == pytest.approx(core.busy_cycles["vector"])
        assert sum(1 for e in slices if e["pid"] == pid and e["cat"] == "vector") == core.tiles


def test_validator_catches_partial_overlap_missing_fields_and_negative_durations():
    base = {"ph": "X", "pid": 1, "tid": 1, "name": "a"}
    overlapping = {"traceEvents": [{**base, "ts": 0, "dur": 2}, {**base, "ts": 1, "dur": 2}]}
    assert any("partially overlaps" in p for p in validate_trace(overlapping))
    nested = {"traceEvents": [{**base, "ts": 0, "dur": 4}, {**base, "ts": 1, "dur": 2}]}
    assert validate_trace(nested) == []
    assert any("lacks dur" in p for p in validate_trace({"traceEvents": [
        {"ph": "X", "pid": 1, "tid": 1, "name": "a", "ts": 0}]}))
    assert any("negative" in p
               for p in validate_trace({"traceEvents": [{**base, "ts": 0, "dur": -1}]}))


def test_back_to_back_slices_do_not_overlap_after_conversion_to_nanoseconds():
    from dspsim.traces.chrome_json import micro as _micro
    for k in range(1000, 30000):
        assert int(_micro(k) * 1000) == k


def test_write_is_atomic_and_leaves_no_temporary_files(tmp_path, result):
    path = tmp_path / "sub" / "t.json"
    write_trace(result.trace(), path)
    assert load_trace(path)["metadata"]["operator"] == "fp_relu_grad_s"
    assert os.listdir(path.parent) == ["t.json"]
    broken = {"traceEvents": [], "metadata": {"x": object()}}  # not serialisable
    with pytest.raises(TypeError):
        write_trace(broken, path)
    assert os.listdir(path.parent) == ["t.json"]  # the old file stands, no temp file left
    assert json.loads(path.read_text())["metadata"]["operator"] == "fp_relu_grad_s"


def test_private_call_trace(mt7004):
    rng = np.random.default_rng(0)
    _, r = dspsim.simulate("hp_relu_grad_p", rng.standard_normal(500), rng.standard_normal(500),
                           chip=mt7004)
    trace = r.trace()
    assert validate_trace(trace) == []
    assert [e["cat"] for e in trace["traceEvents"] if e["ph"] == "X"] == ["vector"]


def test_validate_trace_reports_flows_a_viewer_would_drop_and_bad_flow_ids():
    # Perfetto reads events in time order: a flow ending before it starts, or missing an
    # end, is dropped; an id that is no number or text is no flow at all
    def flow(phase, ts, flow_id):
        return {"ph": phase, "ts": ts, "pid": 1, "tid": 2, "id": flow_id}

    problems = validate_trace({"traceEvents": [
        flow("s", 5, 1), flow("f", 1, 1), flow("s", 1, 2), flow("f", 5, 2),
        flow("f", 3, "x"), flow("s", 1, [3]), flow("f", 2, {"a": 1})]})
    assert problems == ["event 5 is a flow with bad id [3]",
                        "event 6 is a flow with bad id {'a': 1}",
                        "flow 1 ends at 1000 ns, before it starts at 5000 ns",
                        "flow 'x' has 0 start(s) and 1 end(s), not one of each"]
