"""FT78NE against TI's published TMS320C6678 measurements.

    python benchmarks/c6678_validation.py [--fidelity fast|detailed]

Each row sets up, on FT78NE, the experiment a TI figure reports (a bare EDMA transfer on a
named transfer controller, a DSPLIB kernel on data in L2, ...) and prints the figure, its
source and conditions, TI's value, dspsim's value and the difference. A row is
``reproduced`` when dspsim is within its tolerance of TI's value, ``bound holds`` when the
figure is only a bound on the model, ``disagrees`` otherwise, and ``out of scope`` when
the model has no counterpart of what was measured. docs/validation.md explains every row
that is not reproduced. A second table gives FT78NE's predictions for the figures whose
values TI publishes only as images of tables (EDMA overhead per channel controller and end
point, each controller's throughput per path, DDR3 throughput against masters), so that a
reader holding the report can set them side by side.

tests/test_c6678_validation.py imports this file and checks the rows.
"""
from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import dspsim
from dspsim.sim.chip.load import ChipConfig
from dspsim.sim.engine.probe import ProbeTransfer, run_transfers, throughput_gbps
from dspsim.sim.engine.vector import vector_cost

#: The TI application report the memory-system rows come from, and its test set-up.
MEMORY_REPORT = ("TMS320C6678 Memory Access Performance (TI application report, B. Feng); "
                 "1 GHz C6678 EVM, 64-bit DDR3-1333")
#: One EDMA controller's maximum-throughput test in that report: ACNT x BCNT bytes moved
#: as one AB-synchronised transfer request.
TABLE7_ACNT, TABLE7_BCNT = 1024, 128
#: The first transfer controller of each channel controller (engine names of ft78ne.yaml).
CC0_TC, CC1_TC, CC2_TC = "edma3cc0.tc.0", "edma3cc1.tc.0", "edma3cc2.tc.0"


@dataclass(frozen=True)
class Row:
    """One published figure and how FT78NE runs its experiment.

    ``kind``: ``"match"`` (reproduced when within ``tolerance``, relative), ``"upper"``
    (the published value bounds the model's from above: the model must not exceed it),
    ``"out of scope"`` (``measure`` is None: the model has nothing that was measured).
    """

    figure: str
    source: str
    published: float
    unit: str
    measure: Callable[[ChipConfig, str], float] | None
    kind: str = "match"
    tolerance: float = 0.10


@dataclass(frozen=True)
class Measured:
    """A row with FT78NE's value and the verdict."""

    row: Row
    value: float | None

    @property
    def difference(self) -> float | None:
        """(dspsim - TI) / TI, or None when the model has no value."""
        if self.value is None:
            return None
        return (self.value - self.row.published) / self.row.published

    @property
    def verdict(self) -> str:
        if self.value is None:
            return "out of scope"
        if self.row.kind == "upper":
            return "bound holds" if self.value <= self.row.published else "bound broken"
        return "reproduced" if abs(self.difference) <= self.row.tolerance else "disagrees"


# ----------------------------------------------------------------------------- experiments
def controller_throughput(config: ChipConfig, engine: str, region: str, fidelity: str,
                          nbytes: int = TABLE7_ACNT * TABLE7_BCNT,
                          to_region: str | None = None) -> float:
    """GB/s of one transfer of ``nbytes`` on ``engine`` alone, from trigger to last byte
    (the report's Table 7 set-up): from ``region`` into core 0's L2, or from ``region`` to
    ``to_region`` when given."""
    transfer = ProbeTransfer(engine, region, nbytes, to_region=to_region)
    [end] = run_transfers(config, [transfer], fidelity)
    return throughput_gbps(config, nbytes, end)


def transfer_overhead(config: ChipConfig, engine: str, region: str, fidelity: str) -> float:
    """Cycles from trigger to completion of a one-word (4-byte) transfer: the report's
    definition of EDMA transfer overhead (Tables 4 and 5)."""
    [end] = run_transfers(config, [ProbeTransfer(engine, region, 4)], fidelity)
    return end


def masters_throughput(config: ChipConfig, masters: int, region: str, fidelity: str,
                       nbytes: int = TABLE7_ACNT * TABLE7_BCNT) -> float:
    """Total GB/s of ``masters`` transfers of ``nbytes`` from ``region``, each on its own
    transfer controller (the chip's controllers in order) into its own core's L2, all
    triggered together."""
    engines = [spec.name for spec in config.dma.engines]
    transfers = [ProbeTransfer(engines[i], region, nbytes, core=i % config.cores)
                 for i in range(masters)]
    return throughput_gbps(config, nbytes * masters,
                           max(run_transfers(config, transfers, fidelity)))


