"""The fidelity grid: the fast model against the detailed model on the same calls.

Operators × chips (and their dtypes) × core masks × lengths up to 2^16, shared-storage
calls with operands in DDR and in shared SRAM, and private-storage calls. Each case is
timed twice, with ``fidelity="fast"`` and ``fidelity="detailed"``; the relative
difference of their cycle counts is what ``tests/test_fidelity.py`` bounds and what
``bench_sim.py`` reports.

Run it alone to print every case: ``python benchmarks/fidelity_grid.py``.
"""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

import numpy as np

import dspsim
from dspsim.placement import place_operands

#: Operators with different bottlenecks: L2 load/store (relu_grad), the special-function
#: unit (gelu_grad), three inputs (smoothl1lossgrad), one input (l_relu), the ALUs on
#: MT7004 (h_swish_grad).
OPERATORS = ("relu_grad", "gelu_grad", "smoothl1lossgrad", "l_relu", "h_swish_grad")
#: chip -> (dtype prefixes, core masks of the shared-storage calls)
CHIPS = {"ft78ne": (("fp",), (0x1, 0x6, 0xff)), "mt7004": (("fp", "hp"), (0x1, 0x7, 0xf))}
SHARED_LENGTHS = (1000, 12345, 40000, 1 << 16)
SRAM_LENGTH = 12345  # shared-storage cases repeated with every operand in shared SRAM
PRIVATE_LENGTHS = (777, 4096)


@dataclass(frozen=True)
class Case:
    """One call of the grid."""

    chip: str
    name: str  # C name
    length: int
    core_mask: int | None  # None for private-storage calls
    region: str  # where the operands live: "ddr", "shared_sram" or "l2"

    @property
    def label(self) -> str:
        mask = "" if self.core_mask is None else f" mask {self.core_mask:#x}"
        return f"{self.chip} {self.name} n={self.length}{mask} {self.region}"


def grid() -> list[Case]:
    """Every case of the grid, in a fixed order."""
    cases = []
    for chip, (prefixes, masks) in CHIPS.items():
        for stem, prefix in itertools.product(OPERATORS, prefixes):
            shared = f"{prefix}_{stem}_s"
            for length, mask in itertools.product(SHARED_LENGTHS, masks):
                cases.append(Case(chip, shared, length, mask, "ddr"))
            for mask in masks:
                cases.append(Case(chip, shared, SRAM_LENGTH, mask, "shared_sram"))
            for length in PRIVATE_LENGTHS:
                cases.append(Case(chip, f"{prefix}_{stem}_p", length, None, "l2"))
    return cases


def _addresses(chip: dspsim.Chip, cname, case: Case) -> dict[str, int]:
    if case.region != "shared_sram":
        return place_operands(chip.config, cname, case.length)
    operands = cname.operator.inputs + (cname.operator.output,)
    stride = -(-case.length * cname.dtype.itemsize // 256) * 256
    base = chip.config.shared_sram.base_address
    return {operand: base + i * stride for i, operand in enumerate(operands)}


def run_case(case: Case, fidelity: str) -> dspsim.sim.machine.Timing:
    """Time ``case`` with ``fidelity`` on a fresh chip (timing only: numerics do not
    change cycles). Returns the call's RunResult."""
    chip = dspsim.Chip(case.chip)
    cname = chip.resolve(case.name)
    addresses = _addresses(chip, cname, case)
    for operand in cname.operator.inputs:
        chip.write(addresses[operand], np.zeros(case.length, cname.dtype.numpy))
    args = [addresses.get(arg, case.length) if arg in addresses or arg == "length" else None
            for arg in cname.operator.args]
    extra = {} if case.core_mask is None else {"core_mask": case.core_mask}
    return chip.call(case.name, *args, numerics=False, fidelity=fidelity, **extra)


@dataclass(frozen=True)
class Comparison:
    case: Case
    fast_cycles: int
    detailed_cycles: int
    fast_dma: str  # how the fast model timed the DMA: "fluid", "bursts" or "none"

    @property
    def difference(self) -> float:
        """(fast - detailed) / detailed."""
        return (self.fast_cycles - self.detailed_cycles) / self.detailed_cycles


def compare(case: Case) -> Comparison:
    """Both fidelities on one case."""
    fast = run_case(case, "fast")
    detailed = run_case(case, "detailed")
    return Comparison(case, fast.cycles, detailed.cycles, fast.timing.dma_model)


def summary(comparisons: list[Comparison]) -> dict:
    """Largest and mean absolute relative difference of a list of comparisons."""
    differences = [abs(c.difference) for c in comparisons]
    worst = max(comparisons, key=lambda c: abs(c.difference))
    return {"cases": len(comparisons), "largest_difference": max(differences),
            "mean_difference": sum(differences) / len(differences),
            "largest_case": worst.case.label}


def main() -> None:
    started = time.perf_counter()
    comparisons = [compare(case) for case in grid()]
    for c in comparisons:
        print(f"{c.case.label:60s} fast {c.fast_cycles:>9,} ({c.fast_dma:6s}) "
              f"detailed {c.detailed_cycles:>9,}  {100 * c.difference:+.2f}%")
    result = summary(comparisons)
    print(f"{result['cases']} cases in {time.perf_counter() - started:.1f} s: largest "
          f"difference {100 * result['largest_difference']:.2f}% ({result['largest_case']}), "
          f"mean {100 * result['mean_difference']:.3f}%")


if __name__ == "__main__":
    main()
