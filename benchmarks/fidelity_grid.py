"""The fidelity grid: the fast model against the detailed model on the same calls.

Operators × chips (and their dtypes) × core masks × lengths up to 2^16, shared-storage
calls with operands in DDR and in shared SRAM, and private-storage calls; then random
chips (burst sizes, per-core engines or shared controller pools, bandwidths, L2 sizes,
setups, clocks) with calls up to 2^19 elements, among them the regime where tile
transfers are short but the call is large enough for fluid flows. Each case is
timed twice, with ``fidelity="fast"`` and ``fidelity="detailed"``; the relative
difference of their cycle counts is what ``tests/test_fidelity.py`` bounds and what
``bench_sim.py`` reports.

Run it alone to print every case: ``python benchmarks/fidelity_grid.py``; it exits with
status 1 if a case misses the 1% target (but those :data:`KNOWN_MISSES` lists).
``--random-seed N`` times only random chips drawn from another seed, ``--staggered``
the staggered regime's large calls. Cycles are compared as the models compute
them, before rounding to whole cycles (a 57.5-cycle call is not 58 against 57).
"""
from __future__ import annotations

import argparse
import copy
import itertools
import random
import sys
import time
from dataclasses import dataclass

import numpy as np
import yaml

import dspsim
from dspsim.placement import place_operands
from dspsim.sim.chip.load import config_from_dict, packaged_chips

#: Operators with different bottlenecks: L2 load/store (relu_grad), the special-function
#: unit (gelu_grad), three inputs (smoothl1lossgrad), one input (l_relu), the ALUs on
#: MT7004 (h_swish_grad).
OPERATORS = ("relu_grad", "gelu_grad", "smoothl1lossgrad", "l_relu", "h_swish_grad")
#: chip -> (dtype prefixes, core masks of the shared-storage calls)
CHIPS = {"ft78ne": (("fp",), (0x1, 0x6, 0xff)), "mt7004": (("fp", "hp"), (0x1, 0x7, 0xf))}
SHARED_LENGTHS = (1000, 12345, 40000, 1 << 16)
SRAM_LENGTH = 12345  # shared-storage cases repeated with every operand in shared SRAM
PRIVATE_LENGTHS = (777, 4096)
#: the fast model must be within this relative difference of the detailed one, every case
TARGET = 0.01
#: Random chips in the grid, and the seed that draws them (the grid is the same every run).
RANDOM_CHIPS, RANDOM_SEED = 24, 2026
#: Cases known to miss the target, by label, and why: the tests hold each as a strict
#: expected failure, so that a fix is noticed; any other miss fails the benchmark.
KNOWN_MISSES = {
    "ft78ne* clock_mhz=1000 fp_h_swish_grad_s n=519365 mask 0xff ddr": (
        "five 8 GB/s controllers for eight cores, 4-byte L2 ports, 256-byte bursts and a "
        "25.6 GB/s DDR whose share per transfer (about 4.1 B/cycle) all but ties the port: "
        "fast 314,713, detailed 322,918 cycles (-2.54%; -1.76% before the path fill counted "
        "the last burst at its own size, -3.42% with the pool first come, first served). "
        "With twice the DDR -0.72%, 16-byte ports +0.00%, 64-byte bursts -0.48%: whole "
        "bursts queueing at a DDR this close to saturation, which fluid flows share without "
        "queueing"),
    "mt7004* clock_mhz=500 hp_gelu_grad_s n=519365 mask 0xf ddr": (
        "four 4 GB/s controllers for four cores behind 4-byte L2 ports, 128-byte bursts "
        "and a 10.67 GB/s DDR that the four ports all but saturate (16 of 17 bytes a "
        "cycle), timed staggered: fast 204,624, detailed 222,815 cycles (-8.16%). With "
        "16-byte ports +0.12%, eight controllers -0.10%, two cores +0.03%; burst by burst "
        "the fast model gives 222,816 (55,474 events, 0.27 s). The known miss above, "
        "drawn again: fluid flows share a saturated link without the queueing of whole "
        "bursts, and the pool's choices follow"),
}


