"""The fast model against the detailed model (DMA bursts, every vector iteration).

The grid of calls lives in ``benchmarks/fidelity_grid.py`` so that the benchmark reports
the same cases that are checked here.
"""
import importlib.util
import math
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import dspsim
from dspsim.sim.engine import machine
from dspsim.sim.engine.datapath import BURST_BUDGET, FEWEST_FLUID_BURSTS, ONE_CORE_MIN_BURSTS
from dspsim.sim.engine.detailed import OUTSTANDING_BURSTS, LinkArbiter, _BurstTransfer
from dspsim.sim.engine.machine import FLUID_MIN_BURSTS
from dspsim.sim.engine.model import CountingEnvironment
from dspsim.sim.engine.network import Link
from dspsim.sim.engine.settle import LOCKSTEP_BURSTS, SettleWatch, Unsettled
from dspsim.traces.formats import validate_trace


def _load_grid():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "fidelity_grid.py"
    spec = importlib.util.spec_from_file_location("fidelity_grid", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


GRID = _load_grid()
CASES = GRID.grid()
#: fast within this of detailed, every case (the staggered regime's cases included)
TOLERANCE = GRID.TARGET
STAGGERED = GRID.staggered_grid()
#: cases found beyond the grid's draw, held beside it
BEYOND = list(GRID.POOL_CROWD_REGIME + GRID.ENGINE_LOCKSTEP_REGIME
              + GRID.PORT_BOUND_POOL_REGIME)


def test_the_grid_spans_operators_chips_masks_lengths_and_regions():
    assert len(CASES) >= 50
    assert {c.chip for c in CASES} == {"ft78ne", "mt7004"}
    assert len({c.name.split("_", 1)[1].rsplit("_", 1)[0] for c in CASES}) >= 5
    assert len({c.core_mask for c in CASES}) >= 5
    assert {c.region for c in CASES} == {"ddr", "shared_sram", "l2"}
    random_chips = [c for c in CASES if c.changes]
    assert len(random_chips) >= 20 and max(c.length for c in random_chips) > 1 << 18
    pools = {any(key == "dma.controllers" and value for key, value in c.changes)
             for c in random_chips}
    assert pools == {True, False}  # shared controller pools and per-core engines


@pytest.mark.parametrize("case", [
    pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=GRID.KNOWN_MISSES[c.label]))
    if c.label in GRID.KNOWN_MISSES else c for c in CASES + STAGGERED + BEYOND],
    ids=[c.label.replace(" ", "-") for c in CASES + STAGGERED + BEYOND])
def test_fast_is_within_1_percent_of_detailed(case):
    comparison = GRID.compare(case)
    assert abs(comparison.difference) <= TOLERANCE, (
        f"{case.label}: fast {comparison.fast_cycles} ({comparison.fast_dma}) vs detailed "
        f"{comparison.detailed_cycles}")


def test_the_grid_exercises_every_way_the_fast_model_times_dma():
    # fluid flows, staggered fluid flows for short transfers in large calls, and bursts
    # must all be among the cases compared above (each within the tolerance there)
    models = {}
    for case in GRID.random_cases():
        if case.region != "l2":
            model = GRID.run_case(case, "fast").timing.transfer_timing
            models[model] = models.get(model, 0) + 1
    assert set(models) == {"fluid", "staggered", "bursts"}
    assert min(models.values()) >= 3, models


def _call(chip_name, name, length, mask, fidelity, numerics=False):
    chip = dspsim.Chip(chip_name)
    cname = chip.resolve(name)
    from dspsim.placement import c_arguments, place_operands
    addresses = place_operands(chip.config, cname, length)
    rng = np.random.default_rng(3)
    for operand in cname.operator.inputs:
        chip.write(addresses[operand], rng.standard_normal(length).astype(cname.dtype.numpy))
    args = c_arguments(cname.operator, addresses, length)
    extra = {} if mask is None else {"core_mask": mask}
    result = chip.call(name, *args, numerics=numerics, fidelity=fidelity, **extra)
    return chip, addresses, result


