"""A/B of timing-only calls against an earlier commit's engine, on this machine, now.

The earlier commit is extracted from git history into a temporary folder; each engine
then runs the same grid (operators x both chips x core masks x lengths) in subprocesses of
its own, every call the first timing-only call on a fresh chip, timed in CPU seconds
(``time.process_time``, so that other processes on the machine count less). Each engine
runs the grid ``repeats`` times, in alternation, each time in a new process (tile choices
are remembered per process), and the shortest time of each case is kept. It prints each
case, the geometric mean and the worst ratio (this tree / the earlier one), the simulated
cycles per CPU-second at the largest length, and checks the targets.

    python benchmarks/ab_engine.py                     # against 10c9bbc, 2^10 ... 2^24
    python benchmarks/ab_engine.py --quick             # 2^10, 2^16, 2^20, 2^24
    python benchmarks/ab_engine.py --against HEAD~3 --repeats 1

Without git history (an unpacked release), it says so and exits 0.
"""
from __future__ import annotations

import argparse
import io
import json
import math
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: the last engine before the tile search
BASELINE = "10c9bbc"
#: (chip, C names, core masks: one core, an odd count, all)
CHIPS = (("ft78ne", ("fp_relu_grad_s", "fp_gelu_grad_s"), (0x1, 0x7, 0xff)),
         ("mt7004", ("hp_relu_grad_s", "hp_gelu_grad_s"), (0x1, 0x7, 0xf)))
LENGTHS = tuple(1 << p for p in range(10, 25, 2))
QUICK_LENGTHS = tuple(1 << p for p in (10, 16, 20, 24))
GEOMEAN_TARGET = 1.0  # this tree / the earlier engine, geometric mean over the grid
WORST_TARGET = 3.0  # ... and in every case
CYCLES_PER_SECOND_TARGET = 1e9  # at the largest length, every chip and mask

#: What a worker runs before each call: a fresh chip, its inputs written, the call's C
#: arguments. Workers run in a subprocess with the engine's tree first on sys.path, so
#: this uses only what every engine offers (Chip, chip.write, dspsim.placement).
CALL_SETUP = r"""
import json, sys, time
import numpy as np
import dspsim
from dspsim.placement import c_arguments, place_operands

def prepared(chip_name, name, length):
    chip = dspsim.Chip(chip_name)
    cname = chip.resolve(name)
    op = cname.operator
    addresses = place_operands(chip.config, cname, length)
    for operand in op.inputs:
        chip.write(addresses[operand], np.ones(length, cname.dtype.numpy))
    return chip, c_arguments(op, addresses, length, {p.name: p.default for p in op.params})
"""

#: The worker: each case's first timing-only call on a fresh chip, in CPU seconds.
WORKER = CALL_SETUP + r"""
rows = []
for chip_name, name, mask, length in json.loads(sys.argv[1]):
    chip, args = prepared(chip_name, name, length)
    started = time.process_time()
    result = chip.call(name, *args, core_mask=mask, numerics=False)
    rows.append((time.process_time() - started, float(result.cycles)))
print(json.dumps(rows))
"""


def extract(commit: str, into: Path) -> Path | None:
    """The tree of ``commit`` unpacked in ``into``, importable as ``dspsim``; None (with
    a note) when git or the commit is not available."""
    try:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", commit],
                                 capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        detail = getattr(error, "stderr", b"") or b""
        print(f"A/B skipped: commit {commit} is not in this checkout's git history "
              f"({detail.decode(errors='replace').strip() or error})")
        return None
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    # trees that map sim/, kernels/ and configs/ into the package by setuptools only
    for part in ("sim", "kernels", "configs"):
        link = into / "dspsim" / part
        if (into / part).is_dir() and not link.exists():
            link.symlink_to(Path("..") / part)
    return into


def run_grid(tree: Path, cases: list[tuple]) -> list[tuple[float, float]]:
    """(CPU seconds, cycles) of each case's first timing-only call, in a subprocess that
    imports the engine from ``tree``."""
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONHASHSEED="0")
    done = subprocess.run([sys.executable, "-c", WORKER, json.dumps(cases)], env=env,
                          cwd=tempfile.gettempdir(), capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"the engine in {tree} failed:\n{done.stderr[-2000:]}")
    return [tuple(row) for row in json.loads(done.stdout)]


