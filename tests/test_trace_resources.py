"""Traces show every shared resource and every dependency, with args rounded to what
they mean."""
from __future__ import annotations

import numpy as np
import pytest

import dspsim
from dspsim.traces.formats import read_model
from dspsim.traces.usage import resource_usage

DDR, MIB = 0x80000000, 1 << 20


def _call(chip_name: str, mask: int, n: int = 1 << 15):
    chip = dspsim.Chip(chip_name)
    for address in (DDR, DDR + MIB):
        chip.zero(address, n, "fp32")
    return chip, chip.call("fp_relu_grad_s", DDR, DDR + MIB, DDR + 2 * MIB, n, mask,
                           numerics=False)


def _counters(model):
    return {(model.tracks[s.track].group, model.tracks[s.track].name) for s in model.samples}


@pytest.mark.parametrize("suffix", [".pftrace", ".json"])
def test_a_counter_for_every_shared_resource(tmp_path, suffix):
    _, shared = _call("ft78ne", 0x3)
    model = read_model(shared.write_trace(tmp_path / f"ft{suffix}"))
    counters = _counters(model)
    assert ("FT78NE call", "DDR bandwidth") in counters
    for pool in ("edma3cc0.tc", "edma3cc1.tc", "edma3cc2.tc"):
        if pool == "edma3cc0.tc":
            assert ("FT78NE call", f"DMA {pool} busy") in counters
    assert {("core 0", "L2 port bandwidth"), ("core 1", "L2 port bandwidth")} <= counters
    _, own = _call("mt7004", 0xF)
    model = read_model(own.write_trace(tmp_path / f"mt{suffix}"))
    counters = _counters(model)
    for core in range(4):  # each core's own engines, in its group
        assert (f"core {core}", "DMA engines busy") in counters
        assert (f"core {core}", "L2 port bandwidth") in counters


def test_counters_integrate_to_the_bytes_and_never_exceed_the_pool(tmp_path):
    chip, result = _call("ft78ne", 0xFF)
    model = result.trace_model()
    usage = resource_usage(model)
    occupancy = [s.value for s in model.samples
                 if model.tracks[s.track].name == "DMA edma3cc0.tc busy"]
    assert max(occupancy) <= 2 and min(occupancy) >= 0 and occupancy[-1] == 0
    port = usage.ports[0]
    moved = port.integral(usage.total_cycles)
    expected = sum(s.args["bytes"] for s in model.slices
                   if s.args.get("bytes") and model.tracks[s.track].group == "core 0")
    assert moved == pytest.approx(expected)


def test_args_are_rounded_to_what_they_mean(tmp_path):
    _, result = _call("ft78ne", 0xFF)
    model = read_model(result.write_trace(tmp_path / "t.pftrace"))
    for piece in model.slices:
        for key, value in piece.args.items():
            if isinstance(value, float):
                assert round(value, 2) == value, (key, value)
    for sample in model.samples:
        assert round(sample.value, 6) == sample.value


def test_flows_for_stream_order_and_data(tmp_path):
    chip = dspsim.Chip("ft78ne")
    n = 4096
    for address in (DDR, DDR + MIB):
        chip.write(address, np.ones(n, np.float32))
    prog = chip.program()
    a, b = prog.stream("a"), prog.stream("b")
    a.fp_relu_grad_s(DDR, DDR + MIB, DDR + 2 * MIB, n, 0x0F)       # call 0 writes t
    a.fp_tanh_grad_s(DDR, DDR + MIB, DDR + 3 * MIB, n, 0x0F)       # call 1: stream order
    b.wait(a.record())
    b.fp_gelu_grad_s(DDR + 2 * MIB, DDR + MIB, DDR + 4 * MIB, n, 0xF0)  # call 2 reads t
    result = prog.run()
    assert result.data_dependencies == [{"writer": 0, "reader": 2, "operand": "src0"}]
    for name in ("p.pftrace", "p.json"):
        model = read_model(result.write_trace(tmp_path / name))
        pairs = sorted((model.slices[f.source].args.get("call"), model.slices[f.source].name,
                        model.slices[f.target].args.get("call"), model.slices[f.target].name)
                       for f in model.flows if model.slices[f.source].name == "barrier")
        assert pairs == [(0, "barrier", 1, "launch"), (0, "barrier", 2, "launch")], name