@dataclass(frozen=True)
class Case:
    """One call of the grid."""

    chip: str
    name: str  # C name
    length: int
    core_mask: int | None  # None for private-storage calls
    region: str  # where the operands live: "ddr", "shared_sram" or "l2"
    changes: tuple = ()  # (key path, value) pairs applied to the packaged chip's YAML

    @property
    def label(self) -> str:
        mask = "" if self.core_mask is None else f" mask {self.core_mask:#x}"
        chip = self.chip + ("*" + "".join(f" {k}={v}" for k, v in self.changes[:1])
                            if self.changes else "")
        return f"{chip} {self.name} n={self.length}{mask} {self.region}"

    def make_chip(self) -> dspsim.Chip:
        """The case's chip: the packaged one with ``changes`` applied."""
        if not self.changes:
            return dspsim.Chip(self.chip)
        with open(packaged_chips()[self.chip], encoding="utf-8") as handle:
            raw = yaml.safe_load(handle)
        for path, value in self.changes:
            node = raw
            *parents, leaf = path.split(".")
            for key in parents:
                node = node[key]
            if value is None:
                node.pop(leaf, None)
            else:
                node[leaf] = copy.deepcopy(value)
        return dspsim.Chip(config_from_dict(raw, f"<{self.chip} redrawn>"))


def per_core_engines(count: int, gbps: float) -> tuple:
    """Key changes that give every core ``count`` DMA engines of its own, of ``gbps`` each."""
    return (("dma.model", None), ("dma.controllers", None), ("dma.engines_per_core", count),
            ("dma.engine_bandwidth_gbps", gbps))


def controller_pool(*controllers: tuple[int, float]) -> tuple:
    """Key changes that give the chip one pool of transfer controllers shared by every
    core: ``controllers`` are (count, GB/s) of each kind, named tc0, tc1 and on."""
    return (("dma.model", None), ("dma.engines_per_core", None),
            ("dma.engine_bandwidth_gbps", None),
            ("dma.controllers", [{"name": f"tc{kind}", "count": count, "bandwidth_gbps": gbps}
                                 for kind, (count, gbps) in enumerate(controllers)]))


def random_chip_changes(rng: random.Random) -> tuple:
    """Key changes that redraw a packaged chip's DMA, L2, clock and bursts."""
    changes = [("clock_mhz", rng.choice([500, 1000, 1500])),
               ("dma.burst_bytes", rng.choice([64, 128, 256, 512])),
               ("dma.setup_cycles", rng.choice([0, 50, 200, 496])),
               ("memory.l2.size_kib", rng.choice([64, 128, 256, 512])),
               ("memory.l2.reserve_kib", rng.choice([8, 16, 32])),
               ("memory.ddr.peak_bandwidth_gbps", rng.choice([6.4, 10.67, 25.6, 51.2]))]
    if rng.random() < 0.5:
        changes += per_core_engines(rng.randint(1, 3), rng.choice([2.0, 5.33, 12.8, 36.7]))
    else:
        changes += controller_pool(*[(rng.randint(1, 4), rng.choice([4.0, 8.0, 16.0]))
                                     for _ in range(rng.randint(1, 2))])
    return tuple(changes)


def random_cases(seed: int = RANDOM_SEED) -> list[Case]:
    """Calls on random chips drawn from ``seed``, up to 2^19 elements (the short-tile
    large-call regime)."""
    rng = random.Random(seed)
    # the L2 port's width, drawn apart so that the draws above stay what they were: narrow
    # ports are where a pool's choices decide how many transfers share one
    ports = random.Random(seed + 1)
    cases = []
    for index in range(RANDOM_CHIPS):
        chip = rng.choice(sorted(CHIPS))
        prefix = rng.choice(CHIPS[chip][0])
        stem = rng.choice(OPERATORS)
        cores = 8 if chip == "ft78ne" else 4
        mask = rng.choice([0x1, (1 << cores) - 1, rng.randint(1, (1 << cores) - 1)])
        length = rng.choice([30_000, 100_000, 250_000, 519_365])
        changes = random_chip_changes(rng) + (
            ("memory.l2.load_store_bytes_per_cycle", ports.choice([4, 16, 64])),)
        if index % 3 == 0:  # the short-tile large-call regime: a small L2, a large call
            changes += (("memory.l2.size_kib", 64), ("memory.l2.reserve_kib", 32))
            length = 519_365
            if mask == 0x1:  # one core's short transfers go burst by burst at any size
                mask = (1 << cores) - 1
        cases.append(Case(chip, f"{prefix}_{stem}_s", length, mask, "ddr", changes))
    return cases


