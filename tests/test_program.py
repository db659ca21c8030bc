"""Programs: calls on streams of one chip timeline (Python API)."""
import json

import numpy as np
import pytest
from flow_order import proto_flows_start_first

import dspsim
from dspsim.programs import DeadlockError, RaceError
from dspsim.sim.errors import AddressError, ArgumentError, DspSimError
from dspsim.traces.formats import trace_bytes, validate_trace

DDR = 0x80000000
SRAM = 0x0C000000
MIB = 1 << 20


def fill(chip, address, n, seed, dtype=np.float32):
    chip.write(address, np.random.default_rng(seed).standard_normal(n).astype(dtype))


@pytest.mark.parametrize("chip_name, name, n, mask, fidelity", [
    ("ft78ne", "fp_gelu_grad_s", 1 << 16, 0xff, "fast"),
    ("ft78ne", "fp_relu_grad_s", 5000, 0x0f, "fast"),
    ("mt7004", "fp_relu_grad_s", 1 << 18, 0x3, "fast"),
    ("mt7004", "hp_sigmoid_grad_s", 3000, 0xf, "detailed"),
    ("ft78ne", "fp_relu_grad_s", 0, 0xff, "fast"),
])
def test_one_call_program_is_the_plain_call(chip_name, name, n, mask, fidelity):
    chip = dspsim.Chip(chip_name)
    dtype = chip.resolve(name).dtype.numpy
    fill(chip, DDR, n, 1, dtype)
    fill(chip, DDR + 16 * MIB, n, 2, dtype)
    plain = chip.call(name, DDR, DDR + 16 * MIB, DDR + 32 * MIB, n, mask, fidelity=fidelity)
    expected = chip.read(DDR + 32 * MIB, n, dtype) if n else None
    chip.zero(DDR + 32 * MIB, n, dtype)
    prog = chip.program()
    prog.stream().enqueue(name, DDR, DDR + 16 * MIB, DDR + 32 * MIB, n, mask)
    result = prog.run(fidelity=fidelity)
    assert result.cycles == plain.cycles
    assert trace_bytes(result.calls[0].result.trace()) == trace_bytes(plain.trace())
    if n:
        np.testing.assert_array_equal(chip.read(DDR + 32 * MIB, n, dtype), expected)


def test_one_private_call_program_is_the_plain_call(ft78ne):
    l2 = 0x11810000  # in core 1's L2
    fill(ft78ne, l2, 1024, 1)
    fill(ft78ne, l2 + 8192, 1024, 2)
    plain = ft78ne.fp_tanh_grad_p(l2, l2 + 8192, l2 + 16384, 1024)
    prog = ft78ne.program()
    prog.stream().fp_tanh_grad_p(l2, l2 + 8192, l2 + 16384, 1024)
    result = prog.run()
    assert result.calls[0].cores == (1,)
    assert result.cycles == plain.cycles
    assert trace_bytes(result.calls[0].result.trace()) == trace_bytes(plain.trace())


def test_disjoint_masks_in_different_regions_take_the_longer_call(mt7004):
    n = 1 << 18
    for base in (DDR, SRAM):
        mt7004.zero(base, n, "fp32")
        mt7004.zero(base + MIB, n, "fp32")
    alone_a = mt7004.fp_relu_grad_s(DDR, DDR + MIB, DDR + 2 * MIB, n, 0x3, numerics=False)
    alone_b = mt7004.fp_gelu_grad_s(SRAM, SRAM + MIB, SRAM + 2 * MIB, n, 0xc, numerics=False)
    # each as alone, whichever way the other's transfers are timed: they share no link,
    # engine or core (the one in DDR as fluid flows, the one in SRAM burst by burst)
    assert {alone_a.metadata["transfer_timing"],
            alone_b.metadata["transfer_timing"]} == {"fluid", "bursts"}
    prog = mt7004.program()
    prog.stream().fp_relu_grad_s(DDR, DDR + MIB, DDR + 2 * MIB, n, 0x3)
    prog.stream().fp_gelu_grad_s(SRAM, SRAM + MIB, SRAM + 2 * MIB, n, 0xc)
    result = prog.run(numerics=False)
    assert abs(result.cycles - max(alone_a.cycles, alone_b.cycles)) <= 1
    assert [c.cycles for c in result.calls] == [alone_a.cycles, alone_b.cycles]
    assert [c.waited_for for c in result.calls] == ["nothing", "nothing"]


