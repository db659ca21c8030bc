"""A steady state advanced in closed form leaves the trace that simulating it would: the
skipped periods' slices neither overlap on an engine nor outnumber a pool's engines, and
each core's busy cycles are its slices'."""
from __future__ import annotations

from itertools import pairwise

import pytest

import dspsim
from dspsim.sim.engine.model import Slice
from dspsim.traces.build import _engine_slice
from dspsim.traces.formats import validate_trace
from dspsim.traces.usage import pool_of, resource_usage

DDR, MIB = 0x80000000, 1 << 20


# the tile the search chooses, and 264 tiles a core: there the two cores' phases slide
# against each other by 3.4 cycles a period, and a skip's slices must slide with them (copied
# at the bare period, each skip's last store overlapped the next one on its controller)
@pytest.mark.parametrize("tile_bytes", [None, 7952], ids=["chosen tile", "sliding phases"])
def test_skipped_periods_keep_every_engine_to_one_transfer_at_a_time(tile_bytes):
    # timing only, and long enough for whole periods to be skipped (the solver simulates
    # the fill and the drain; two cores on FT78NE's shared pools skip from about 2^19)
    chip, n = dspsim.Chip("ft78ne"), 1 << 20
    for address in (DDR, DDR + 64 * MIB):
        chip.zero(address, n, "fp32")
    result = chip.call("fp_relu_grad_s", DDR, DDR + 64 * MIB, DDR + 128 * MIB, n, 0x3,
                       numerics=False, tile_bytes=tile_bytes)
    if tile_bytes is not None:
        assert result.timing.tiling.tiles_per_core == 264
    timing = result.timing
    assert timing.solved_cycles > 0.25 * timing.cycles  # the steady state was skipped
    transfers = _engines_hold_one_transfer_at_a_time(timing)
    # each core's busy cycles: while any of its slices of that kind was under way
    for (core, kind), (busy, union) in _busy_and_slices(timing).items():
        assert union == pytest.approx(busy, rel=1e-9), (core, kind)
    # the trace's pools: never more engines busy than there are
    usage = resource_usage(result.trace_model())
    counts = {pool["name"]: pool["engines"] for pool in usage.resources["dma_pools"]}
    assert set(usage.pools) == {pool_of(engine, True) for engine in transfers}
    for pool, occupancy in usage.pools.items():
        assert max(occupancy.values) <= counts[pool], pool


def _busy_and_slices(timing) -> dict[tuple[int, str], tuple[float, float]]:
    """Each core's busy cycles of each kind, and the cycles while any of its slices of that
    kind was under way."""
    spans: dict[tuple[int, str], list[tuple[float, float]]] = {}
    for piece in timing.slices:
        if piece.core >= 0:
            spans.setdefault((piece.core, piece.engine.partition(".")[0]), []).append(
                (piece.start, piece.end))
    found = {}
    for core in timing.cores:
        for kind, busy in core.busy.items():
            union, reach = 0.0, float("-inf")
            for start, end in sorted(spans[(core.core, kind)]):
                union += max(0.0, end - max(start, reach))
                reach = max(reach, end)
            found[(core.core, kind)] = (busy, union)
    return found


def _engines_hold_one_transfer_at_a_time(timing) -> dict[str, list[tuple[float, float]]]:
    """Check that no DMA engine moves two transfers' data at once; the data intervals by
    engine."""
    transfers: dict[str, list[tuple[float, float]]] = {}
    for piece in timing.slices:
        engine = piece.args.get("dma_engine") if piece.core >= 0 else None
        if engine:
            data = piece.args["data_cycles"]
            assert 0 <= data <= piece.end - piece.start
            transfers.setdefault(engine, []).append((piece.end - data, piece.end))
    for engine, moved in transfers.items():
        moved.sort()
        assert all(a[1] <= b[0] + 1e-6 for a, b in pairwise(moved)), engine
    return transfers


