"""A/B of timing-only calls by instructions executed: deterministic where CPU time is not.

CPU time on a shared machine drifts by a factor of 1.3 to 2 within one run, which hides
changes of 10 to 20%. This counts instead the machine instructions each engine executes
for the same calls, under valgrind's callgrind (about 50 times slower than a plain run,
and the same count on every run). Each engine runs the cases once in one process, and once
more without the calls (the imports, the chips and their inputs): the difference is what
the calls cost. The two engines run side by side, one per core.

    python benchmarks/ab_instructions.py                  # against HEAD~1
    python benchmarks/ab_instructions.py --against 7b93a7a
    python benchmarks/ab_instructions.py --case ft78ne:fp_gelu_grad_s:0xff:16

A case is chip:operator:core_mask:log2(length). Without valgrind or git history it says
so and exits 0.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ab_engine import CALL_SETUP, ROOT, extract

#: One case of each way a call is timed: burst by burst on one core, the pool on eight
#: cores, per-core engines on three, an orbit, fluid at 2^22 on every core.
CASES = ("mt7004:hp_relu_grad_s:0x1:14", "ft78ne:fp_gelu_grad_s:0xff:12",
         "ft78ne:fp_relu_grad_s:0x7:16", "mt7004:hp_gelu_grad_s:0xf:20",
         "ft78ne:fp_relu_grad_s:0xff:22")

#: The worker: every case's call (``calls``), or only what precedes it (``setup``).
WORKER = CALL_SETUP + r"""
calls = sys.argv[2] == "calls"
for chip_name, name, mask, length in json.loads(sys.argv[1]):
    chip, args = prepared(chip_name, name, length)
    if calls:
        print(chip_name, name, mask, length,
              chip.call(name, *args, core_mask=mask, numerics=False).cycles)
"""


def parse_case(text: str) -> tuple[str, str, int, int]:
    """chip:operator:core_mask:log2(length) as a case."""
    try:
        chip, name, mask, power = text.split(":")
        return chip, name, int(mask, 0), int(power)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a case is chip:operator:core_mask:log2(length), e.g. "
            f"ft78ne:fp_gelu_grad_s:0xff:16; got {text!r}") from None


def instructions(tree: Path, cases: list, mode: str) -> tuple[int, str]:
    """Instructions a process importing the engine from ``tree`` executes over ``cases``
    ((chip, operator, core mask, length); ``mode`` "calls", or "setup" for everything
    but the calls), and what it printed."""
    with tempfile.TemporaryDirectory(prefix="dspsim-callgrind-") as folder:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={folder}/out",
             sys.executable, "-c", WORKER, json.dumps(cases), mode],
            env=dict(os.environ, PYTHONPATH=str(tree), PYTHONHASHSEED="0"),
            cwd=folder, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"the engine in {tree} failed:\n{done.stderr[-2000:]}")
    found = re.search(r"Collected\s*:\s*(\d+)", done.stderr) or re.search(
        r"I\s+refs:\s*([\d,]+)", done.stderr)
    if found is None:
        raise SystemExit(f"callgrind printed no instruction count:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", "")), done.stdout


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", default="HEAD~1",
                        help="the commit to compare with (default HEAD~1)")
    parser.add_argument("--case", action="append", type=parse_case, metavar="CASE",
                        help="chip:operator:core_mask:log2(length), repeatable "
                             "(default: one case of each way a call is timed)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if shutil.which("valgrind") is None:
        print("A/B by instructions skipped: valgrind is not installed")
        return 0
    cases = [(chip, name, mask, 1 << power)  # the workers take lengths
             for chip, name, mask, power in args.case or map(parse_case, CASES)]
    with tempfile.TemporaryDirectory(prefix="dspsim-ab-") as folder:
        earlier = extract(args.against, Path(folder))
        if earlier is None:
            return 0
        runs = [(tree, mode) for tree in (earlier, ROOT) for mode in ("calls", "setup")]
        with ThreadPoolExecutor(max_workers=2) as pool:
            (old, old_out), (old_setup, _), (new, new_out), (new_setup, _) = pool.map(
                lambda run: instructions(run[0], cases, run[1]), runs)
    print(f"{len(cases)} calls, instructions executed by the calls alone:")
    print(f"  {args.against:>12}: {old - old_setup:>15,}")
    print(f"  {'this tree':>12}: {new - new_setup:>15,}")
    print(f"  ratio: {(new - new_setup) / max(old - old_setup, 1):.3f}")
    if old_out != new_out:
        print("cycles differ:")
        for before, after in zip(old_out.splitlines(), new_out.splitlines(), strict=False):
            if before != after:
                print(f"  {before}  ->  {after.split()[-1]}")
    else:
        print("cycles: the same in every call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