@pytest.mark.parametrize("chip_name, masks", [("ft78ne", (0x0f, 0xf0)), ("mt7004", (0x1, 0xe)),
                                              ("ft78ne", (0x03, 0x0c))])
def test_shared_ddr_is_between_its_bound_and_the_sequential_time(chip_name, masks):
    chip = dspsim.Chip(chip_name)
    n = 1 << 17
    for k in range(4):
        chip.zero(DDR + k * MIB, n, "fp32")
    calls = [("fp_relu_grad_s", (DDR, DDR + MIB, DDR + 4 * MIB, n, masks[0])),
             ("fp_l_relu_grad_s", (DDR + 2 * MIB, DDR + 3 * MIB, DDR + 5 * MIB, n, 0.1,
                                   masks[1]))]
    sequential = sum(chip.call(name, *args, numerics=False).cycles for name, args in calls)
    prog = chip.program()
    for name, args in calls:
        prog.stream().enqueue(name, *args)
    result = prog.run(numerics=False)
    ddr_bytes = result.ddr["bytes"]
    capacity = chip.config.bytes_per_cycle(chip.config.ddr.bandwidth_gbps)
    assert ddr_bytes == 2 * 3 * n * 4
    assert result.cycles >= ddr_bytes / capacity
    assert result.cycles <= sequential
    assert all(result.cycles >= bound - 1e-6 for bound in result.bounds.values())


def test_events_order_streams_and_numerics_flow_in_dependency_order(ft78ne):
    n = 4096
    dy, x = (np.random.default_rng(s).standard_normal(n).astype(np.float32) for s in (1, 2))
    ft78ne.write(DDR, dy)
    ft78ne.write(DDR + MIB, x)
    prog = ft78ne.program()
    first, second, third = prog.stream("first"), prog.stream("second"), prog.stream("third")
    # enqueued in the reverse of the order the events impose
    e1, e2 = prog.event("e1"), prog.event("e2")
    third.wait(e2)
    third.fp_tanh_grad_s(DDR + 3 * MIB, DDR + MIB, DDR + 4 * MIB, n, 0x0f)
    second.wait(e1)
    second.fp_l_relu_grad_s(DDR + 2 * MIB, DDR + MIB, DDR + 3 * MIB, n, 0.2, 0xf0)
    second.record(e2)
    first.fp_gelu_grad_s(DDR, DDR + MIB, DDR + 2 * MIB, n, 0x0f)
    first.record(e1)
    result = prog.run()
    by_stream = {c.stream: c for c in result.calls}
    assert by_stream["second"].start_cycle >= by_stream["first"].end_cycle
    assert by_stream["third"].start_cycle >= by_stream["second"].end_cycle
    assert by_stream["second"].waited_for == "event e1"
    assert by_stream["third"].waited_for == "event e2"
    assert [p["call"] for p in result.critical_path] == [
        by_stream[s].index for s in ("first", "second", "third")]
    x64 = x.astype(np.float64)
    c = np.sqrt(2 / np.pi)
    inner = np.tanh(c * (x64 + 0.044715 * x64 ** 3))
    gelu = dy * (0.5 * (1 + inner)
                 + 0.5 * x64 * (1 - inner ** 2) * c * (1 + 3 * 0.044715 * x64 ** 2))
    leaky = np.where(x64 > 0, gelu, 0.2 * gelu)
    expected = leaky * (1 - x64 ** 2)
    got = ft78ne.read(DDR + 4 * MIB, n, np.float32)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    assert validate_trace(result.trace()) == []


