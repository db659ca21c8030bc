"""How fast a program simulates: many calls over several streams on one timeline.

By default 100 timing-only calls of 2^20 elements, spread round-robin over four streams
whose core masks split FT78NE's cores two by two (0x03, 0x0c, 0x30, 0xc0), each stream's
calls chained in order and a join at the end, operators alternating between relu_grad and
gelu_grad. It reports the wall and CPU time (best of N), the SimPy events, the tiles of all calls
and the events per tile, and the events per tile of one such call alone for comparison.

    python benchmarks/bench_program.py                  # 100 calls of 2^20, 3 repeats
    python benchmarks/bench_program.py --calls 20 --length 2^16 --repeats 1
"""
from __future__ import annotations

import argparse
import sys
import time

import dspsim
from dspsim.cli.args import parse_int

MASKS = (0x03, 0x0c, 0x30, 0xc0)
OPERATORS = ("fp_relu_grad_s", "fp_gelu_grad_s")
MIB = 1 << 20


def build(chip_name: str, calls: int, length: int):
    """A fresh chip and a program of ``calls`` calls over len(MASKS) streams."""
    chip = dspsim.Chip(chip_name)
    nbytes = -(-length * 4 // MIB) * MIB
    base = chip.config.ddr.base_address
    chip.zero(base, length, "fp32")
    chip.zero(base + nbytes, length, "fp32")
    prog = chip.program()
    streams = [prog.stream(f"s{k}") for k in range(len(MASKS))]
    for index in range(calls):
        k = index % len(streams)
        out = base + (2 + k) * nbytes  # each stream rewrites its own output buffer
        streams[k].enqueue(OPERATORS[index // len(streams) % 2], base, base + nbytes, out,
                           length, MASKS[k])
    last = streams[0]
    for stream in streams[1:]:
        last.wait(stream.record())
    return chip, prog


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chip", default="ft78ne", help="chip name or file (default ft78ne)")
    parser.add_argument("--calls", type=parse_int, default=100, help="calls (default 100)")
    parser.add_argument("--length", type=parse_int, default=1 << 20,
                        help="elements per call (default 2^20)")
    parser.add_argument("--repeats", type=parse_int, default=3,
                        help="runs; the best wall time is reported (default 3)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    best, best_cpu, result = float("inf"), float("inf"), None
    for _ in range(max(1, args.repeats)):
        _, prog = build(args.chip, args.calls, args.length)
        started, cpu = time.perf_counter(), time.process_time()
        result = prog.run(numerics=False)
        best = min(best, time.perf_counter() - started)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    _, alone = build(args.chip, 1, args.length)
    one = alone.run(numerics=False)
    print(f"{args.calls} calls of {args.length:,} elements over {len(MASKS)} streams on "
          f"{result.chip}, timing only")
    print(f"  wall time (best of {args.repeats}): {best:.3f} s; CPU time {best_cpu:.3f} s "
          f"(less than the wall time when other processes share the machine)")
    print(f"  simulated: {result.cycles:,} cycles, bound by {result.bound}, DDR "
          f"{100 * result.ddr['utilisation']:.1f}% busy")
    print(f"  SimPy events: {result.scheduled_events:,} for {result.tiles:,} tiles = "
          f"{result.scheduled_events / max(1, result.tiles):.2f} per tile "
          f"(one call alone: {one.scheduled_events / max(1, one.tiles):.2f} per tile)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
