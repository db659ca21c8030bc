"""The scaling targets, scanned over random lengths and core masks on the packaged chips.

For every shared-storage operator (fp32 on FT78NE, fp16 on MT7004) and ``--trials``
random lengths each, the scan adds the chip's cores one by one in a random order and
records:

* the worst **one more core** step: the largest relative increase in cycles when a core
  joins (lengths 2^14 to 2^21; target at most +1%);
* the worst **one more vector per core** step: the largest relative decrease when each
  core of a random mask gets one more vector (lengths 2^12 to 2^20; target at most -1%);
* the lowest **roofline share** (bound / cycles) of calls of 2^20 elements or more on
  every core count (target at least 0.90).

    python benchmarks/scaling_scan.py               # seed 7, 2 trials per operator
    python benchmarks/scaling_scan.py --seed 11 --trials 4

It prints each chip's worst cases and exits with status 1 if a target is missed.
"""
from __future__ import annotations

import argparse
import random
import sys
import time

import dspsim
from dspsim.placement import c_arguments, place_operands

CHIPS = {"ft78ne": "fp_", "mt7004": "hp_"}
CORE_STEP, VECTOR_STEP, ROOFLINE_SHARE = 0.01, 0.01, 0.90


def timed(chip: dspsim.Chip, name: str, length: int, mask: int):
    """A timing-only call on zero inputs at the placement ``dspsim run`` uses."""
    cname = chip.resolve(name)
    addresses = place_operands(chip.config, cname, length)
    for operand in cname.operator.inputs:
        chip.zero(addresses[operand], length, cname.dtype.numpy)
    args = c_arguments(cname.operator, addresses, length)
    return chip.call(name, *args, core_mask=mask, numerics=False)


def scan_chip(chip_name: str, prefix: str, rng: random.Random, trials: int) -> dict:
    """The worst step of each kind, and the case that gave it."""
    chip = dspsim.Chip(chip_name)
    cores = chip.config.cores
    worst = {"core step": (0.0, None), "vector step": (0.0, None), "roofline": (1.0, None)}
    names = [n for n in chip.operator_names() if n.startswith(prefix) and n.endswith("_s")]
    for name in names:
        lanes = chip.config.lanes(chip.resolve(name).dtype.name)
        for _ in range(trials):
            length = rng.randint(1 << 14, 1 << 21)
            order = rng.sample(range(cores), cores)
            previous = None
            for count in range(1, cores + 1):
                mask = sum(1 << core for core in order[:count])
                result = timed(chip, name, length, mask)
                if previous is not None:
                    step = result.cycles / previous - 1
                    if step > worst["core step"][0]:
                        worst["core step"] = (step, f"{name} n={length} {count - 1} -> "
                                              f"{count} cores (mask {mask:#x})")
                previous = result.cycles
                share = result.roofline_cycles / result.cycles
                if length >= 1 << 20 and share < worst["roofline"][0]:
                    worst["roofline"] = (share, f"{name} n={length} mask {mask:#x}")
            count = rng.randint(1, cores)
            mask = sum(1 << core for core in rng.sample(range(cores), count))
            length = rng.randint(1 << 12, 1 << 20)
            before = timed(chip, name, length, mask).cycles
            after = timed(chip, name, length + lanes * count, mask).cycles
            step = 1 - after / before
            if step > worst["vector step"][0]:
                worst["vector step"] = (step, f"{name} n={length} mask {mask:#x}")
    return worst


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=7, help="draws lengths and masks")
    parser.add_argument("--trials", type=int, default=2, help="lengths per operator")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Scan both chips; exit status 1 if a target is missed."""
    args = build_parser().parse_args(argv)
    rng = random.Random(args.seed)
    missed = 0
    for chip_name, prefix in CHIPS.items():
        started = time.perf_counter()
        worst = scan_chip(chip_name, prefix, rng, args.trials)
        print(f"{chip_name} ({time.perf_counter() - started:.0f} s):")
        step, case = worst["core step"]
        print(f"  worst one-more-core step    {100 * step:+.3f}%  {case or ''}")
        missed += step > CORE_STEP
        step, case = worst["vector step"]
        print(f"  worst one-more-vector step  {-100 * step:+.3f}%  {case or ''}")
        missed += step > VECTOR_STEP
        share, case = worst["roofline"]
        print(f"  lowest roofline share       {share:.3f}    {case or ''}")
        missed += share < ROOFLINE_SHARE
    if missed:
        print(f"{missed} target(s) missed: exit status 1")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
