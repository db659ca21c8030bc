"""How fast a program simulates: many calls over several streams on one timeline.

By default 100 timing-only calls of 2^20 elements, spread round-robin over four streams
whose core masks split FT78NE's cores two by two (0x03, 0x0c, 0x30, 0xc0), each stream's
calls chained in order and a join at the end, operators alternating between relu_grad and
gelu_grad. It reports the wall and CPU time (best of N), the SimPy events, the tiles of all calls
and the events per tile, and the events per tile of one such call alone for comparison.

With ``--scaling K`` it also runs K times the calls and prints the CPU-time ratio, which
should stay near K (programs are linear in calls); the exit status is 1 when it exceeds
1.2 K.

    python benchmarks/bench_program.py                  # 100 calls of 2^20, 3 repeats
    python benchmarks/bench_program.py --calls 20 --length 2^16 --repeats 1
    python benchmarks/bench_program.py --calls 1000 --length 2^12 --scaling 10 --repeats 1
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
    parser.add_argument("--scaling", type=parse_int, default=0,
                        help="also run this many times the calls and report the CPU ratio")
    return parser


#: K times the calls may cost at most this many times K the CPU time.
SCALING_SLACK = 1.2


def cpu_seconds(chip_name: str, calls: int, length: int, repeats: int):
    """The best CPU time of ``repeats`` timing-only runs of the program, and its result
    (the program is built anew for each run, outside the timed part)."""
    best, result = float("inf"), None
    for _ in range(max(1, repeats)):
        _, prog = build(chip_name, calls, length)
        cpu = time.process_time()
        result = prog.run(numerics=False)
        best = min(best, time.process_time() - cpu)
    return best, result


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
    if args.scaling:
        more = args.calls * args.scaling
        small, _ = cpu_seconds(args.chip, args.calls, args.length, args.repeats)
        large, _ = cpu_seconds(args.chip, more, args.length, args.repeats)
        ratio = large / small
        limit = SCALING_SLACK * args.scaling
        verdict = "met" if ratio <= limit else "MISSED"
        print(f"  scaling: {args.calls:,} calls {small:.3f} s CPU, {more:,} calls {large:.3f} s "
              f"CPU: {ratio:.2f}x for {args.scaling}x the calls ({verdict}: <= {limit:g}x)")
        return 0 if ratio <= limit else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
