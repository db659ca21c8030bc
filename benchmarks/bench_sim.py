"""How fast and how accurate the simulator is: a table, a JSON file, and target checks.

For each benchmarked operator and length it measures, with inputs already in simulated
memory:

* the wall time of the call (numerics, timing model and result object), best of N;
* the wall time of plain numpy computing the same result from the same arrays (the
  operator's own numpy formula on ordinary arrays), best of N, and the ratio of the two;
* the wall time of the timing-only call (``numerics=False``) and the simulated cycles it
  covers per wall second;
* the SimPy events the call scheduled, its tiles and events per tile;
* the extra peak memory of the call (tracemalloc, which sees numpy's buffers) against
  the bytes of its operands.

It then runs the fidelity grid (``fidelity_grid.py``: the fast model against the
detailed model) and reports the largest and mean difference.

    python benchmarks/bench_sim.py              # lengths 2^16 ... 2^24, 5 repeats
    python benchmarks/bench_sim.py --quick      # lengths 2^16, 2^20, 2^24, 3 repeats
    python benchmarks/bench_sim.py --json out.json --no-grid
    python benchmarks/bench_sim.py --quick --ab 10c9bbc   # and the A/B (ab_engine.py)

With ``--ab COMMIT`` it also runs ``ab_engine.py``: timing-only calls of this tree against
the engine of an earlier commit, over operators x both chips x masks x lengths, whose
targets (geometric mean, worst case, simulated cycles per CPU-second) join the checks.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import simpy
from rich.console import Console
from rich.table import Table

import dspsim
from dspsim.atomic import write_atomically
from dspsim.placement import c_arguments, place_operands

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ab_engine  # noqa: E402  (sibling scripts, not a package)
import fidelity_grid  # noqa: E402

#: (chip, C name, core mask) of every benchmarked row
CALLS = (("ft78ne", "fp_relu_grad_s", 0xff), ("ft78ne", "fp_gelu_grad_s", 0xff),
         ("mt7004", "hp_relu_grad_s", 0xf))
LENGTHS = tuple(1 << p for p in (16, 18, 20, 22, 24))
QUICK_LENGTHS = tuple(1 << p for p in (16, 20, 24))
#: results go to a folder git ignores, so that a run leaves the checkout clean
DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "bench_sim.json"

# the targets the simulator is held to
RATIO_TARGET = 1.2  # call / numpy, at every length from RATIO_FROM on
RATIO_FROM = 1 << 20
CYCLES_PER_SECOND_TARGET = 1e9  # timing only, at the largest length
EVENTS_PER_TILE_SPREAD_TARGET = 1.5  # largest / smallest events per tile across lengths


def _best(repeats: int, action) -> float:
    """The shortest wall time of ``repeats`` runs of ``action``, in seconds."""
    best = float("inf")
    gc.collect()
    gc.disable()  # a collection in the middle of one run is noise, not simulator cost
    try:
        for _ in range(repeats):
            started = time.perf_counter()
            action()
            best = min(best, time.perf_counter() - started)
    finally:
        gc.enable()
    return best


def _extra_peak_bytes(action) -> int:
    """Peak bytes allocated while ``action`` runs, above what was allocated before."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        action()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return max(0, peak - before)