def test_program_traces_carry_flows_from_records_to_the_calls_their_waits_release(ft78ne, tmp_path):
    from dspsim.traces.formats import read_model
    from dspsim.traces.read import read_trace
    n = 4096
    fill(ft78ne, DDR, n, 1)
    fill(ft78ne, DDR + MIB, n, 2)
    prog = ft78ne.program()
    first, second = prog.stream("first"), prog.stream("second")
    first.fp_gelu_grad_s(DDR, DDR + MIB, DDR + 2 * MIB, n, 0x0f)
    second.wait(first.record())
    second.fp_relu_grad_s(DDR + 2 * MIB, DDR + MIB, DDR + 3 * MIB, n, 0xf0)
    first.fp_tanh_grad_s(DDR, DDR + MIB, DDR + 4 * MIB, n, 0x0f)
    result = prog.run()
    for name in ("program.json", "program.pftrace"):
        path = result.write_trace(tmp_path / name)
        model = read_model(path)
        arrows = [(model.slices[f.source].name, model.slices[f.source].args.get("call"),
                   model.tracks[model.slices[f.target].track].name,
                   model.slices[f.target].args.get("call")) for f in model.flows]
        # the event; stream order (gelu, then tanh, on "first"); data (relu reads what
        # gelu wrote): each from the earlier call's barrier to the later call's launch
        # ... and the event's record to the call the wait released (the wait began before
        # the record: the second stream waited from its start)
        assert sorted(arrows, key=str) == sorted([("record e0", None, "stream second", 1),
                                                  ("barrier", 0, "stream first", 2),
                                                  ("barrier", 0, "stream second", 1)], key=str)
        if name.endswith(".json"):  # as Perfetto reads them: each flow's start first
            assert validate_trace(json.loads((tmp_path / name).read_text())) == []
        else:
            assert proto_flows_start_first(path)
        trace = read_trace(path)
        assert trace.total_cycles == result.timing.cycles
        vector = [s for s in trace.slices if s.core == 0 and s.engine == "vector"]
        assert len(vector) == sum(c.result.per_core[0].tiles for c in result.calls
                                  if 0 in c.cores)  # tiles only, not the parent slices
    parents = [e for e in result.trace()["traceEvents"]
               if e.get("ph") == "X" and e["pid"] == 1 and e["args"].get("program_slice")]
    assert {e["name"] for e in parents} == {"fp_gelu_grad_s", "fp_tanh_grad_s"}


def test_overlapping_masks_on_concurrent_streams_wait_for_the_cores(ft78ne):
    n = 1 << 14
    ft78ne.zero(DDR, n, "fp32")
    ft78ne.zero(DDR + MIB, n, "fp32")
    prog = ft78ne.program()
    prog.stream().fp_relu_grad_s(DDR, DDR + MIB, DDR + 2 * MIB, n, 0xff)
    prog.stream().fp_relu_grad_s(DDR, DDR + MIB, DDR + 3 * MIB, n, 0x10)
    result = prog.run(numerics=False)
    a, b = result.calls
    assert b.start_cycle == a.end_cycle and b.waited_for == "cores busy"
    assert b.cores_held_by == 0
    assert result.critical_path[-1]["waited_for"].startswith("cores busy")


def test_races_are_errors_naming_both_calls_and_the_bytes(ft78ne):
    n = 1024
    fill(ft78ne, DDR, n, 1)
    fill(ft78ne, DDR + MIB, n, 2)
    prog = ft78ne.program()
    prog.stream("a").fp_relu_grad_s(DDR, DDR + MIB, DDR + 2 * MIB, n, 0x0f)
    prog.stream("b").fp_relu_grad_s(DDR + 2 * MIB + 2048, DDR + MIB, DDR + 3 * MIB, n // 2,
                                    0xf0)
    with pytest.raises(RaceError) as caught:
        prog.run()
    message = str(caught.value)
    assert "call 0 fp_relu_grad_s" in message and "call 1 fp_relu_grad_s" in message
    assert "'a'" in message and "'b'" in message
    assert f"[{DDR + 2 * MIB + 2048:#x}, {DDR + 2 * MIB + 4096:#x})" in message
    assert ft78ne.memory.unwritten(prog.calls[0].bound.output.span)  # nothing was computed
    ft78ne.zero(DDR + 2 * MIB, n, "fp32")  # the reader may run first: give it data
    result = prog.run(races="warn")
    assert any(w.startswith("race:") for w in result.warnings)


