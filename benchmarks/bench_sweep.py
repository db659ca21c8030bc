"""How long the 1,008-run timing-only sweep of the developer guide takes, in CPU time.

Runs, as a user would, in a temporary folder::

    dspsim sweep --ops all --chips ft78ne,mt7004 --lengths 2^12,...,2^20 \\
                 --timing-only --workers 2 --no-plots --out <temporary folder>

and counts the processor time of the command and of the worker processes it starts
(``resource.getrusage`` of the children). Prints the wall and processor seconds and the
target the simulator is held to (4 s of processor time); exits with status 1 if it is
missed, or if the sweep itself fails.

    python benchmarks/bench_sweep.py
    python benchmarks/bench_sweep.py --workers 1
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: processor seconds the whole sweep may take
TARGET_CPU_SECONDS = 4.0
LENGTHS = ",".join(f"2^{p}" for p in range(12, 21))
RUNS = 1008


def sweep_command(out: Path, workers: int) -> list[str]:
    """The sweep as the developer guide runs it, writing under ``out``."""
    return [sys.executable, "-m", "dspsim", "sweep", "--ops", "all", "--chips",
            "ft78ne,mt7004", "--lengths", LENGTHS, "--timing-only", "--workers", str(workers),
            "--no-plots", "--out", str(out)]


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2,
                        help="worker processes of the sweep (default 2)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the sweep, print its processor time; exit status 1 if the target is missed."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    with tempfile.TemporaryDirectory(prefix="dspsim-bench-sweep-") as folder:
        out = Path(folder) / "sweep"
        cpu, wall = children_cpu(), time.perf_counter()
        done = subprocess.run(sweep_command(out, args.workers), capture_output=True,
                              text=True, check=False)
        cpu, wall = children_cpu() - cpu, time.perf_counter() - wall
        if done.returncode != 0:
            print(f"the sweep failed (status {done.returncode}):\n{done.stderr[-2000:]}",
                  file=sys.stderr)
            return 1
        rows = sum(1 for line in (out / "rows.jsonl").read_text().splitlines() if line)
    if rows != RUNS:
        print(f"the sweep wrote {rows} rows, not {RUNS}", file=sys.stderr)
        return 1
    met = cpu <= TARGET_CPU_SECONDS
    print(json.dumps({"runs": rows, "workers": args.workers, "wall_seconds": round(wall, 2),
                      "cpu_seconds": round(cpu, 2)}))
    print(f"{'met' if met else 'MISSED'}  {RUNS:,}-run timing-only sweep <= "
          f"{TARGET_CPU_SECONDS:g} s of processor time: {cpu:.1f} s ({wall:.1f} s wall, "
          f"{args.workers} workers)")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