#: Short tile transfers in a call large enough for fluid flows: one core, three engines of
#: its own each slower than its share of DDR, 256-byte bursts, a 64 KiB L2, long setups.
#: Fluid flows once kept the loads and the store in lock-step here (13% from detailed).
SHORT_TILE_REGIME = tuple(
    Case(chip, "fp_h_swish_grad_s", 519_365, 0x1, "ddr", (
        ("clock_mhz", 1500), ("dma.burst_bytes", 256), ("dma.setup_cycles", 496),
        ("memory.l2.size_kib", 64)) + per_core_engines(3, 36.7))
    for chip in ("mt7004", "ft78ne"))


#: A pool whose choice is judged at the crowd of the moment, drawn from another seed
#: (``--random-seed 8``) and kept apart from the grid, whose statistics it would not
#: belong to: one core, one 4 GB/s and two 16 GB/s controllers, a 16-byte L2 port,
#: 64-byte bursts. Its loads bind the call, and which controller a load waits for hangs
#: on transfers ending a few cycles apart, which fluid flows and bursts place differently.
#: It missed by 13.2% (fast 265,965, detailed 306,510 cycles) while a busy controller
#: running past its estimated end was judged beside its own transfer; the tests hold it
#: to the grid's target beside the grid.
POOL_CROWD_REGIME = (
    Case("mt7004", "hp_smoothl1lossgrad_s", 519_365, 0x1, "ddr", (
        ("dma.burst_bytes", 64), ("clock_mhz", 500), ("dma.setup_cycles", 0),
        ("memory.l2.size_kib", 128), ("memory.l2.reserve_kib", 8),
        ("memory.ddr.peak_bandwidth_gbps", 25.6)) + controller_pool((1, 4.0), (2, 16.0))
        + (("memory.l2.load_store_bytes_per_cycle", 16),)),)


#: A pool with no more controllers than cores behind ports that all but saturate DDR,
#: drawn by ``--random-seed 13`` once the grid's short-tile draws ran on several cores,
#: and kept apart from the grid: the tests hold it (a known miss) beside the grid.
PORT_BOUND_POOL_REGIME = (
    Case("mt7004", "hp_gelu_grad_s", 519_365, 0xf, "ddr", (
        ("clock_mhz", 500), ("dma.burst_bytes", 128), ("dma.setup_cycles", 50),
        ("memory.l2.size_kib", 64), ("memory.l2.reserve_kib", 32),
        ("memory.ddr.peak_bandwidth_gbps", 10.67)) + controller_pool((4, 4.0))
        + (("memory.l2.load_store_bytes_per_cycle", 4),)),)


#: Engines of one core in lock-step, found by a random chip of the invariant tests
#: (explore seed 77) and kept apart from the grid: a tile fixed short, two or three
#: engines per core, a DDR they can saturate. Staggered fluid flows put them 10.5% and
#: 2.8% above detailed; a call on one core now goes burst by burst, and the tests hold
#: them to the grid's target beside the grid.
ENGINE_LOCKSTEP_REGIME = tuple(
    Case("ft78ne", "fp_relu_grad_s", 300_001, 0x1, "ddr", (
        ("dma.engines_per_core", engines), ("dma.engine_bandwidth_gbps", 11.0),
        ("dma.model", None), ("dma.controllers", None), ("dma.setup_cycles", 49),
        ("memory.ddr.peak_bandwidth_gbps", 35.0), ("memory.ddr.efficiency", 0.3125),
        ("tiling", {"policy": "fixed", "tile_bytes": 1024}))) for engines in (2, 3))


#: The staggered regime on FT78NE's own EDMA3 pool and on per-core engines: short tiles
#: in calls too large to time burst by burst, from shared SRAM and DDR, on 2 to 8 cores
#: (core counts where the cores' transfers meet in the pool in different phases).
STAGGERED_REGIME = tuple(
    [Case("ft78ne", "fp_relu_grad_s", 1 << 18, (1 << k) - 1, "shared_sram") for k in (2, 4, 6, 8)]
    + [Case("ft78ne", "fp_l_relu_s", 300_001, 0xff, "ddr"),
       Case("mt7004", "fp_relu_grad_s", 519_365, 0xf, "ddr",
            (("memory.l2.size_kib", 64), ("memory.l2.reserve_kib", 32)))])


