"""The shared transfer-controller pool: which controller a transfer gets, and why.

FT78NE describes its DMA as the C6678's EDMA3 pool: two 16 B/cycle controllers
(EDMA3CC0) and eight of 5.33 B/cycle (EDMA3CC1, EDMA3CC2). Eight cores streaming from
shared SRAM get 8 B/cycle each of its 64 B/cycle, or a third of their 16 B/cycle L2 port
per transfer: a slow controller delivers that as well as a fast one, so all ten carry
traffic, as they do on the hardware.
"""
import collections

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dspsim
from dspsim.placement import c_arguments
from dspsim.sim.engine import pool as pool_module
from dspsim.sim.engine.network import Flow, Link, max_min_rates
from dspsim.sim.engine.pool import Engine, EnginePool, fair_level


def _sram_call(length, mask, fidelity="fast", chip="ft78ne", name="fp_relu_grad_s"):
    machine = dspsim.Chip(chip)
    cname = machine.resolve(name)
    operands = cname.operator.inputs + (cname.operator.output,)
    stride = -(-length * cname.dtype.itemsize // 256) * 256
    base = machine.config.level("shared_sram").base_address
    addresses = {operand: base + i * stride for i, operand in enumerate(operands)}
    for operand in cname.operator.inputs:
        machine.write(addresses[operand], np.zeros(length, cname.dtype.numpy))
    args = c_arguments(cname.operator, addresses, length, {})
    return machine.call(name, *args, core_mask=mask, numerics=False, fidelity=fidelity)


def _controllers(result):
    return collections.Counter(s.args["dma_engine"] for s in result.timing.slices
                               if "dma_engine" in s.args)


@pytest.mark.parametrize("fidelity", ["fast", "detailed"])
def test_eight_cores_from_shared_sram_use_all_ten_controllers(fidelity):
    result = _sram_call(1 << 16, 0xff, fidelity)
    used = _controllers(result)
    assert len(used) == 10, used
    # every controller carries a real part of the traffic, not a stray transfer
    assert min(used.values()) >= 0.03 * sum(used.values()), used


def test_both_fidelities_make_the_same_choices_where_both_time_bursts():
    fast, detailed = _sram_call(1 << 16, 0xff, "fast"), _sram_call(1 << 16, 0xff, "detailed")
    assert fast.timing.transfer_timing == "bursts"
    assert _controllers(fast) == _controllers(detailed)
    assert fast.cycles == detailed.cycles


def test_shared_sram_scales_to_eight_cores_near_the_roofline():
    # before the pool weighed link shares, 8 cores reached 37% of this roofline and
    # stopped speeding up at 3 cores (133,627 cycles on 3, 133,820 on 8)
    cycles = {k: _sram_call(1 << 18, (1 << k) - 1) for k in (1, 2, 4, 8)}
    steps = [cycles[k].cycles for k in (1, 2, 4, 8)]
    assert steps == sorted(steps, reverse=True), steps
    eight = cycles[8]
    assert eight.roofline_cycles / eight.cycles >= 0.9, (eight.cycles, eight.roofline_cycles)


def _pool(rates, link=64.0, port=16.0):
    clock = [0.0]
    engines = [Engine(f"tc{i}", rate, frozenset({"ddr", "shared_sram"}))
               for i, rate in enumerate(rates)]
    pool = EnginePool(engines, lambda: clock[0], {"ddr": link, "shared_sram": link}, port)
    return pool, clock


def test_a_free_slow_controller_takes_a_transfer_it_ends_sooner_than_a_wait():
    pool, _ = _pool([16.0, 16.0, 8.0], link=24.0)
    granted = []
    for core in range(4):
        pool.request(core, "shared_sram", 4096, lambda e, c=core: granted.append((c, e.name)))
    # cores 0 and 1 take the fast controllers (16 and 12 B/cycle of the 24 B/cycle link:
    # done by 256 and 341); core 2 would get 8 on either (the link's share beside them):
    # on the slow one from now, 512 cycles; after the first fast one frees, 597
    assert {name for _, name in granted[:2]} == {"tc0", "tc1"}
    assert granted[2] == (2, "tc2")
    assert [w.core for w in pool.waiting] == [3]


def test_a_transfer_waits_for_a_busy_fast_controller_when_a_slow_one_is_far_slower():
    pool, clock = _pool([16.0, 0.5], port=64.0)
    granted = []
    pool.request(0, "ddr", 1600, granted.append)  # tc0 for 100 cycles
    pool.request(1, "ddr", 1600, granted.append)  # tc1 would take 3,200: wait for tc0
    assert [e.name for e in granted] == ["tc0"]
    clock[0] = 100.0
    pool.release(granted[0])
    assert [e.name for e in granted] == ["tc0", "tc0"]


def test_a_transfer_waits_for_a_fast_controller_running_past_its_estimated_end():
    # one core's 16 B/cycle port: a fast controller's transfer estimated to end by now
    # still runs (bursts end it a few cycles late). Beside it, any transfer gets 8 B/cycle
    # of the port, as much as the free slow controller's own rate; once it has ended, the
    # fast controller gives the whole port. The wait is a few cycles, the slow controller
    # would take twice as long.
    pool, clock = _pool([32.0, 32.0, 8.0], link=41.0, port=16.0)
    granted = []
    pool.request(0, "ddr", 12224, granted.append)
    first = granted[0]
    assert first.rate == 32.0 and first.free_at == pytest.approx(764.0)
    clock[0] = first.free_at + 2.0  # running past its estimate, not yet released
    pool.request(0, "ddr", 12224, granted.append)
    assert len(granted) == 1, f"took {granted[-1].name} beside the transfer about to end"
    clock[0] += 2.0
    pool.release(first)
    assert len(granted) == 2 and granted[1].rate == 32.0, granted


def test_fair_level_is_the_water_filling_share_of_one_more_flow():
    assert fair_level(12.0, [], 16.0) == 12.0
    assert fair_level(12.0, [2.0], 16.0) == 10.0  # the capped flow leaves the rest
    assert fair_level(12.0, [16.0, 16.0], 16.0) == 4.0
    assert fair_level(12.0, [16.0], 3.0) == 3.0  # its own cap binds first


@given(capacity=st.floats(0.5, 100.0), others=st.lists(st.floats(0.1, 100.0), max_size=8),
       cap=st.floats(0.1, 100.0))
def test_fair_level_is_the_flow_networks_share_on_one_link(capacity, others, cap):
    # the pool's closed form for one link must agree with the flow network's water-filling
    link = Link("link", capacity)
    flows = [Flow(1.0, (link,), rate, None) for rate in others + [cap]]
    max_min_rates(flows)
    assert fair_level(capacity, others, cap) == pytest.approx(flows[-1].rate, rel=1e-9)


def test_the_pools_memo_of_rates_stays_bounded_as_capacities_change(monkeypatch):
    """A calibration changes the links' capacities call after call: the rates the pools
    remember for the process are kept for a few capacities only."""
    monkeypatch.setattr(pool_module, "_CAPACITIES_LIMIT", 2)
    for step in range(10):
        engines = [Engine("tc", 4.0, frozenset({"ddr"}))]
        held = EnginePool(engines, lambda: 0.0, {"ddr": 8.0 + step}, 4.0)
        held.request(0, "ddr", 1024.0, lambda engine: None)
        assert len(pool_module._RATES_BY_CAPACITIES) <= 3


def test_a_pools_memo_of_rates_stays_bounded_while_it_runs(monkeypatch):
    """A long program keeps one pool: its memo of rates starts afresh past its limit."""
    monkeypatch.setattr(pool_module, "_RATE_MEMO_LIMIT", 2)
    clock = [0.0]
    engines = [Engine(f"tc{k}", 1.0 + k, frozenset({"ddr"})) for k in range(4)]
    held = EnginePool(engines, lambda: clock[0], {"ddr": 3.0}, 2.0)
    granted: list[Engine] = []
    for core in range(4):
        held.request(core, "ddr", 1024.0, granted.append)
        assert len(held._rate_memo) <= 3
    for engine in granted:
        clock[0] += 1.0
        held.release(engine)
        assert len(held._rate_memo) <= 3
