"""FT78NE against TI's published C6678 figures (benchmarks/c6678_validation.py), and the
transfer probe those experiments run on (dspsim.sim.engine.probe).

The rows docs/validation.md calls reproduced must stay within 10% of TI's value; the rows
it explains as disagreements must still disagree the way it says, so that the page cannot
go stale silently."""
import importlib.util
import sys
from itertools import pairwise
from pathlib import Path

import pytest

import dspsim
from dspsim.sim.chip.load import config_from_dict, load_config, packaged_chips
from dspsim.sim.chip.yamlfile import parse_yaml, read_yaml_text
from dspsim.sim.engine.probe import ProbeTransfer, run_transfers, throughput_gbps

_SPEC = importlib.util.spec_from_file_location(
    "c6678_validation", Path(__file__).parent.parent / "benchmarks" / "c6678_validation.py")
validation = importlib.util.module_from_spec(_SPEC)
sys.modules.setdefault(_SPEC.name, validation)  # dataclasses look their module up by name
_SPEC.loader.exec_module(validation)

#: figure -> (verdict docs/validation.md gives, the sign of dspsim - TI where it disagrees)
DOCUMENTED = {
    "EDMA TC0_0/TC0_1 vs the other TCs, SL2<->DDR throughput": ("disagrees", -1),
    "IDMA transfer overhead, LL2 -> LL2": ("out of scope", None),
    "DSPF_sp_blk_move, N = 64 (fp32 copy)": ("reproduced", None),
    "DSPF_sp_blk_move, N = 256 (fp32 copy)": ("reproduced", None),
    "DSPF_sp_blk_move, N = 4096 (fp32 copy)": ("reproduced", None),
    "add32 measured on a C66x core, N = 8": ("reproduced", None),
    "add32 measured on a C66x core, N = 64": ("disagrees", -1),
    "add32 measured on a C66x core, N = 256": ("disagrees", -1),
    "fp32 divide, cycles an element": ("bound holds", None),
}


@pytest.fixture(scope="module")
def ft78ne():
    return load_config("ft78ne")


@pytest.mark.parametrize("fidelity", ["fast", "detailed"])
def test_every_row_has_the_verdict_the_docs_give(fidelity):
    measured = validation.measure(fidelity=fidelity)
    assert {m.row.figure for m in measured} == set(DOCUMENTED)
    for m in measured:
        verdict, sign = DOCUMENTED[m.row.figure]
        assert m.verdict == verdict, (m.row.figure, m.value, m.difference)
        if verdict == "reproduced":
            assert abs(m.value - m.row.published) <= 0.10 * m.row.published
        if sign is not None:
            assert m.difference * sign > 0.10, (m.row.figure, m.difference)


def test_the_table_prints_every_row():
    text = validation.table(validation.measure())
    assert text.count("\n") == len(validation.ROWS) + 1
    assert "reproduced" in text and "disagrees" in text


def _alone(config, spec, region, nbytes):
    """Cycles of one transfer alone: setup, then its bytes at the least of the engine's,
    the region's and the L2 port's rate."""
    gbps = min(spec.bandwidth_gbps, region.bandwidth_gbps,
               config.l2.load_store_bytes_per_cycle * config.clock_mhz / 1e3)
    return config.dma.setup_cycles + nbytes / config.bytes_per_cycle(gbps)


@pytest.mark.parametrize("nbytes", [4, 1 << 17])
def test_a_controller_alone_runs_at_the_least_of_its_rate_and_its_path(ft78ne, nbytes):
    for spec in ft78ne.dma.engines:
        for region in (ft78ne.ddr, ft78ne.level("shared_sram")):
            for fidelity in ("fast", "detailed"):
                [end] = run_transfers(ft78ne, [ProbeTransfer(spec.name, region.name, nbytes)],
                                      fidelity)
                # bursts cross the path store and forward: the detailed model adds the
                # last burst's time on the faster link
                assert end == pytest.approx(_alone(ft78ne, spec, region, nbytes), rel=0.002)


def test_masters_share_ddr_and_never_exceed_it(ft78ne):
    totals = [validation.masters_throughput(ft78ne, k, "ddr", "fast") for k in range(1, 9)]
    assert all(b >= a * 0.999 for a, b in pairwise(totals))
    assert max(totals) <= ft78ne.ddr.bandwidth_gbps