def ddr_call_throughput(chip: str, cores: int, fidelity: str, n: int = 1 << 22) -> float:
    """GB/s that ``fp_relu_grad_s`` on ``n`` fp32 elements in DDR moves on the first
    ``cores`` cores: DDR streaming through the pool, as operator calls use it."""
    from dspsim.placement import c_arguments, place_operands
    target = dspsim.Chip(chip)
    cname = target.resolve("fp_relu_grad_s")
    addresses = place_operands(target.config, cname, n)
    for operand in cname.operator.inputs:
        target.zero(addresses[operand], n, "fp32")
    result = target.call("fp_relu_grad_s", *c_arguments(cname.operator, addresses, n),
                         core_mask=(1 << cores) - 1, numerics=False, fidelity=fidelity)
    return result.achieved_gbps


def tc0_over_others(config: ChipConfig, fidelity: str) -> float:
    """How many times CC0's first controller outruns CC1's on an SL2 -> DDR copy."""
    return (controller_throughput(config, CC0_TC, "shared_sram", fidelity, to_region="ddr")
            / controller_throughput(config, CC1_TC, "shared_sram", fidelity, to_region="ddr"))


def private_call_cycles(config: ChipConfig, name: str, n: int, inputs: int,
                        fidelity: str) -> float:
    """Cycles of a private-storage call on ``n`` fp32 elements already in core 0's L2."""
    arrays = [np.ones(n, np.float32) for _ in range(inputs)]
    _, result = dspsim.simulate(name, *arrays, chip=dspsim.Chip(config), fidelity=fidelity)
    return result.cycles


def fp32_divide_per_element(config: ChipConfig, _fidelity: str) -> float:
    """Cycles an element of FT78NE's fp32 divide (its MATHLIB divsp_i expansion)."""
    return vector_cost(config, "fp32", {"div": 1}).iteration_cycles / config.lanes("fp32")


def blk_move(n: int) -> Callable[[ChipConfig, str], float]:
    return lambda config, fidelity: private_call_cycles(config, "fp_l_relu_p", n, 1, fidelity)


def add32(n: int) -> Callable[[ChipConfig, str], float]:
    return lambda config, fidelity: private_call_cycles(config, "fp_relu_grad_p", n, 2, fidelity)


# ----------------------------------------------------------------------------- the figures
DSPLIB_C674X = ("DSPLIB C674x test report, DSPF_sp_blk_move: 1/2 N + 27 cycles "
                "(CCS cycle-accurate simulator, CGT 7.4.2; data in L1D)")
AM273X_ADD32 = ("AM273x MCU+ SDK 08.06 DSPLIB add32 example, C66x core, optimised C: "
                "measured cycles printed for Nx = 8..256 ('Cycles: 5/4*Nx + 22')")
#: The add32 example's measured cycles by Nx (the formula is its fit: 32 at Nx = 8).
MEASURED_C66X_ADD32 = {8: 39, 16: 42, 32: 62, 64: 102, 128: 182, 256: 342}
MATHLIB_DIVDP = ("MATHLIB 3.1.2.1 C66x test report (TCI6608 functional simulator): divdp "
                 "vector form, 7 cycles an element (fp64)")

ROWS: tuple[Row, ...] = (
    Row("EDMA TC0_0/TC0_1 vs the other TCs, SL2<->DDR throughput",
        MEMORY_REPORT + "; Table 7 and the sentence after it ('TC0_0 and TC0_1 reach twice "
        "the throughput of the other TCs'); ACNT=1024, BCNT=128, AB-sync. dspsim: one "
        "128 KiB SL2->DDR copy on edma3cc0.tc.0, then on edma3cc1.tc.0",
        2.0, "x", tc0_over_others),
    Row("IDMA transfer overhead, LL2 -> LL2",
        MEMORY_REPORT + "; section 'DMA transfer overhead': average IDMA overhead",
        61.0, "cycles", None, kind="out of scope"),
    *(Row(f"DSPF_sp_blk_move, N = {n} (fp32 copy)", DSPLIB_C674X
          + ". dspsim: fp_l_relu_p, one stream in and one out of L2", n / 2 + 27, "cycles",
          blk_move(n)) for n in (64, 256, 4096)),
    *(Row(f"add32 measured on a C66x core, N = {n}", AM273X_ADD32
          + ". dspsim: fp_relu_grad_p, two streams in, one out of L2", MEASURED_C66X_ADD32[n],
          "cycles", add32(n)) for n in (8, 64, 256)),
    Row("fp32 divide, cycles an element", MATHLIB_DIVDP + ". dspsim: FT78NE's div "
        "(divsp_i: RCPSP and two Newton-Raphson steps) must cost less than divdp",
        7.0, "cycles/element", fp32_divide_per_element, kind="upper"),
)