def measure(chip_name: str, name: str, core_mask: int, length: int, repeats: int) -> dict:
    """One row of the table: the call against numpy at one length."""
    chip = dspsim.Chip(chip_name)
    cname = chip.resolve(name)
    op, dtype = cname.operator, cname.dtype.numpy
    addresses = place_operands(chip.config, cname, length)
    rng = np.random.default_rng(length)
    arrays = {operand: values.astype(dtype)
              for operand, values in op.random_inputs(rng, length).items()}
    for operand in op.inputs:
        chip.write(addresses[operand], arrays[operand])
    params = {p.name: p.default for p in op.params}
    args = c_arguments(op, addresses, length, params)
    inputs = [arrays[operand] for operand in op.inputs]

    def plain_numpy():
        with np.errstate(all="ignore"):
            return op.compute(*inputs, **params)

    def call():
        return chip.call(name, *args, core_mask=core_mask)

    def timing_only():
        return chip.call(name, *args, core_mask=core_mask, numerics=False)

    result = call()  # also brings the destination's pages into memory once, as numpy's are
    expected = np.asarray(plain_numpy(), dtype=dtype)
    got = chip.read(addresses[op.output], length, dtype)
    if not np.array_equal(got, expected, equal_nan=True):
        raise SystemExit(f"{name} at {length}: the simulated result differs from numpy's")
    numpy_s = _best(repeats, plain_numpy)
    call_s = _best(repeats, call)
    timing_s = _best(repeats, timing_only)
    operand_bytes = (len(op.inputs) + 1) * length * cname.dtype.itemsize
    extra = _extra_peak_bytes(call)
    return {
        "chip": result.chip, "operator": name, "core_mask": core_mask, "length": length,
        "dtype": result.dtype, "cycles": result.cycles, "numpy_s": numpy_s, "call_s": call_s,
        "ratio": call_s / numpy_s, "timing_only_s": timing_s,
        "simulated_cycles_per_second": result.cycles / timing_s,
        "simulated_cycles_per_second_with_numerics": result.cycles / call_s,
        "scheduled_events": result.scheduled_events, "tiles": result.tiles,
        "events_per_tile": result.scheduled_events / result.tiles,
        "transfer_timing": result.timing.transfer_timing,
        "extra_peak_bytes": extra, "operand_bytes": operand_bytes,
        "extra_over_operands": extra / operand_bytes,
    }


def run_grid() -> dict:
    """The fidelity grid's summary, overall and by how the fast model timed the DMA."""
    started = time.perf_counter()
    comparisons = [fidelity_grid.compare(case) for case in fidelity_grid.grid()]
    summary = fidelity_grid.summary(comparisons)
    summary["seconds"] = time.perf_counter() - started
    summary["by_fast_transfer_timing"] = {
        model: fidelity_grid.summary([c for c in comparisons if c.fast_dma == model])
        for model in sorted({c.fast_dma for c in comparisons})}
    return summary


def check_targets(rows: list[dict], grid: dict | None = None) -> list[dict]:
    """Each target with what was measured and whether it holds."""
    checks = []
    if grid is not None:
        checks.append({"target": f"fidelity grid: fast within {100 * fidelity_grid.TARGET:g}% "
                                 f"of detailed in every case",
                       "measured": f"{100 * grid['largest_difference']:.2f}% "
                                   f"({grid['largest_case']})",
                       "ok": grid["largest_difference"] <= fidelity_grid.TARGET})
    for chip, name, _ in CALLS:
        mine = [r for r in rows if r["operator"] == name and r["chip"].lower() == chip]
        largest = max(mine, key=lambda r: r["length"])
        label = f"{chip} {name} at 2^{largest['length'].bit_length() - 1}"
        per_tile = [r["events_per_tile"] for r in mine]
        checks += [
            {"target": f"{chip} {name} at 2^{r['length'].bit_length() - 1}: call / numpy "
                       f"<= {RATIO_TARGET}",
             "measured": round(r["ratio"], 3), "ok": r["ratio"] <= RATIO_TARGET}
            for r in mine if r["length"] >= RATIO_FROM]
        checks += [
            {"target": f"{label}: timing only >= {CYCLES_PER_SECOND_TARGET:.0e} cycles/s",
             "measured": f"{largest['simulated_cycles_per_second']:.3g}",
             "ok": largest["simulated_cycles_per_second"] >= CYCLES_PER_SECOND_TARGET},
            {"target": f"{label}: extra peak memory <= operands' bytes",
             "measured": f"{largest['extra_over_operands']:.2f} x operands",
             "ok": largest["extra_peak_bytes"] <= largest["operand_bytes"]},
            # a solved steady state makes long calls cost fewer events per tile, never more
            {"target": f"{chip} {name}: events per tile do not grow with length "
                       f"(at any length <= {EVENTS_PER_TILE_SPREAD_TARGET} x at the smallest)",
             "measured": f"{per_tile[0]:.2f} at the smallest, at most {max(per_tile):.2f}",
             "ok": max(per_tile) <= EVENTS_PER_TILE_SPREAD_TARGET * per_tile[0]},
        ]
    return checks


def machine_description() -> dict:
    return {"python": platform.python_version(), "numpy": np.__version__,
            "simpy": simpy.__version__, "dspsim": dspsim.__version__,
            "platform": platform.platform(), "processor": platform.processor(),
            "cpus": os.cpu_count()}