def test_a_rounded_transfer_starts_its_data_no_earlier_than_the_one_before_ends():
    # one engine hands over at 17110.2751: the first transfer's end rounds up to
    # 17110.28, and the next one's data, 18606.3898 cycles to 35716.6649, must not round
    # to 18606.39 from 35716.66 and so start at 17110.27
    handover, end = 17110.2751, 35716.6649
    args = {"bytes": 4096, "dma_engine": "edma3cc0.tc.0"}
    first = Slice(0, "dma-in.0", "src0[0]", 300.0, handover,
                  {**args, "data_cycles": handover - 500.0})
    second = Slice(1, "dma-in.0", "src0[0]", 360.0, end, {**args, "data_cycles": end - handover})
    first, second = (_engine_slice(0, piece, dict(piece.args)) for piece in (first, second))
    assert second.end - second.args["data_cycles"] >= first.end
    assert round(second.args["data_cycles"], 2) == second.args["data_cycles"]


def _orbiting_call(**overrides):
    """MT7004 gelu_grad over 2^20 elements on three cores at 4,096-element tiles, timed as
    staggered flows (32 bursts a transfer: too long to be tried burst by burst): the cores
    settle into an orbit whose phases jitter by less than 1e-3 of its period from one
    period to the next, so no two snapshots agree to the exact tolerance."""
    chip, n = dspsim.Chip("mt7004"), 1 << 20
    for address in (DDR, DDR + 64 * MIB):
        chip.zero(address, n, "fp16")
    return chip.call("hp_gelu_grad_s", DDR, DDR + 64 * MIB, DDR + 128 * MIB, n, 0x7,
                     numerics=False, tile_bytes=8192, **overrides)


def test_an_orbit_is_skipped_and_costs_no_more_than_its_band(monkeypatch):
    from dspsim.sim.engine import steady

    band = steady.ORBIT_BAND
    call = _orbiting_call()
    orbit = call.timing
    assert orbit.transfer_timing == "staggered"
    assert orbit.solved_cycles > 0.25 * orbit.cycles
    # the repeated stretches join with a jump of phase, which the trace absorbs: no
    # engine or track holds two transfers at once, as in a simulated stretch
    assert validate_trace(call.trace()) == []
    _engines_hold_one_transfer_at_a_time(orbit)
    for where, (busy, union) in _busy_and_slices(orbit).items():  # off by the jumps only
        assert union == pytest.approx(busy, rel=band), where
    monkeypatch.setattr(steady, "ORBIT_BAND", 0.0)  # exact repeats only
    assert _orbiting_call().timing.solved_cycles == 0
    monkeypatch.setattr(steady.SteadyState, "tile_computed", lambda self, pipeline: None)
    simulated = _orbiting_call().timing
    assert simulated.solved_cycles == 0
    assert orbit.cycles == pytest.approx(simulated.cycles, rel=band)
    assert orbit.cycles != simulated.cycles  # it did leave the jitter out


@pytest.mark.parametrize("chip_name, operator, dtype, mask, tile_bytes", [
    ("ft78ne", "fp_relu_grad_s", "fp32", 0x3, 2048),  # two cores through the pool
    ("mt7004", "hp_relu_grad_s", "fp16", 0x1, 512),  # one core's own engines
])
def test_burst_timed_periods_skipped_give_the_simulated_cycles(monkeypatch, chip_name,
                                                               operator, dtype, mask,
                                                               tile_bytes):
    # bursts in flight are pending events of their own (no wrapper): the steady state
    # still reads them, skips whole periods of a burst-timed call, and lands on the
    # cycles of simulating every burst
    from dspsim.sim.engine import steady

    def timed():
        chip, n = dspsim.Chip(chip_name), 1 << 16
        for address in (DDR, DDR + 64 * MIB):
            chip.zero(address, n, dtype)
        return chip.call(operator, DDR, DDR + 64 * MIB, DDR + 128 * MIB, n, mask,
                         numerics=False, tile_bytes=tile_bytes).timing

    solved = timed()
    assert solved.transfer_timing == "bursts"
    assert solved.solved_cycles > 0.5 * solved.cycles
    monkeypatch.setattr(steady.SteadyState, "tile_computed", lambda self, pipeline: None)
    simulated = timed()
    assert simulated.solved_cycles == 0
    assert solved.cycles == pytest.approx(simulated.cycles, rel=steady.TOLERANCE)
