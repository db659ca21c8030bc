"""MT7016, the packaged chip whose structure differs: a shared L3 (``msmc``) instead of a
shared SRAM, and DMA controllers shared per cluster of cores (``dma.model: cluster_pools``,
sim/engine/dma_clusters.py). It runs through the same public API as the other chips."""
from __future__ import annotations

import copy
from itertools import pairwise

import numpy as np
import pytest
import yaml
from reference import REFERENCES

import dspsim
from dspsim.kernels.check import compare
from dspsim.placement import c_arguments, place_operands
from dspsim.sim.chip.load import config_from_dict, load_config, packaged_chips
from dspsim.sim.engine.dma import DMA_MODELS, dma_models, sharing_cores
from dspsim.sim.errors import ConfigError

DDR_IN, DDR_OUT = (0xA0000000, 0xA1000000), 0xB0000000
#: one more core may cost at most this much (the design's 1% monotonicity)
CORE_STEP = 1.01


def raw_chip() -> dict:
    with open(packaged_chips()["mt7016"], encoding="utf-8") as handle:
        return yaml.safe_load(handle)


@pytest.fixture(scope="module")
def config():
    return load_config("mt7016")


def timed(chip, n, mask, region=None):
    """fp_relu_grad_s on ``n`` zeros placed in ``region`` (the DRAM level by default)."""
    cname = chip.resolve("fp_relu_grad_s")
    addresses = place_operands(chip.config, cname, n, region)
    for operand in cname.operator.inputs:
        chip.zero(addresses[operand], n, "fp32")
    args = c_arguments(cname.operator, addresses, n)
    return chip.call("fp_relu_grad_s", *args, mask, numerics=False)


def test_its_levels_and_dma_model_are_the_files_data(config):
    assert [(level.name, level.kind, level.label) for level in config.levels] == [
        ("ddr", "dram", "DDR"), ("msmc", "sram", "shared L3")]
    assert config.l2.name == "l2" and config.ddr.name == "ddr"
    assert config.dma.model == "cluster_pools" and "cluster_pools" in dma_models()
    assert sharing_cores(config, tuple(range(16))) == [list(range(k, k + 4))
                                                       for k in range(0, 16, 4)]
    assert "per cluster of 4 cores" in config.dma.describe()


@pytest.mark.parametrize("name", ["fp_relu_grad_s", "hp_gelu_grad_s", "fp_softplus_grad_p",
                                  "hp_smoothl1lossgrad_s"])
def test_numerics_match_the_float64_reference(name):
    chip = dspsim.Chip("mt7016")
    cname = chip.resolve(name)
    op, dtype = cname.operator, cname.dtype.numpy
    n = 3000
    addresses = place_operands(chip.config, cname, n)
    rng = np.random.default_rng(7)
    inputs = {}
    for operand in op.inputs:
        inputs[operand] = rng.uniform(-4, 4, n).astype(dtype)
        chip.write(addresses[operand], inputs[operand])
    params = {p.name: p.default if p.default is not None else 0.5 for p in op.params}
    result = chip.call(name, *c_arguments(op, addresses, n, params))
    got = chip.read(addresses[op.output], n, dtype)
    arrays = [inputs[o] for o in op.inputs]
    expected = REFERENCES[op.stem][0](*arrays, **params)
    check = compare(got, expected, cname.dtype, op.tolerance(cname.dtype, arrays, params))
    assert check.ok, check
    assert result.chip == "MT7016" and result.cycles > 0


@pytest.mark.parametrize("region", [None, "msmc"])
def test_more_cores_are_never_slower_at_large_lengths(region):
    chip = dspsim.Chip("mt7016")
    n = 1 << 19
    cycles = [timed(chip, n, (1 << k) - 1, region).cycles for k in range(1, 17)]
    for k, (fewer, more) in enumerate(pairwise(cycles), start=1):
        assert more <= CORE_STEP * fewer, (k, cycles)


def test_cores_of_one_cluster_share_its_controllers_and_clusters_do_not():
    # in the shared L3 (faster than a cluster's controllers) two cores of two clusters
    # each have four controllers; two cores of one cluster share four
    chip = dspsim.Chip("mt7016")
    n = 1 << 19
    one_cluster = timed(chip, n, 0x0003, "msmc")
    two_clusters = timed(chip, n, 0x0011, "msmc")
    assert two_clusters.cycles < 0.9 * one_cluster.cycles
    assert one_cluster.bound == "DMA engine"
    # the trace says which cluster's controller moved each tile
    used = {(e["pid"] - 1, e["args"]["dma_engine"].rsplit(" ", 1)[0])
            for e in two_clusters.trace()["traceEvents"]
            if e.get("ph") == "X" and e.get("cat") in ("dma-in", "dma-out")}
    assert used == {(0, "cluster 0"), (4, "cluster 1")}


def test_never_faster_than_its_roofline_and_the_dma_term_is_the_busiest_clusters(config):
    chip = dspsim.Chip("mt7016")
    n = 1 << 18
    result = timed(chip, n, 0x001f, "msmc")  # five cores: four in cluster 0, one in 1
    assert result.cycles >= result.roofline_cycles
    port = config.l2.load_store_bytes_per_cycle
    rates = [config.bytes_per_cycle(e.bandwidth_gbps) for e in config.dma.engines]
    cluster0 = sum(c.elements for c in result.per_core if c.core < 4)
    expected = cluster0 * 4 * 3 / min(sum(rates), 4 * port)
    assert result.roofline_terms["DMA engine"] == pytest.approx(
        max(expected, max(c.elements for c in result.per_core) * 4 / max(rates)))


def test_a_program_runs_on_it_with_clusters_concurrently():
    chip = dspsim.Chip("mt7016")
    n = 1 << 16
    for address in DDR_IN:
        chip.write(address, np.ones(n, np.float32))
    prog = chip.program()
    prog.stream().fp_relu_grad_s(*DDR_IN, DDR_OUT, n, 0x000f)
    prog.stream().fp_relu_grad_s(*DDR_IN, DDR_OUT + 4 * n, n, 0x00f0)
    result = prog.run()
    first, second = result.calls
    assert second.start_cycle < first.end_cycle  # disjoint clusters run at once
    assert np.array_equal(chip.read(DDR_OUT + 4 * n, n, np.float32), np.ones(n, np.float32))


def test_bad_dma_model_and_level_descriptions_are_one_clear_error():
    cases = [
        (lambda d: d["dma"].__setitem__("model", "crossbar"),
         ["dma.model", "'crossbar'", "cluster_pools", "shared_pool"]),
        (lambda d: d["dma"].pop("cores_per_pool"), ["dma.cores_per_pool", "missing"]),
        (lambda d: d["dma"].__setitem__("model", "shared_pool"),
         ["dma.cores_per_pool", "does not use it"]),
        (lambda d: d["memory"].pop("ddr"), ["memory", "exactly one dram level"]),
        (lambda d: d["memory"]["msmc"].__setitem__("efficiency", 0.5),
         ["memory.msmc.efficiency", "not a key of a sram level"]),
        (lambda d: d["memory"]["msmc"].__setitem__("size_kib", 4096),
         ["memory.msmc", "size_mib or size_kib"]),
    ]
    for mutate, fragments in cases:
        data = copy.deepcopy(raw_chip())
        mutate(data)
        with pytest.raises(ConfigError) as info:
            config_from_dict(data, "my.yaml")
        for fragment in fragments:
            assert fragment in str(info.value), (fragment, str(info.value))


def test_the_built_in_dma_models_stay_registered():
    assert {"per_core_engines", "shared_pool"} <= set(DMA_MODELS)