def test_reads_of_one_buffer_from_two_streams_are_no_race(ft78ne):
    n = 1024
    fill(ft78ne, DDR, n, 1)
    fill(ft78ne, DDR + MIB, n, 2)
    prog = ft78ne.program()
    prog.stream().fp_relu_grad_s(DDR, DDR + MIB, DDR + 2 * MIB, n, 0x0f)
    prog.stream().fp_tanh_grad_s(DDR, DDR + MIB, DDR + 3 * MIB, n, 0xf0)
    assert prog.run().warnings == []


def test_deadlocks_name_the_streams(ft78ne):
    prog = ft78ne.program()
    a, b = prog.stream("left"), prog.stream("right")
    ea, eb = prog.event("ea"), prog.event("eb")
    ft78ne.zero(DDR, 64, "fp32")
    a.wait(eb)
    a.fp_relu_grad_s(DDR, DDR, DDR + MIB, 64, 0x1)
    a.record(ea)
    b.wait(ea)
    b.fp_relu_grad_s(DDR, DDR, DDR + 2 * MIB, 64, 0x2)
    b.record(eb)
    with pytest.raises(DeadlockError, match="'left', 'right'"):
        prog.run()
    prog = ft78ne.program()
    s = prog.stream("lonely")
    s.wait(prog.event("never"))
    s.fp_relu_grad_s(DDR, DDR, DDR + MIB, 64, 0x1)
    with pytest.raises(DeadlockError, match="'lonely' waits for event 'never'"):
        prog.run()


def test_bad_calls_are_refused_when_enqueued(ft78ne):
    prog = ft78ne.program()
    s = prog.stream()
    with pytest.raises(ArgumentError, match="selects no core"):
        s.fp_relu_grad_s(DDR, DDR + MIB, DDR + 2 * MIB, 64, 0x100)
    with pytest.raises(ArgumentError, match="unknown operator"):
        s.fp_relu_grad_x(DDR, DDR + MIB, DDR + 2 * MIB, 64)
    with pytest.raises(ArgumentError, match="not an event of this program"):
        s.wait(ft78ne.program().event())
    with pytest.raises(ArgumentError, match="no calls"):
        prog.run()
    s.fp_relu_grad_s(DDR, DDR + MIB, DDR + 2 * MIB, 64)
    with pytest.raises(AddressError, match="holds no data"):
        prog.run()
    assert ft78ne.memory.unwritten(prog.calls[0].bound.output.span)


def test_result_is_json_and_says_where_time_went(ft78ne):
    import json
    ft78ne.zero(DDR, 1 << 14, "fp32")
    prog = ft78ne.program()
    s = prog.stream()
    s.fp_relu_grad_s(DDR, DDR, DDR + MIB, 1 << 14, 0x0f)
    s.fp_relu_grad_s(DDR + MIB, DDR, DDR + 2 * MIB, 1 << 14, 0x0f)
    result = prog.run()
    data = json.loads(json.dumps(result.to_dict()))
    assert data["cycles"] == result.cycles
    assert data["calls"][1]["waited_for"] == "stream order"
    assert data["calls"][1]["result"]["operator"] == "fp_relu_grad_s"
    assert set(data["per_core"]) == {"0", "1", "2", "3"}
    core = result.per_core[0]
    assert core["busy_cycles"] + core["idle_cycles"] == pytest.approx(result.timing.cycles)
    assert sum(w["utilisation"] for w in result.ddr["over_time"]) > 0
    with pytest.raises(ArgumentError, match="has run"):
        s.fp_relu_grad_s(DDR, DDR, DDR + MIB, 16)


