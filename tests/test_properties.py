"""Properties over random chips and random calls (hypothesis).

Chips are the packaged YAML descriptions with their lane widths, bandwidths, core
counts, L2 sizes, burst sizes and fixed cycles redrawn, built through
``config_from_dict`` like any user's file. Calls are valid ones placed in DDR, shared
SRAM or a core's L2; and arbitrary ones, which may only ever raise dspsim's own errors.
"""
import contextlib
import copy
import math
from itertools import pairwise

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import dspsim
from dspsim import kernels
from dspsim.placement import c_arguments
from dspsim.seam import job_for
from dspsim.sim.chip.load import config_from_dict, packaged_chips
from dspsim.sim.engine.machine import run_job
from dspsim.traces.formats import trace_bytes, validate_trace

RAW = {}
for _name, _path in sorted(packaged_chips().items()):
    with open(_path, encoding="utf-8") as _handle:
        RAW[_name] = yaml.safe_load(_handle)

PROPERTY = settings(max_examples=100, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ----------------------------------------------------------------------------- chips
@st.composite
def chip_descriptions(draw):
    """A packaged chip description with its numbers redrawn (always a valid chip)."""
    raw = copy.deepcopy(RAW[draw(st.sampled_from(sorted(RAW)))])
    positive = st.floats(min_value=0.25, max_value=400.0, allow_nan=False)
    raw["clock_mhz"] = draw(st.floats(min_value=100.0, max_value=3000.0))
    raw["cores"] = draw(st.integers(min_value=1, max_value=12))
    vector = raw["vector"]
    vector["lane_width_bits"] = draw(st.sampled_from([32, 64, 128, 256, 512, 1024]))
    vector["pipeline_fill_cycles"] = draw(st.integers(min_value=0, max_value=40))
    vector["loop_overhead_cycles_per_tile"] = draw(st.integers(min_value=0, max_value=100))
    for unit in vector["units"]:
        vector["units"][unit] = draw(st.integers(min_value=1, max_value=4))
    for level in raw["memory"].values():  # every level, whatever the chip calls it
        if level["kind"] == "dram":
            level["peak_bandwidth_gbps"] = draw(positive)
            level["efficiency"] = draw(st.floats(min_value=0.05, max_value=1.0))
        elif level["kind"] == "sram":
            level["bandwidth_gbps"] = draw(positive)
        else:
            size = draw(st.sampled_from([32, 64, 128, 256, 512, 1024]))
            level["size_kib"] = size
            level["reserve_kib"] = draw(st.integers(min_value=0, max_value=size // 2))
            level["load_store_bytes_per_cycle"] = draw(st.sampled_from([2, 4, 16, 64, 256]))
    dma = raw["dma"]
    for key in ("model", "cores_per_pool", "engines_per_core", "engine_bandwidth_gbps",
                "controllers"):
        dma.pop(key, None)  # the model follows from the engines drawn below
    if draw(st.booleans()):  # engines of each core's own
        dma["engines_per_core"] = draw(st.integers(min_value=1, max_value=5))
        dma["engine_bandwidth_gbps"] = draw(positive)
    else:  # pools of transfer controllers: one for all cores, or one per cluster
        if draw(st.booleans()):
            dma["model"] = "cluster_pools"
            dma["cores_per_pool"] = draw(st.integers(min_value=1, max_value=raw["cores"]))
        dma["controllers"] = [
            {"name": f"tc{i}", "count": draw(st.integers(min_value=1, max_value=6)),
             "bandwidth_gbps": draw(positive)}
            for i in range(draw(st.integers(min_value=1, max_value=3)))]
    dma["setup_cycles"] = draw(st.integers(min_value=0, max_value=1000))
    dma["burst_bytes"] = draw(st.sampled_from([16, 64, 128, 256, 1024, 4096]))
    raw["call"]["launch_cycles"] = draw(st.integers(min_value=0, max_value=1000))
    raw["call"]["barrier_cycles"] = draw(st.integers(min_value=0, max_value=1000))
    return raw


@st.composite
def valid_calls(draw, max_length=60_000):
    """(chip config, C name, addresses by operand, length, params, core_mask, core)."""
    config = config_from_dict(draw(chip_descriptions()), "<random chip>")
    chip = dspsim.Chip(config)
    name = draw(st.sampled_from(chip.operator_names()))
    cname = chip.resolve(name)
    op = cname.operator
    operands = op.inputs + (op.output,)
    itemsize = cname.dtype.itemsize
    core = None
    if cname.storage == "shared":
        region = draw(st.sampled_from(list(config.levels)))
        length = draw(st.integers(min_value=0, max_value=max_length))
        stride = -(-length * itemsize // 64) * 64 + draw(st.sampled_from([0, 64, 4096]))
        assume(stride * len(operands) <= region.size_bytes)
        base = region.base_address
        mask = draw(st.integers(min_value=1, max_value=(1 << config.cores) - 1)
                    | st.integers(min_value=1, max_value=(1 << 40)).filter(
                        lambda m: m & ((1 << config.cores) - 1)))
    else:
        room = config.l2.size_bytes // (len(operands) * itemsize)
        length = draw(st.integers(min_value=0, max_value=min(room, max_length)))
        stride = length * itemsize
        mask = None
        if config.l2.core_stride_bytes:  # global address of one core's L2
            core_number = draw(st.integers(min_value=0, max_value=config.cores - 1))
            base = config.l2.base_address + core_number * config.l2.core_stride_bytes
        else:  # the executing core's local L2 window
            base = config.l2.base_address
            core = draw(st.integers(min_value=0, max_value=config.cores - 1))
    addresses = {operand: base + i * stride for i, operand in enumerate(operands)}
    if draw(st.booleans()) and op.output not in op.inputs:  # in place: dst is the first input
        addresses[op.output] = addresses[op.inputs[0]]
    # 0 or a normal number of every dtype (a subnormal scale is refused, see Param)
    params = {p.name: draw(st.floats(min_value=-4.0 if p.minimum is None else p.minimum,
                                     max_value=4.0 + (p.minimum or 0.0))
                           .filter(lambda v: v == 0 or abs(v) >= 1e-4))
              for p in op.params}
    return config, name, addresses, length, params, mask, core


def _place_and_call(call, *, fidelity="fast", numerics=False):
    config, name, addresses, length, params, mask, core = call
    chip = dspsim.Chip(config)
    cname = chip.resolve(name)
    rng = np.random.default_rng(length)
    for operand in cname.operator.inputs:
        chip.write(addresses[operand], rng.standard_normal(length).astype(cname.dtype.numpy),
                   core=core)
    args = c_arguments(cname.operator, addresses, length, params)
    extra = {} if mask is None else {"core_mask": mask}
    return chip, chip.call(name, *args, core=core, fidelity=fidelity, numerics=numerics,
                           **extra)


# ----------------------------------------------------------------------------- properties
@PROPERTY
@given(valid_calls())
def test_never_faster_than_the_roofline(call):
    _, result = _place_and_call(call)
    assert result.cycles >= result.roofline_cycles
    if result.length:
        assert result.cycles >= math.ceil(result.roofline_terms.get("launch overhead", 0) - 1e-9)


@PROPERTY
@given(valid_calls(max_length=6000))
def test_detailed_fidelity_never_faster_than_the_roofline(call):
    _, result = _place_and_call(call, fidelity="detailed")
    assert result.cycles >= result.roofline_cycles


@PROPERTY
@given(valid_calls())
def test_the_cores_ranges_cover_the_length_exactly_once(call):
    config, _, _, _, _, mask, _ = call
    _, result = _place_and_call(call)
    ranges = sorted((c.start, c.stop) for c in result.per_core)
    assert ranges[0][0] == 0 and ranges[-1][1] == result.length
    assert all(a[1] == b[0] for a, b in pairwise(ranges))  # no gap, no overlap
    assert sum(stop - start for start, stop in ranges) == result.length
    cores = [c.core for c in result.per_core]
    assert len(cores) == len(set(cores))
    if result.storage == "shared":
        assert set(cores) == {i for i in range(config.cores) if mask >> i & 1}
        assert all(c.start % result.lanes == 0 for c in result.per_core if c.elements)
        sizes = [c.elements // result.lanes for c in result.per_core]
        assert max(sizes) - min(sizes) <= 1  # balanced to a vector
    assert result.tiles >= (1 if result.length else 0)


@PROPERTY
@given(valid_calls(max_length=20_000))
def test_same_call_same_cycles_same_trace(call):
    first_chip, first = _place_and_call(call, numerics=True)
    second_chip, second = _place_and_call(call, numerics=True)
    assert first.cycles == second.cycles
    assert first.per_core == second.per_core
    trace = first.trace()
    assert trace_bytes(trace) == trace_bytes(second.trace())
    assert validate_trace(trace) == []
    config, name, addresses, length, _, _, core = call
    dtype = first_chip.resolve(name).dtype.numpy
    output = first_chip.resolve(name).operator.output
    assert np.array_equal(first_chip.read(addresses[output], length, dtype, core=core),
                          second_chip.read(addresses[output], length, dtype, core=core),
                          equal_nan=True)


@PROPERTY
@given(valid_calls(max_length=60_000))
def test_mirrored_cores_give_the_cycles_of_every_core_simulated(call):
    config, name, addresses, length, params, mask, core = call
    chip, _ = _place_and_call(call)
    args = c_arguments(chip.resolve(name).operator, addresses, length, params)
    extra = {} if mask is None else {"core_mask": mask}
    job = job_for(chip.bind(name, tuple(args), extra, core=core))
    mirrored = run_job(config, job)
    every_core = run_job(config, job, mirror_cores=False)
    assert mirrored.cycles == every_core.cycles
    assert [(c.core, c.tiles, c.busy, c.finish) for c in mirrored.cores] == \
        [(c.core, c.tiles, c.busy, c.finish) for c in every_core.cores]
    assert mirrored.bytes_read == every_core.bytes_read
    assert mirrored.scheduled_events <= every_core.scheduled_events


SHARED_CALLS = [(chip, name) for chip in sorted(RAW)
                for name in dspsim.Chip(chip).operator_names() if name.endswith("_s")]


@pytest.mark.parametrize("chip,name", SHARED_CALLS)
def test_numerics_over_several_blocks_equal_one_numpy_evaluation(chip, name):
    # the launcher computes long ranges block by block; the result must not show it, in
    # place or not
    length = 2 * (1 << 18) + 5
    in_place = SHARED_CALLS.index((chip, name)) % 2 == 1
    machine = dspsim.Chip(chip)
    cname = machine.resolve(name)
    op, dtype = cname.operator, cname.dtype.numpy
    arrays = {k: v.astype(dtype) for k, v in op.random_inputs(np.random.default_rng(length),
                                                               length).items()}
    addresses = {operand: 0x80000000 + i * (length * 4 + 64)
                 for i, operand in enumerate(op.inputs + (op.output,))}
    if in_place:
        addresses[op.output] = addresses[op.inputs[-1]]
    for operand in op.inputs:
        machine.write(addresses[operand], arrays[operand])
    params = {p.name: p.default for p in op.params}
    args = c_arguments(op, addresses, length, params)
    machine.call(name, *args)
    with np.errstate(all="ignore"):
        expected = np.asarray(op.compute(*(arrays[o] for o in op.inputs), **params), dtype)
    assert np.array_equal(machine.read(addresses[op.output], length, dtype), expected,
                          equal_nan=True)


# ----------------------------------------------------------------------------- any input
NAMES = sorted(kernels.names_for(kernels.DTYPES))
anything = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(1 << 70), max_value=1 << 70),
    st.integers(min_value=0xA0000000, max_value=0xA0000100),
    st.sampled_from([0xA0000000, 0xA1000000, 0xB0000000, 0x0C000000, 0x10000000,
                     0x10810000, 0x00800000, 16, 1000, 0xff, 0x1]),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
    st.lists(st.integers(), max_size=3), st.just(np.int64(7)), st.just(np.float32(2.5)),
    st.just(np.uint64(1 << 63)), st.just(np.array([1, 2])), st.just(object()))
names = st.one_of(st.sampled_from(NAMES), st.text(max_size=24), anything,
                  st.builds(lambda n, c: n[:c] + n[c + 1:], st.sampled_from(NAMES),
                            st.integers(min_value=0, max_value=20)))


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chip=st.sampled_from(sorted(RAW)), name=names, args=st.lists(anything, max_size=9),
       keywords=st.dictionaries(st.sampled_from(["core_mask", "core", "fidelity", "alpha",
                                                 "beta", "lambd", "src0", "length", "bogus"]),
                                anything | st.sampled_from(["fast", "detailed"]), max_size=3))
def test_any_call_raises_only_dspsim_errors(chip, name, args, keywords):
    machine = dspsim.Chip(chip)
    for address in (0xA0000000, 0xA1000000, 0xA2000000, 0x10810000, 0x10000000):
        with contextlib.suppress(dspsim.DspSimError):  # not in this chip's memory map
            machine.write(address, np.linspace(-3, 3, 300, dtype=np.float32))
    with contextlib.suppress(dspsim.DspSimError):
        machine.call(name, *args, **keywords)


storable = st.sampled_from([np.float32, np.float16, np.float64, np.int8, np.int64, np.bool_,
                            np.complex64, "U3", "S2", object])


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # random strings hit numpy aliases
@settings(max_examples=200, deadline=None)
@given(chip=st.sampled_from(sorted(RAW)), address=anything, dtype=storable | anything,
       count=anything, size=st.integers(min_value=0, max_value=40), core=anything)
def test_any_write_or_read_raises_only_dspsim_errors(chip, address, dtype, count, size, core):
    machine = dspsim.Chip(chip)
    try:
        data = np.zeros(size, dtype=dtype)
    except Exception:  # noqa: BLE001 - not a dtype: write it as whatever numpy makes of it
        data = [dtype] * size
    for action in (lambda: machine.write(address, data, core=core),
                   lambda: machine.read(address, count, dtype, core=core)):
        with contextlib.suppress(dspsim.DspSimError):
            action()


def _mutations(raw):
    """Paths of every key in a chip description, for breaking one of them."""
    for key, value in raw.items():
        yield (key,)
        if isinstance(value, dict):
            for sub in _mutations(value):
                yield (key,) + sub


@settings(max_examples=200, deadline=None)
@given(chip=st.sampled_from(sorted(RAW)), data=st.data(),
       value=anything | st.sampled_from([0, -1, 0.0, "", [], {}, 1e300, 3, 1 << 40]),
       delete=st.booleans())
def test_any_broken_chip_description_raises_only_config_errors(chip, data, value, delete):
    raw = copy.deepcopy(RAW[chip])
    path = data.draw(st.sampled_from(list(_mutations(raw))))
    parent = raw
    for key in path[:-1]:
        parent = parent[key]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    try:
        config = config_from_dict(raw, "<broken chip>")
    except dspsim.ConfigError:
        return
    # whatever it accepted must run a call or refuse it with dspsim's own errors
    with contextlib.suppress(dspsim.DspSimError):
        dspsim.simulate("fp_relu_grad_s", np.ones(64), np.ones(64), chip=dspsim.Chip(config))


@pytest.mark.parametrize("fidelity", ["fast", "detailed"])
def test_random_chip_smoke(fidelity):
    # one fixed random chip through both fidelities, as a readable example of the above
    raw = copy.deepcopy(RAW["mt7004"])
    raw["vector"]["lane_width_bits"] = 256
    raw["dma"]["burst_bytes"] = 64
    config = config_from_dict(raw, "<example>")
    out, result = dspsim.simulate("hp_relu_grad_s", np.linspace(-1, 1, 999),
                                  np.linspace(1, -1, 999), chip=dspsim.Chip(config),
                                  core_mask=0x5, fidelity=fidelity)
    assert result.cycles >= result.roofline_cycles
    assert out[0] == -1 and out[-1] == 0