def render(console: Console, rows: list[dict], checks: list[dict], grid: dict | None) -> None:
    table = Table(title="dspsim speed against plain numpy (best of repeats; inputs already "
                        "in simulated memory)", title_justify="left")
    for column in ("chip", "operator", "length", "numpy ms", "call ms", "ratio",
                   "timing-only ms", "sim cycles/s", "events", "tiles", "events/tile",
                   "extra MiB", "operands MiB"):
        table.add_column(column, justify="left" if column in ("chip", "operator") else "right")
    for r in rows:
        table.add_row(r["chip"], r["operator"], f"2^{r['length'].bit_length() - 1}",
                      f"{1e3 * r['numpy_s']:.2f}", f"{1e3 * r['call_s']:.2f}",
                      f"{r['ratio']:.2f}", f"{1e3 * r['timing_only_s']:.2f}",
                      f"{r['simulated_cycles_per_second']:.3g}", f"{r['scheduled_events']:,}",
                      f"{r['tiles']:,}", f"{r['events_per_tile']:.2f}",
                      f"{r['extra_peak_bytes'] / 2**20:.1f}",
                      f"{r['operand_bytes'] / 2**20:.1f}")
    console.print(table)
    for check in checks:
        verdict = "[green]met[/]" if check["ok"] else "[red]MISSED[/]"
        console.print(f"{verdict}  {check['target']}: {check['measured']}")
    if grid is not None:
        console.print(
            f"fidelity grid: {grid['cases']} cases (fast against detailed) in "
            f"{grid['seconds']:.1f} s: largest difference "
            f"{100 * grid['largest_difference']:.2f}% ({grid['largest_case']}), mean "
            f"{100 * grid['mean_difference']:.3f}%")
        for model, part in grid["by_fast_transfer_timing"].items():
            console.print(f"  fast DMA as {model}: {part['cases']} cases, largest "
                          f"{100 * part['largest_difference']:.2f}%, mean "
                          f"{100 * part['mean_difference']:.3f}%")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="lengths 2^16, 2^20 and 2^24 only, 3 repeats")
    parser.add_argument("--repeats", type=int, default=None,
                        help="runs per measurement, the best is kept (default 5, quick 3)")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON,
                        help=f"where to write the results (default {DEFAULT_JSON}, which git "
                             f"ignores)")
    parser.add_argument("--no-grid", action="store_true", help="skip the fidelity grid")
    parser.add_argument("--ab", metavar="COMMIT",
                        help="also compare timing-only calls with the engine of COMMIT "
                             f"(e.g. {ab_engine.BASELINE}, the last before the tile search)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Measure, print, write the JSON; exit status 1 if any target is missed."""
    parser = build_parser()
    args = parser.parse_args(argv)
    repeats = args.repeats or (3 if args.quick else 5)
    if repeats < 1:
        parser.error("--repeats must be at least 1")
    lengths = QUICK_LENGTHS if args.quick else LENGTHS
    console = Console()
    if not console.is_terminal:  # a file or a pipe: room for the whole table
        console = Console(width=200)
    rows = []
    for chip, name, mask in CALLS:
        for length in lengths:
            console.print(f"[dim]measuring {chip} {name} at {length:,}...[/]")
            rows.append(measure(chip, name, mask, length, repeats))
    grid = None if args.no_grid else run_grid()
    checks = check_targets(rows, grid)
    render(console, rows, checks, grid)
    ab = None
    if args.ab:
        ab = ab_engine.compare(args.ab, ab_engine.QUICK_LENGTHS if args.quick
                               else ab_engine.LENGTHS, repeats)
        if ab is not None:  # None: no history to compare with (a note was printed)
            ab_checks = [{"target": target, "measured": measured, "ok": met}
                         for target, measured, met in ab_engine.report(ab)]
            for check in ab_checks:
                verdict = "[green]met[/]" if check["ok"] else "[red]MISSED[/]"
                console.print(f"{verdict}  {check['target']}: {check['measured']}")
            checks += ab_checks
    write_atomically(json.dumps({
        "command": " ".join(["python", "benchmarks/bench_sim.py", *(argv or sys.argv[1:])]),
        "machine": machine_description(), "repeats": repeats, "rows": rows,
        "targets": checks, "fidelity_grid": grid, "ab": ab}, indent=2).encode(), args.json,
        "results file")
    console.print(f"results written to {args.json}")
    missed = [c for c in checks if not c["ok"]]
    if missed:
        console.print(f"[red]{len(missed)} target(s) missed[/]: exit status 1")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