def test_transfers_given_to_one_engine_move_one_after_the_other(ft78ne):
    engine, nbytes = "edma3cc1.tc.0", 1 << 16
    [alone] = run_transfers(ft78ne, [ProbeTransfer(engine, "ddr", nbytes)])
    first, second = run_transfers(ft78ne, [ProbeTransfer(engine, "ddr", nbytes)] * 2)
    assert first == pytest.approx(alone)
    move = alone - ft78ne.dma.setup_cycles
    assert second == pytest.approx(alone + move)


@pytest.mark.parametrize("engine", ["edma3cc0.tc.0", "edma3cc2.tc.3"])
def test_fast_and_detailed_agree_on_a_long_transfer(ft78ne, engine):
    transfers = [ProbeTransfer(engine, "ddr", 1 << 17, direction=d) for d in ("dma-in", "dma-out")]
    fast = run_transfers(ft78ne, transfers, "fast")
    detailed = run_transfers(ft78ne, transfers, "detailed")
    for a, b in zip(fast, detailed, strict=True):
        assert b == pytest.approx(a, rel=0.01)


@pytest.mark.parametrize("fidelity", ["fast", "detailed"])
def test_a_copy_between_shared_regions_runs_at_the_slower_region_or_the_controller(
        ft78ne, fidelity):
    nbytes = 1 << 17
    for spec in ft78ne.dma.engines:
        for source, destination in (("shared_sram", "ddr"), ("ddr", "shared_sram")):
            [end] = run_transfers(ft78ne, [ProbeTransfer(spec.name, source, nbytes,
                                                         to_region=destination)], fidelity)
            gbps = min(spec.bandwidth_gbps, ft78ne.ddr.bandwidth_gbps,
                       ft78ne.level("shared_sram").bandwidth_gbps)
            expected = ft78ne.dma.setup_cycles + nbytes / ft78ne.bytes_per_cycle(gbps)
            assert end == pytest.approx(expected, rel=0.002)


def test_throughput_is_in_gigabytes_a_second(ft78ne):
    assert throughput_gbps(ft78ne, 1000, 1000) == pytest.approx(ft78ne.clock_mhz / 1e3)


def _chip_with_a_controller_that_skips_ddr():
    raw = parse_yaml(read_yaml_text(packaged_chips()["ft78ne"]), "ft78ne.yaml")
    raw["dma"]["controllers"][1]["reaches"] = ["shared_sram"]
    return config_from_dict(raw)


@pytest.mark.parametrize("transfer, fidelity, message", [
    (ProbeTransfer("edma3cc9.tc.0", "ddr", 64), "fast", "no DMA engine 'edma3cc9.tc.0'"),
    (ProbeTransfer("edma3cc0.tc.0", "l2", 64), "fast", "unknown region 'l2'"),
    (ProbeTransfer("edma3cc1.tc.0", "ddr", 64), "fast", "does not reach ddr"),
    (ProbeTransfer("edma3cc0.tc.0", "ddr", 0), "fast", "nbytes must be a positive"),
    (ProbeTransfer("edma3cc0.tc.0", "ddr", 64, core=8), "fast", "core must be one of 0..7"),
    (ProbeTransfer("edma3cc0.tc.0", "ddr", 64, direction="up"), "fast", "direction must be"),
    (ProbeTransfer("edma3cc0.tc.0", "ddr", 64, start=-1), "fast", "start must be a cycle"),
    (ProbeTransfer("edma3cc0.tc.0", "ddr", 64), "exact", "is not a model fidelity"),
    (ProbeTransfer("edma3cc0.tc.0", "ddr", 64, to_region="ddr"), "fast", "must differ"),
    (ProbeTransfer("edma3cc0.tc.0", "ddr", 64, to_region="msmc"), "fast", "unknown region"),
    (ProbeTransfer("edma3cc1.tc.0", "shared_sram", 64, to_region="ddr"), "fast",
     "does not reach ddr"),
])
def test_a_bad_experiment_is_one_clear_error(transfer, fidelity, message):
    with pytest.raises(dspsim.ArgumentError, match=message):
        run_transfers(_chip_with_a_controller_that_skips_ddr(), [transfer], fidelity)