def test_detailed_moves_every_burst_and_issues_every_iteration():
    length = 1 << 16
    _, _, r = _call("ft78ne", "fp_relu_grad_s", length, 0xff, "detailed")
    burst = dspsim.Chip("ft78ne").config.dma.burst_bytes
    bursts = 3 * math.ceil(length * 4 / 8 / burst) * 8  # three operands, eight cores
    iterations = length // r.lanes
    # every burst crosses two links (one event each); every iteration is one event
    assert r.scheduled_events >= 2 * bursts + iterations
    assert r.metadata["fidelity"] == "detailed"
    fast = _call("ft78ne", "fp_relu_grad_s", length, 0xff, "fast")[2]
    assert fast.scheduled_events < r.scheduled_events / 10


def test_detailed_results_are_complete_numerics_included():
    chip, addresses, r = _call("mt7004", "hp_gelu_grad_s", 3000, 0x7, "detailed", numerics=True)
    fast_chip, fast_addresses, fast = _call("mt7004", "hp_gelu_grad_s", 3000, 0x7, "fast",
                                            numerics=True)
    out = chip.read(addresses["dst"], 3000, "fp16")
    assert np.array_equal(out, fast_chip.read(fast_addresses["dst"], 3000, "fp16"),
                          equal_nan=True)
    assert r.bytes_read == fast.bytes_read and r.bytes_written == fast.bytes_written
    assert [(c.start, c.stop, c.tiles) for c in r.per_core] == \
        [(c.start, c.stop, c.tiles) for c in fast.per_core]
    assert r.cycles >= r.roofline_cycles
    trace = r.trace()
    assert validate_trace(trace) == []
    assert trace["metadata"]["fidelity"] == "detailed"
    counter = [e for e in trace["traceEvents"] if e["ph"] == "C" and e["name"] == "DDR bandwidth"]
    assert counter and max(e["args"]["GB/s"] for e in counter) == pytest.approx(20.48, rel=1e-3)


def test_detailed_is_deterministic():
    first = _call("ft78ne", "fp_smoothl1lossgrad_s", 5000, 0x3f, "detailed")[2]
    second = _call("ft78ne", "fp_smoothl1lossgrad_s", 5000, 0x3f, "detailed")[2]
    assert first.cycles == second.cycles
    assert first.trace() == second.trace()


def test_unknown_fidelity_is_refused_before_anything_is_written(ft78ne):
    ft78ne.write(0xA0000000, np.ones(16, np.float32))
    ft78ne.write(0xA1000000, np.ones(16, np.float32))
    ft78ne.write(0xB0000000, np.full(16, 7, np.float32))
    with pytest.raises(dspsim.ArgumentError, match="fidelity='exact'.*'fast', 'detailed'"):
        ft78ne.fp_relu_grad_s(0xA0000000, 0xA1000000, 0xB0000000, 16, 0xff, fidelity="exact")
    assert (ft78ne.read(0xB0000000, 16, "fp32") == 7).all()
    r = ft78ne.fp_relu_grad_s(0xA0000000, 0xA1000000, 0xB0000000, 16, 0xff, fidelity="detailed")
    assert r.metadata["fidelity"] == "detailed"
    assert (ft78ne.read(0xB0000000, 16, "fp32") == 1).all()


class _Clock:
    """The two things the burst classes use from a model: its environment and ``after``."""

    def __init__(self):
        self.env = CountingEnvironment()

    def after(self, delay, then):
        self.env.timeout(delay).callbacks.append(then)


def _bursts_on_one_link(sizes, capacity=10.0, engine_rate=1e9, burst=100):
    clock = _Clock()
    link = LinkArbiter(clock, Link("ddr", capacity))
    finished = {}
    for index, nbytes in enumerate(sizes):
        _BurstTransfer(clock, (link,), nbytes, burst, engine_rate,
                       lambda index=index: finished.setdefault(index, clock.env.now)).issue()
    clock.env.run()
    return finished