def staggered_grid() -> list[Case]:
    """The staggered-regime cases (``--staggered``): large calls, slow in detailed."""
    return list(STAGGERED_REGIME)


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
    return cases + random_cases() + list(SHORT_TILE_REGIME)


def _addresses(chip: dspsim.Chip, cname, case: Case) -> dict[str, int]:
    if case.region != "shared_sram":
        return place_operands(chip.config, cname, case.length)
    operands = cname.operator.inputs + (cname.operator.output,)
    stride = -(-case.length * cname.dtype.itemsize // 256) * 256
    base = chip.config.level("shared_sram").base_address
    return {operand: base + i * stride for i, operand in enumerate(operands)}


def run_case(case: Case, fidelity: str) -> dspsim.sim.engine.machine.Timing:
    """Time ``case`` with ``fidelity`` on a fresh chip (timing only: numerics do not
    change cycles). Returns the call's RunResult."""
    chip = case.make_chip()
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
    fast_cycles: float  # as computed, before the result rounds them to whole cycles
    detailed_cycles: float
    fast_dma: str  # how the fast model timed the DMA: "fluid", "bursts" or "none"

    @property
    def difference(self) -> float:
        """(fast - detailed) / detailed."""
        return (self.fast_cycles - self.detailed_cycles) / self.detailed_cycles


def compare(case: Case) -> Comparison:
    """Both fidelities on one case."""
    fast = run_case(case, "fast")
    detailed = run_case(case, "detailed")
    return Comparison(case, fast.timing.cycles, detailed.timing.cycles,
                      fast.timing.transfer_timing)


def summary(comparisons: list[Comparison]) -> dict:
    """Largest and mean absolute relative difference of a list of comparisons."""
    differences = [abs(c.difference) for c in comparisons]
    worst = max(comparisons, key=lambda c: abs(c.difference))
    return {"cases": len(comparisons), "largest_difference": max(differences),
            "mean_difference": sum(differences) / len(differences),
            "largest_case": worst.case.label}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--staggered", action="store_true",
                        help="time the staggered-regime cases (STAGGERED_REGIME) instead")
    parser.add_argument("--random-seed", type=int, metavar="N",
                        help=f"time only {RANDOM_CHIPS} random chips drawn from seed N "
                             f"(the grid's own are drawn from {RANDOM_SEED})")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Time every case at both fidelities and print them; exit status 1 if a case misses
    that :data:`KNOWN_MISSES` does not list."""
    args = build_parser().parse_args(argv)
    started = time.perf_counter()
    if args.random_seed is not None:
        cases = random_cases(args.random_seed)
    else:
        cases = staggered_grid() if args.staggered else grid()
    comparisons = [compare(case) for case in cases]
    for c in comparisons:
        print(f"{c.case.label:60s} fast {c.fast_cycles:>11,.1f} ({c.fast_dma:6s}) "
              f"detailed {c.detailed_cycles:>11,.1f}  {100 * c.difference:+.2f}%")
    print("\nby how the fast model timed the DMA (random chips marked *):")
    print(f"{'fast model DMA':24s} {'cases':>6s} {'largest':>8s} {'mean':>8s}")
    groups: dict[str, list[Comparison]] = {}
    for c in comparisons:
        kind = "random chips" if c.case.changes else "packaged chips"
        groups.setdefault(f"{c.fast_dma} ({kind})", []).append(c)
    for label, members in sorted(groups.items()):
        part = summary(members)
        print(f"{label:24s} {part['cases']:>6d} {100 * part['largest_difference']:>7.2f}% "
              f"{100 * part['mean_difference']:>7.3f}%")
    result = summary(comparisons)
    print(f"{result['cases']} cases in {time.perf_counter() - started:.1f} s: largest "
          f"difference {100 * result['largest_difference']:.2f}% ({result['largest_case']}), "
          f"mean {100 * result['mean_difference']:.3f}%")
    missed = [c for c in comparisons if abs(c.difference) > TARGET]
    for c in missed:
        known = " (known: KNOWN_MISSES)" if c.case.label in KNOWN_MISSES else ""
        print(f"MISSED: {c.case.label}: fast is {100 * c.difference:+.2f}% from detailed "
              f"(target within {100 * TARGET:g}%){known}")
    return 1 if any(c.case.label not in KNOWN_MISSES for c in missed) else 0


if __name__ == "__main__":
    sys.exit(main())