def test_stream_methods_carry_the_c_signature(ft78ne):
    import inspect
    method = ft78ne.program().stream().fp_smoothl1lossgrad_s
    assert list(inspect.signature(method).parameters)[:7] == [
        "dy", "dx1", "x1", "x2", "length", "beta", "core_mask"]
    assert "Enqueue" in method.__doc__


def test_errors_are_dspsim_errors():
    assert issubclass(RaceError, DspSimError) and issubclass(DeadlockError, DspSimError)


def _short_and_long_calls(chip):
    """A call with short transfers (timed burst by burst) and one with long transfers
    (fluid), on disjoint cores of ``chip``, reading the same zeroed input."""
    for k in range(3):
        chip.zero(DDR + k * MIB, 1 << 18, "fp32")
    return (("fp_tanh_grad_s", (DDR, DDR + MIB, DDR + 2 * MIB, 1 << 16, 0x12)),
            ("fp_relu_grad_s", (DDR, DDR + MIB, DDR + 2 * MIB + MIB // 2, 1 << 18, 0xed)))


def _together(chip, calls):
    prog = chip.program()
    for name, args in calls:
        prog.stream().enqueue(name, *args)
    return prog.run(numerics=False)


def test_short_and_long_transfers_together_never_exceed_their_sequence(ft78ne):
    short, long = _short_and_long_calls(ft78ne)
    alone = [ft78ne.call(n, *a, numerics=False) for n, a in (short, long)]
    sequential = sum(r.cycles for r in alone)
    result = _together(ft78ne, (short, long))
    # each call is timed as it is alone (the short one burst by burst, the long one as
    # fluid flows with each short tile's path fill), the two sharing DDR and the pool
    assert [c.transfer_timing for c in result.calls] == [r.timing.transfer_timing for r in alone]
    assert [c.transfer_timing for c in result.calls] == ["bursts", "staggered"]
    assert result.bounds["DDR"] <= result.cycles <= sequential
    assert all(c.cycles >= r.cycles * 0.99 for c, r in zip(result.calls, alone, strict=True))


def test_the_ddr_counter_adds_burst_timed_calls_to_fluid_ones(ft78ne):
    # The counter once took the bursts' busy periods as steps of their own, sorted in among
    # the fluid flows' steps: the fluid call's end (a step to 0) silenced the burst-timed
    # call still running, and the program's DDR read 42% busy over time where its bytes
    # say 99.8%. While bursts move the link is full (they take what the flows leave).
    result = _together(ft78ne, _short_and_long_calls(ft78ne))
    assert [c.transfer_timing for c in result.calls] == ["bursts", "staggered"]
    windows = result.ddr["over_time"]
    over_time = sum(w["utilisation"] for w in windows) / len(windows)
    assert over_time == pytest.approx(result.ddr["utilisation"], rel=0.01)
    assert min(w["utilisation"] for w in windows) > 0.9  # both calls keep DDR busy throughout


@pytest.mark.parametrize("fidelity", ["fast", "detailed"])
def test_disjoint_calls_in_ddr_and_shared_sram_never_exceed_their_sequence(fidelity):
    # relu_grad 2^18 on cores 0-3 in DDR beside the same call on cores 4-7 in shared
    # SRAM: they share only FT78NE's controller pool (509,680 together against 502,823
    # one after the other while the pool kept eight of its ten controllers idle)
    n = 1 << 18

    def program(together):
        chip = dspsim.Chip("ft78ne")
        prog = chip.program()
        first = prog.stream()
        for base, mask in ((DDR, 0x0f), (SRAM, 0xf0)):
            chip.zero(base, n, "fp32")
            chip.zero(base + MIB, n, "fp32")
            (prog.stream() if together else first).enqueue(
                "fp_relu_grad_s", base, base + MIB, base + 2 * MIB, n, mask)
        return prog.run(numerics=False, fidelity=fidelity).cycles

    assert program(True) <= program(False)


def test_a_calls_timing_mode_does_not_depend_on_the_other_calls():
    # a short call (burst by burst alone) in shared SRAM on cores 0-1 and a long one
    # (fluid flows alone) in DDR on cores 2-3: MT7004's cores have engines of their own,
    # so the two share nothing and each takes exactly its cycles alone
    chip = dspsim.Chip("mt7004")
    calls = [(SRAM, 3000, 0x3), (DDR, 1 << 20, 0xc)]
    step = {SRAM: 64 * 1024, DDR: 8 * MIB}
    for base, n, _ in calls:
        chip.zero(base, n, "fp32")
        chip.zero(base + step[base], n, "fp32")
    args = [(base, base + step[base], base + 2 * step[base], n, mask) for base, n, mask in calls]
    alone = [chip.call("fp_relu_grad_s", *a, numerics=False) for a in args]
    prog = chip.program()
    for a in args:
        prog.stream().enqueue("fp_relu_grad_s", *a)
    result = prog.run(numerics=False)
    assert [c.transfer_timing for c in result.calls] == [r.timing.transfer_timing for r in alone]
    assert len({r.timing.transfer_timing for r in alone}) == 2
    assert [c.result.cycles for c in result.calls] == [r.cycles for r in alone]
    assert result.cycles == max(r.cycles for r in alone)


def _short_beside_long(chip_name, name, masks):
    """A short call and a long one in DDR on disjoint cores: each alone, then together."""
    chip = dspsim.Chip(chip_name)
    dtype = chip.resolve(name).dtype.numpy
    calls = [((DDR, DDR + 4 * MIB, DDR + 8 * MIB, 3000), masks[0]),
             ((DDR + 64 * MIB, DDR + 68 * MIB, DDR + 72 * MIB, 300_001), masks[1])]
    for args, _ in calls:
        chip.zero(args[0], args[3], dtype)
        chip.zero(args[1], args[3], dtype)
    alone = [chip.call(name, *args, core_mask=mask, numerics=False) for args, mask in calls]
    prog = chip.program()
    for args, mask in calls:
        prog.stream().enqueue(name, *args, core_mask=mask)
    return alone, prog.run(numerics=False)


def _waits_and_moves(call):
    """(cycles each DMA slice of a program's call waited beyond moving data, its data
    cycles)."""
    moves = [s for s in call.result.timing.slices if "data_cycles" in s.args]
    return ([s.end - s.start - s.args["data_cycles"] for s in moves],
            [s.args["data_cycles"] for s in moves])


def test_a_short_call_waits_behind_a_long_calls_transfers_on_a_shared_pool():
    # FT78NE: the long call's 80,000-byte transfers hold all ten controllers for some
    # 94,000 cycles each, and the short call's transfers queue behind them (a controller
    # works through one transfer at a time). Together they still take no longer than one
    # after the other; the short call's own cycles show the blocking, and so does its
    # trace: transfers that waited as long as a long transfer moves.
    alone, together = _short_beside_long("ft78ne", "fp_relu_grad_s", (0x07, 0xf8))
    assert together.cycles <= sum(r.cycles for r in alone)
    short, long = together.calls
    assert short.result.cycles > 20 * alone[0].cycles
    waits, _ = _waits_and_moves(short)
    _, long_moves = _waits_and_moves(long)
    assert max(waits) >= 0.95 * max(long_moves)
    # MT7004's cores have engines of their own: the same pair shares only DDR, and the
    # short call's transfers wait (their setup, their core's port) for less than half as
    # long as a long transfer moves
    alone, together = _short_beside_long("mt7004", "hp_relu_grad_s", (0x1, 0xe))
    short, long = together.calls
    assert together.cycles <= sum(r.cycles for r in alone)
    assert short.result.cycles < 5 * alone[0].cycles
    assert max(_waits_and_moves(short)[0]) < 0.5 * max(_waits_and_moves(long)[1])