def grid(lengths) -> list[tuple]:
    return [(chip, name, mask, length) for chip, names, masks in CHIPS for name in names
            for mask in masks for length in lengths]


def compare(against: str, lengths, repeats: int) -> dict | None:
    """Both engines over the grid; None if ``against`` cannot be extracted."""
    cases = grid(lengths)
    with tempfile.TemporaryDirectory(prefix="dspsim-ab-") as folder:
        earlier = extract(against, Path(folder))
        if earlier is None:
            return None
        best = {"new": [math.inf] * len(cases), "old": [math.inf] * len(cases)}
        cycles = {}
        for _ in range(repeats):
            for label, tree in (("old", earlier), ("new", ROOT)):
                for k, (seconds, cyc) in enumerate(run_grid(tree, cases)):
                    best[label][k] = min(best[label][k], seconds)
                    cycles[label, k] = cyc
    rows = [{"chip": c[0], "operator": c[1], "core_mask": c[2], "length": c[3],
             "new_s": best["new"][k], "old_s": best["old"][k],
             "ratio": best["new"][k] / max(best["old"][k], 1e-9),
             "cycles": cycles["new", k], "old_cycles": cycles["old", k],
             "cycles_per_cpu_second": cycles["new", k] / max(best["new"][k], 1e-9)}
            for k, c in enumerate(cases)]
    ratios = [r["ratio"] for r in rows]
    largest = max(lengths)
    return {"against": against, "rows": rows,
            "geomean": math.exp(sum(map(math.log, ratios)) / len(ratios)),
            "worst": max(rows, key=lambda r: r["ratio"]),
            "slowest_at_largest": min((r for r in rows if r["length"] == largest),
                                      key=lambda r: r["cycles_per_cpu_second"])}


def report(summary: dict) -> list[tuple[str, str, bool]]:
    """Print the table and return the targets as (target, measured, met)."""
    print(f"{'chip':7} {'operator':16} {'mask':>5} {'length':>7} {'new ms':>9} "
          f"{'old ms':>8} {'ratio':>7} {'sim cycles/CPU-s':>17}")
    for r in summary["rows"]:
        print(f"{r['chip']:7} {r['operator']:16} {r['core_mask']:#5x} "
              f"2^{r['length'].bit_length() - 1:<5} {1e3 * r['new_s']:9.2f} "
              f"{1e3 * r['old_s']:8.2f} {r['ratio']:7.2f} {r['cycles_per_cpu_second']:17.3g}")
    worst, slowest = summary["worst"], summary["slowest_at_largest"]
    def name(r):
        return (f"{r['chip']} {r['operator']} {r['core_mask']:#x} "
                f"2^{r['length'].bit_length() - 1}")
    return [
        (f"geometric mean against {summary['against']} <= {GEOMEAN_TARGET:g}x",
         f"{summary['geomean']:.2f}x", summary["geomean"] <= GEOMEAN_TARGET),
        (f"worst case <= {WORST_TARGET:g}x", f"{worst['ratio']:.1f}x ({name(worst)})",
         worst["ratio"] <= WORST_TARGET),
        (f"simulated cycles per CPU-second at the largest length >= "
         f"{CYCLES_PER_SECOND_TARGET:.0e}",
         f"{slowest['cycles_per_cpu_second']:.3g} at least ({name(slowest)})",
         slowest["cycles_per_cpu_second"] >= CYCLES_PER_SECOND_TARGET)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", default=BASELINE,
                        help=f"the commit to compare with (default {BASELINE})")
    parser.add_argument("--quick", action="store_true", help="lengths 2^10, 2^16, 2^20, 2^24")
    parser.add_argument("--repeats", type=int, default=2,
                        help="runs of the grid per engine, the shortest time kept (default 2)")
    parser.add_argument("--json", type=Path, help="also write the rows and summary here")
    args = parser.parse_args(argv)
    summary = compare(args.against, QUICK_LENGTHS if args.quick else LENGTHS,
                      max(1, args.repeats))
    if summary is None:
        return 0
    checks = report(summary)
    for target, measured, met in checks:
        print(f"{'met' if met else 'MISSED'}  {target}: {measured}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({**summary, "targets": checks}, indent=2))
    return 0 if all(met for _, _, met in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
