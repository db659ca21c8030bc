"""Random programs: random streams, masks, events and buffers (some racing, some
deadlocking) either fail with a DspSimError or keep every invariant of a schedule."""
import tempfile
from itertools import pairwise
from pathlib import Path

import numpy as np
from flow_order import proto_flows_start_first
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dspsim
from dspsim.sim.errors import DspSimError
from dspsim.traces.formats import trace_bytes, validate_trace

BUFFER = 1 << 16  # bytes between buffers: room for the longest call
BASE = 0x80000000
OPERATORS = [("fp_relu_grad_s", ()), ("fp_gelu_grad_s", ()), ("fp_l_relu_grad_s", (0.1,)),
             ("fp_tanh_grad_s", ())]

call = st.tuples(st.integers(0, 2),  # stream
                 st.sampled_from(range(len(OPERATORS))),
                 st.integers(0, 6000),  # length
                 st.integers(0, 255),  # core mask (0 selects no core)
                 st.tuples(st.integers(0, 3), st.integers(0, 3)),  # input buffers
                 st.integers(0, 7))  # output buffer: 4..7 are outputs only, 0..3 inputs too
sync = st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 3))  # from, to, event
program = st.tuples(st.sampled_from(["ft78ne", "mt7004"]),
                    st.lists(st.one_of(call.map(lambda c: ("call", c)),
                                       sync.map(lambda s: ("sync", s))), min_size=1, max_size=7))


def build(chip_name, items):
    chip = dspsim.Chip(chip_name)
    for k in range(4):
        chip.write(BASE + k * BUFFER, np.random.default_rng(k).standard_normal(
            BUFFER // 4).astype(np.float32))
    prog = chip.program()
    streams = [prog.stream(f"s{k}") for k in range(3)]
    events = [prog.event(f"e{k}") for k in range(4)]
    recorded = set()
    for kind, item in items:
        if kind == "call":
            stream, op, length, mask, (a, b), out = item
            name, params = OPERATORS[op]
            streams[stream].enqueue(name, BASE + a * BUFFER, BASE + b * BUFFER,
                                    BASE + out * BUFFER, length, *params, mask)
        else:
            source, target, event = item
            if event not in recorded:  # an event is recorded once
                streams[source].record(events[event])
                recorded.add(event)
            streams[target].wait(events[event])
    return chip, prog


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(program)
def test_random_programs_keep_every_invariant_or_fail_cleanly(case):
    chip_name, items = case
    try:
        chip, prog = build(chip_name, items)
        result = prog.run()
    except DspSimError:
        return
    assert all(result.timing.cycles >= bound * (1 - 1e-9) - 1e-6
               for bound in result.bounds.values())
    by_core: dict[int, list] = {}
    for record in result.calls:
        assert record.start_cycle >= record.ready_cycle >= 0
        assert record.end_cycle >= record.start_cycle
        assert record.result.cycles >= record.result.roofline_cycles - 1
        if record.after_call is not None:  # what it waited for ended before it started
            assert result.calls[record.after_call].end_cycle <= record.start_cycle + 1e-9
        for core in record.cores:
            by_core.setdefault(core, []).append((record.start_cycle, record.end_cycle))
    for spans in by_core.values():  # a core runs one call at a time
        spans.sort()
        assert all(a[1] <= b[0] + 1e-9 for a, b in pairwise(spans))
    for stream in prog.streams:  # in order within a stream
        ends = [result.calls[i.index] for i in stream.items if hasattr(i, "bound")]
        assert all(a.end_cycle <= b.start_cycle + 1e-9 for a, b in pairwise(ends))
    trace = result.trace()
    assert validate_trace(trace) == []  # flows included: none ends before it starts
    with tempfile.TemporaryDirectory() as folder:  # as Perfetto reads the protobuf
        assert proto_flows_start_first(result.write_trace(Path(folder) / "p.pftrace"))
    again = build(chip_name, items)[1].run()
    assert again.cycles == result.cycles
    assert trace_bytes(again.trace()) == trace_bytes(trace)
