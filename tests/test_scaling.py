"""Scaling curves follow the chip, not the tile policy.

On the packaged chips (every operator, fp32 on FT78NE and fp16 on MT7004) and on random
chips: one more core is never slower by more than 1% (n >= 2^14); one more vector per
core is never faster by more than 1% (n >= 2^12, tile boundaries included); a larger L2
is never slower by more than 1%; and at n >= 2^20 every call reaches 90% of its roofline
bound on every core count.
"""
import copy
import random
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_properties import RAW, chip_descriptions

import dspsim
from dspsim.sim.chip.load import config_from_dict
from dspsim.sim.engine.tiling import partition

CORE_STEP = 1.01  # one more core: at most 1% slower
LENGTH_STEP = 0.99  # one more vector per core: at most 1% faster
ROOFLINE_SHARE = 0.90  # share of the roofline bound reached at n >= 2^20

PACKAGED = [("ft78ne", "fp_"), ("mt7004", "hp_")]


def timed(chip, name, length, cores):
    """Cycles of a timing-only call of ``name`` on the lowest ``cores`` cores."""
    cname = chip.resolve(name)
    dtype = cname.dtype.numpy
    stride = -(-length * cname.dtype.itemsize // 4096) * 4096
    base = chip.config.ddr.base_address
    operands = cname.operator.inputs + (cname.operator.output,)
    addresses = {operand: base + i * stride for i, operand in enumerate(operands)}
    for operand in cname.operator.inputs:
        chip.zero(addresses[operand], length, dtype)
    args = [addresses.get(a, length if a == "length" else None) for a in cname.operator.args]
    return chip.call(name, *args, core_mask=(1 << cores) - 1, numerics=False)


def shared_operators(chip, prefix):
    return sorted(n for n in chip.operator_names() if n.startswith(prefix) and n.endswith("_s"))


OPERATORS = [(chip_name, name) for chip_name, prefix in PACKAGED
             for name in shared_operators(dspsim.Chip(chip_name), prefix)]
CHIPS = {}


def packaged(chip_name):
    if chip_name not in CHIPS:
        CHIPS[chip_name] = dspsim.Chip(chip_name)
    return CHIPS[chip_name]


@pytest.mark.parametrize("chip_name,name", OPERATORS)
def test_one_more_core_is_never_slower(chip_name, name):
    chip = packaged(chip_name)
    length = random.Random(f"cores {name}").randint(1 << 14, 1 << 20)
    cycles = [timed(chip, name, length, k).cycles for k in range(1, chip.config.cores + 1)]
    for k, (fewer, more) in enumerate(pairwise(cycles), 1):
        assert more <= CORE_STEP * fewer, f"{name} n={length}: {k} -> {k + 1} cores: {cycles}"


@pytest.mark.parametrize("chip_name,name", OPERATORS)
def test_one_more_vector_per_core_is_never_faster(chip_name, name):
    chip = packaged(chip_name)
    rng = random.Random(f"lengths {name}")
    lanes = chip.config.lanes(chip.resolve(name).dtype.name)
    cores = rng.randint(1, chip.config.cores)
    length = rng.randint(1 << 12, 1 << 20)
    first = timed(chip, name, length, cores)
    # also where each core's part is an exact multiple of the tile just chosen
    tile_multiple = first.tiling["tile_elements"] * first.tiling["tiles_per_core"] * cores
    for n in (length, max(1 << 12, tile_multiple)):
        before = timed(chip, name, n, cores).cycles
        after = timed(chip, name, n + lanes * cores, cores).cycles
        assert after >= LENGTH_STEP * before, f"{name} {cores} cores: n={n}: {before} -> {after}"


@pytest.mark.parametrize("chip_name,prefix", PACKAGED)
def test_large_calls_reach_90_percent_of_the_roofline_on_every_core_count(chip_name, prefix):
    chip = dspsim.Chip(chip_name)
    rng = random.Random(f"roofline {chip_name}")
    names = shared_operators(chip, prefix)
    for cores in range(1, chip.config.cores + 1):
        for name in rng.sample(names, 4):
            r = timed(chip, name, rng.randint(1 << 20, 1 << 22), cores)
            assert r.roofline_cycles >= ROOFLINE_SHARE * r.cycles, (
                f"{name} n={r.length} on {cores} cores: {r.cycles} cycles, bound "
                f"{r.roofline_cycles} ({r.bound})")


def test_a_larger_l2_is_never_slower():
    raw = copy.deepcopy(RAW["ft78ne"])
    cycles = []
    for size in (256, 512, 1024):
        raw["memory"]["l2"]["size_kib"] = size
        chip = dspsim.Chip(config_from_dict(raw, f"<l2 {size} KiB>"))
        cycles.append(timed(chip, "fp_relu_grad_s", 40960, 1).cycles)
    assert cycles[1] <= CORE_STEP * cycles[0] and cycles[2] <= CORE_STEP * cycles[1], cycles


def test_engines_behind_a_narrow_l2_port_are_bounded_by_the_port():
    # an engine serves one transfer at a time through its core's L2 port: two fast engines
    # behind 2-byte ports move at most 4 bytes a cycle, which the roofline must say
    raw = copy.deepcopy(RAW["mt7004"])
    raw["memory"]["l2"]["load_store_bytes_per_cycle"] = 2
    raw["dma"]["engines_per_core"] = 2
    raw["dma"]["engine_bandwidth_gbps"] = 100.0
    chip = dspsim.Chip(config_from_dict(raw, "<narrow L2 port>"))
    r = timed(chip, "fp_relu_grad_s", 1 << 16, 0x1)
    moved = 3 * 4 * (1 << 16)
    assert r.roofline_terms["DMA engine"] == pytest.approx(moved / 2)  # one core, one port
    assert r.cycles >= r.roofline_cycles


# ----------------------------------------------------------------------------- random chips
SCALING = settings(max_examples=25, deadline=None)


@st.composite
def scaling_cases(draw, smallest):
    """(chip, C name, length, cores) on a random chip with at least two cores."""
    raw = draw(chip_descriptions())
    raw["cores"] = max(2, raw["cores"])
    chip = dspsim.Chip(config_from_dict(raw, "<random chip>"))
    names = [n for n in chip.operator_names() if n.endswith("_s")]
    name = draw(st.sampled_from(names))
    length = draw(st.integers(min_value=smallest, max_value=1 << 18))
    cores = draw(st.integers(min_value=1, max_value=chip.config.cores - 1))
    return chip, name, length, cores


def _fits(chip, name, length):
    cname = chip.resolve(name)
    operands = len(cname.operator.inputs) + 1
    return operands * (-(-length * cname.dtype.itemsize // 4096) * 4096) <= \
        chip.config.ddr.size_bytes


@SCALING
@given(scaling_cases(smallest=1 << 14))
def test_random_chips_one_more_core_is_never_slower(case):
    chip, name, length, cores = case
    if not _fits(chip, name, length):
        return
    fewer = timed(chip, name, length, cores)
    more = timed(chip, name, length, cores + 1)
    assert more.cycles <= CORE_STEP * fewer.cycles, (fewer.cycles, more.cycles, chip.config)


@SCALING
@given(scaling_cases(smallest=1 << 12))
def test_random_chips_one_more_vector_per_core_is_never_faster(case):
    chip, name, length, cores = case
    lanes = chip.config.lanes(chip.resolve(name).dtype.name)
    if not _fits(chip, name, length + lanes * cores):
        return
    # only cores that get work count: a part of zero vectors gains one vector per core
    parts = partition(length, tuple(range(cores)), lanes)
    assert sum(stop > start for _, start, stop in parts) >= 1
    before = timed(chip, name, length, cores)
    after = timed(chip, name, length + lanes * cores, cores)
    assert after.cycles >= LENGTH_STEP * before.cycles, (before.cycles, after.cycles)