def test_a_link_grants_waiting_transfers_round_robin():
    # two transfers of four 100-byte bursts on a 10 B/cycle link: the bursts alternate,
    # so the first ends one burst (10 cycles) before the second, not 40 cycles before
    assert _bursts_on_one_link([400, 400]) == {0: 70.0, 1: 80.0}
    # a partial last burst takes its own bytes' time
    assert _bursts_on_one_link([250]) == {0: 25.0}


def test_an_engine_never_outruns_its_own_bandwidth():
    # 1000 bytes at 2 B/cycle through a fast link: 500 cycles, though the link would pass
    # the last burst sooner
    assert _bursts_on_one_link([1000], capacity=1000.0, engine_rate=2.0) == {0: 500.0}


def test_outstanding_bursts_bound_what_one_transfer_queues():
    clock = _Clock()
    link = LinkArbiter(clock, Link("ddr", 1.0))
    transfer = _BurstTransfer(clock, (link,), 100 * 100, 100, math.inf, lambda: None)
    transfer.issue()
    assert transfer.in_flight == OUTSTANDING_BURSTS


def test_short_transfers_use_bursts_in_the_fast_model_and_long_ones_fluid_flows():
    chip = dspsim.Chip("ft78ne")
    burst = chip.config.dma.burst_bytes
    tile = FLUID_MIN_BURSTS * burst  # bytes: one tile of exactly the minimum

    def model(length, tile_bytes):
        for address in (0xA0000000, 0xA1000000):
            chip.zero(address, length, "fp32")
        return chip.fp_relu_grad_s(0xA0000000, 0xA1000000, 0xB0000000, length, 0xff,
                                   numerics=False, tile_bytes=tile_bytes).timing.transfer_timing

    assert model(1 << 17, tile - 16) == "bursts"
    assert model(1 << 17, tile) == "fluid"
    # too many bursts to move one by one: fluid flows, with the cores staggered
    assert model(1 << 20, tile - 16) == "staggered"


def _l_relu_on(mask, fidelity, tile_bytes, length=300_001):
    """FT78NE ``fp_l_relu_s`` over ``length`` elements in DDR on ``mask``, timing only,
    with the tile fixed at ``tile_bytes``."""
    chip = dspsim.Chip("ft78ne")
    chip.zero(0xA0000000, length, "fp32")
    return chip.fp_l_relu_s(0xA0000000, 0xB0000000, length, core_mask=mask, numerics=False,
                            tile_bytes=tile_bytes, fidelity=fidelity)


def test_a_call_on_one_core_with_short_transfers_goes_burst_by_burst_whatever_its_size():
    # One core's load and store of short tiles share DDR: as fluid flows they ended
    # together, where round-robin ends the load sooner (774,223 cycles staggered against
    # 755,481 detailed, +2.48%). One pipeline repeats itself within a few tiles, so the
    # steady state skips most of it and the burst budget buys little. From
    # ONE_CORE_MIN_BURSTS bursts a transfer on, flows are close and cheaper.
    def timed_call(fidelity, tile_bytes=256):
        return _l_relu_on(0x1, fidelity, tile_bytes)

    fast, detailed = timed_call("fast"), timed_call("detailed")
    assert fast.timing.transfer_timing == "bursts"
    assert fast.timing.solved_cycles > 0.9 * fast.cycles
    assert fast.cycles == pytest.approx(detailed.cycles, rel=1e-6)
    burst = dspsim.Chip("ft78ne").config.dma.burst_bytes
    long = ONE_CORE_MIN_BURSTS * burst
    assert timed_call("fast", long).timing.transfer_timing == "staggered"
    assert timed_call("fast", long - burst).timing.transfer_timing == "bursts"