def measure(rows=ROWS, chip: str = "ft78ne", fidelity: str = "fast") -> list[Measured]:
    """Every row measured on ``chip`` at ``fidelity``."""
    config = dspsim.Chip(chip).config
    return [Measured(row, None if row.measure is None else float(row.measure(config, fidelity)))
            for row in rows]


def predictions(chip: str = "ft78ne", fidelity: str = "fast") -> list[tuple[str, str, float]]:
    """FT78NE's values for the report's figures that are published only as table images:
    (figure, experiment, value)."""
    config = dspsim.Chip(chip).config
    out = []
    for engine in (CC0_TC, CC1_TC, CC2_TC):
        for region, label in (("ddr", "DDR"), ("shared_sram", "SL2")):
            out.append((f"Tables 4-5: EDMA overhead, {engine}, {label} <-> L2 (cycles)",
                        "one 4-byte transfer, trigger to completion",
                        transfer_overhead(config, engine, region, fidelity)))
    for engine in (CC0_TC, CC1_TC, CC2_TC):
        for region, to_region, label in (("ddr", None, "DDR -> L2"),
                                         ("shared_sram", None, "SL2 -> L2"),
                                         ("shared_sram", "ddr", "SL2 -> DDR"),
                                         ("ddr", "shared_sram", "DDR -> SL2")):
            out.append((f"Table 7: max throughput, {engine}, {label} (GB/s)",
                        "one 128 KiB transfer alone",
                        controller_throughput(config, engine, region, fidelity,
                                              to_region=to_region)))
    for nbytes in (64, 1024, 8192, 65536):
        out.append((f"EDMA throughput against size: {nbytes} B, {CC0_TC}, DDR -> L2 (GB/s)",
                    "one 1-D transfer alone (ACNT = size, BCNT = 1)",
                    controller_throughput(config, CC0_TC, "ddr", fidelity, nbytes)))
    for masters in (1, 2, 4, 8):
        out.append((f"DDR3 throughput, {masters} master(s) (GB/s)",
                    f"{masters} x 128 KiB DDR -> L2, one controller each, together",
                    masters_throughput(config, masters, "ddr", fidelity)))
    if fidelity == "fast":  # the detailed model times every burst of 48 MiB: minutes
        for cores in (1, 2, 4, 8):
            out.append((f"DDR throughput of an operator call on {cores} core(s) (GB/s)",
                        "fp_relu_grad_s, 2^22 fp32 in DDR, through the EDMA3 pool",
                        ddr_call_throughput(chip, cores, fidelity)))
    return out


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def table(measured: list[Measured]) -> str:
    """The validation table as Markdown."""
    lines = ["| # | figure | TI | dspsim | difference | verdict |",
             "|--:|---|--:|--:|--:|---|"]
    for i, m in enumerate(measured, 1):
        diff = "-" if m.difference is None else f"{m.difference:+.1%}"
        lines.append(f"| {i} | {m.row.figure} | {_number(m.row.published)} {m.row.unit} | "
                     f"{_number(m.value)} | {diff} | {m.verdict} |")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fidelity", default="fast", choices=("fast", "detailed"))
    parser.add_argument("--chip", default="ft78ne")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    measured = measure(chip=args.chip, fidelity=args.fidelity)
    print(f"{args.chip} against TI's published C6678 figures ({args.fidelity} model)\n")
    print(table(measured))
    print("\nSources:")
    for i, m in enumerate(measured, 1):
        print(f"  {i}. {m.row.source}")
    print("\nPredictions for figures TI publishes only as table images:\n")
    print("| figure | experiment | dspsim |\n|---|---|--:|")
    for figure, experiment, value in predictions(args.chip, args.fidelity):
        print(f"| {figure} | {experiment} | {_number(value)} |")


if __name__ == "__main__":
    main()