def test_transfers_of_a_burst_or_two_go_burst_by_burst_on_any_number_of_cores():
    # Two cores moving 256-byte tiles (two bursts) through FT78NE's pool: as staggered
    # fluid flows their transfers ended together and kept the cores in lock-step,
    # 424,739 cycles against 378,298 detailed (+12.3%); burst by burst the round-robin
    # ends them a burst apart, as detailed does, for no more events than flows.
    burst = dspsim.Chip("ft78ne").config.dma.burst_bytes
    shortest = FEWEST_FLUID_BURSTS * burst
    fast, detailed = _l_relu_on(0x3, "fast", shortest), _l_relu_on(0x3, "detailed", shortest)
    assert fast.timing.transfer_timing == "bursts"
    assert fast.cycles == pytest.approx(detailed.cycles, rel=1e-6)
    assert _l_relu_on(0xff, "fast", shortest).timing.transfer_timing == "bursts"


def test_a_large_call_whose_short_transfers_settle_goes_burst_by_burst():
    # Two cores moving 512-byte tiles (four bursts): as staggered flows their transfers
    # ended together and the cores stayed in lock-step, 7.3% above detailed. Burst by
    # burst the two pipelines settle within a few tiles and the steady state advances
    # them, so the call is timed that way despite its size.
    fast, detailed = _l_relu_on(0x3, "fast", 512), _l_relu_on(0x3, "detailed", 512)
    burst = dspsim.Chip("ft78ne").config.dma.burst_bytes
    assert 2 * 300_001 * 4 / burst > BURST_BUDGET and LOCKSTEP_BURSTS * burst >= 512
    assert fast.timing.transfer_timing == "bursts"
    assert fast.timing.solved_cycles > 0.9 * fast.cycles
    assert fast.cycles == pytest.approx(detailed.cycles, rel=1e-6)


def test_a_large_call_whose_bursts_never_settle_is_timed_as_staggered_flows():
    # FT78NE's pool serving eight cores never comes back to a state burst by burst: the
    # trial gives up after SETTLE_TILES tiles, and the call is timed as staggered flows
    length = 1 << 18
    chip = dspsim.Chip("ft78ne")
    for address in (0xA0000000, 0xA1000000):
        chip.zero(address, length, "fp32")
    result = chip.fp_gelu_grad_s(0xA0000000, 0xA1000000, 0xB0000000, length, 0xff,
                                 numerics=False, tile_bytes=512)
    assert result.timing.transfer_timing == "staggered"
    assert LOCKSTEP_BURSTS * chip.config.dma.burst_bytes >= 512


def test_the_settle_watch_gives_up_only_after_its_tiles_without_a_period():
    first, other = SimpleNamespace(next_compute=0), SimpleNamespace(next_compute=0)
    periods = [0]
    watch = SettleWatch([first, other], lambda: periods[0], within=4)
    for tile in range(1, 4):
        first.next_compute = tile
        watch.tile_computed(first)
    other.next_compute = 40
    watch.tile_computed(other)  # only the first pipeline counts
    periods[0] = 3  # the steady state advanced: the count starts again from here
    first.next_compute = 30
    watch.tile_computed(first)
    first.next_compute = 33
    watch.tile_computed(first)
    first.next_compute = 34
    with pytest.raises(Unsettled):
        watch.tile_computed(first)


def test_a_program_times_a_call_as_it_settles_alone():
    # the program's call is timed as the call alone is, burst by burst once it settles
    case = GRID.Case("ft78ne", "fp_l_relu_s", 300_001, 0x3, "ddr",
                     (("tiling", {"policy": "fixed", "tile_bytes": 512}),))
    alone = GRID.run_case(case, "fast")
    machine.SETTLED.clear()  # found out again for the program, from nothing remembered
    chip = case.make_chip()
    chip.zero(0xA0000000, 300_001, "fp32")
    program = chip.program()
    program.stream().enqueue("fp_l_relu_s", 0xA0000000, 0xB0000000, 300_001, core_mask=0x3)
    result = program.run(numerics=False)
    assert alone.timing.transfer_timing == "bursts"
    assert [c.transfer_timing for c in result.calls] == ["bursts"]
    assert result.calls[0].cycles == pytest.approx(alone.timing.cycles, rel=1e-9)
