"""The ``dspsim`` command line: run an operator, list chips and operators.

Further commands (sweeps, trace tools) register themselves through ``COMMANDS``.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Callable

import numpy as np
from rich.console import Console
from rich.table import Table

from dspsim import kernels
from dspsim.chip import Chip, simulate
from dspsim.cli_args import parse_int, parse_length, parse_param
from dspsim.kernels.check import compare
from dspsim.report import render
from dspsim.sim.config import load_config, packaged_chips
from dspsim.sim.errors import ArgumentError, DspSimError
from dspsim.sim.machine import FIDELITIES
from dspsim.sim.vector import vector_cost

DEFAULT_TRACE_DIR = "traces"


def default_trace_path(result) -> str:
    mask = "" if result.core_mask is None else f"-m{result.core_mask:x}"
    return os.path.join(DEFAULT_TRACE_DIR,
                        f"{result.operator}-{result.chip.lower()}-n{result.length}{mask}.json")


# --------------------------------------------------------------------------- run
def add_run(sub) -> None:
    p = sub.add_parser("run", help="simulate one operator call on random inputs",
                       description="Generate reproducible random inputs, place them at the "
                       "operator library's example addresses, run the call, check the numbers "
                       "against a float64 reference and print the report.")
    p.add_argument("op", help="C name, e.g. fp_relu_grad_s (see `dspsim ops`)")
    p.add_argument("--chip", default="ft78ne", help="chip name or YAML path (default ft78ne)")
    p.add_argument("--length", type=parse_length, required=True, help="elements, e.g. 4096 or 2^22")
    p.add_argument("--core-mask", type=parse_int, default=None,
                   help="bit i selects core i (shared-storage calls; default all cores)")
    p.add_argument("--core", type=int, default=None,
                   help="executing core of a private-storage call (default 0)")
    p.add_argument("--param", type=parse_param, action="append", default=[],
                   metavar="NAME=VALUE", help="operator parameter, e.g. alpha=0.1 (repeatable)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the inputs (default 0)")
    p.add_argument("--fidelity", choices=FIDELITIES, default="fast",
                   help="timing model: fast (default) or detailed (DMA bursts, every vector "
                   "iteration; for small lengths)")
    p.add_argument("--trace", default=None, metavar="PATH",
                   help=f"trace file (default {DEFAULT_TRACE_DIR}/<op>-<chip>-n<length>.json)")
    p.add_argument("--no-trace", action="store_true", help="do not write a trace")
    p.set_defaults(handler=cmd_run)


def cmd_run(args, console: Console) -> int:
    chip = Chip(args.chip)
    cname = chip.resolve(args.op)
    op = cname.operator
    if cname.storage == "private" and args.core_mask is not None:
        raise ArgumentError(f"{cname.name} is a private-storage call and takes no core mask; "
                            f"use --core to choose the executing core")
    params = dict(args.param)
    unknown = set(params) - {p.name for p in op.params}
    if unknown:
        raise ArgumentError(f"{cname.name} has no parameter {sorted(unknown)[0]!r}; its "
                            f"parameters: {', '.join(p.name for p in op.params) or 'none'}")
    inputs = op.random_inputs(np.random.default_rng(args.seed), args.length)
    typed = [inputs[name].astype(cname.dtype.numpy) for name in op.inputs]
    out, result = simulate(cname.name, *typed, chip=chip, core_mask=args.core_mask,
                           core=args.core, fidelity=args.fidelity, **params)
    with np.errstate(all="ignore"):
        reference = op.reference(*(a.astype(np.float64) for a in typed),
                                 **result.metadata["params"])
    check = compare(out, reference, cname.dtype,
                    op.tolerance(cname.dtype, typed, result.metadata["params"]))
    trace_path = None
    if not args.no_trace:
        trace_path = result.write_trace(args.trace or default_trace_path(result))
    render(result, console, check, trace_path)
    return 0 if check.ok else 1


# --------------------------------------------------------------------------- chips, ops
def add_chips(sub) -> None:
    p = sub.add_parser("chips", help="list the packaged chips")
    p.set_defaults(handler=cmd_chips)


def cmd_chips(args, console: Console) -> int:
    table = Table(title="packaged chips (or pass --chip PATH.yaml)", title_justify="left")
    for column in ("chip", "cores", "clock", "dtypes", "lanes", "L2/core", "DDR peak",
                   "DMA/core", "file"):
        table.add_column(column)
    for name, path in sorted(packaged_chips().items()):
        cfg = load_config(path)
        table.add_row(
            cfg.name, str(cfg.cores), f"{cfg.clock_mhz:g} MHz", ", ".join(cfg.dtypes),
            f"{cfg.vector.lane_width_bits} bits", f"{cfg.l2.size_bytes >> 10} KiB",
            f"{cfg.ddr.peak_bandwidth_gbps:g} GB/s × {cfg.ddr.bandwidth_gbps / cfg.ddr.peak_bandwidth_gbps:g}",
            f"{cfg.dma.engines_per_core} × {cfg.dma.engine_bandwidth_gbps:g} GB/s",
            os.path.basename(path))
    console.print(table)
    return 0


def add_ops(sub) -> None:
    p = sub.add_parser("ops", help="list the operators with parameters, dtypes and cost")
    p.add_argument("--chip", action="append", default=None,
                   help="chips to cost on (default: every packaged chip)")
    p.set_defaults(handler=cmd_ops)


def cmd_ops(args, console: Console) -> int:
    chips = [load_config(c) for c in (args.chip or sorted(packaged_chips()))]
    table = Table(title="operators (C name: <dtype prefix>_<name>_<s|p>)", title_justify="left",
                  show_lines=True)
    table.add_column("operator")
    table.add_column("arguments (C order) and parameters")
    table.add_column("instruction mix per vector iteration")
    for cfg in chips:
        table.add_column(f"{cfg.name}: dtypes · cycles/iteration (elements)")
    for op in kernels.OPERATORS.values():
        params = "; ".join(f"{p.name}" + (f" = {p.default:g}" if p.default is not None else "")
                           + (f" (>= {p.minimum:g})" if p.minimum is not None else "")
                           for p in op.params)
        per_chip = []
        for cfg in chips:
            dtypes = [d for d in cfg.dtypes if d in kernels.DTYPES]
            cost = vector_cost(cfg, dtypes[0], op.mix)
            lanes = ", ".join(f"{kernels.DTYPES[d].prefix}_: {cfg.lanes(d)}" for d in dtypes)
            per_chip.append(f"{' '.join(dtypes)}\n{cost.iteration_cycles:g} cycles "
                            f"({cost.bounding_unit}-bound)\nelements/iteration {lanes}")
        table.add_row(f"[bold]{op.stem}[/]\n{op.summary}",
                      f"{', '.join(op.args)}[, core_mask]" + (f"\n{params}" if params else "")
                      + f"\n[dim]{op.formula}[/]",
                      ", ".join(f"{k} {v}" for k, v in op.mix.items())
                      + (f"\n[dim]{op.mix_note}[/]" if op.mix_note else ""), *per_chip)
    console.print(table)
    return 0


from dspsim.sweep_cli import add_sweep  # noqa: E402 - commands defined in their own modules
from dspsim.traceview_cli import add_trace  # noqa: E402

COMMANDS: list[Callable] = [add_run, add_chips, add_ops, add_sweep, add_trace]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dspsim", description="Cycle-approximate simulator of multi-core DSP chips and "
        "their operator library.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(sub)
    return parser


def make_console(stderr: bool = False) -> Console:
    """A console that does not squeeze tables to 80 columns when output is piped."""
    console = Console(stderr=stderr)
    if not console.is_terminal:
        console = Console(stderr=stderr, width=160)
    return console


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    console = make_console()
    try:
        return args.handler(args, console)
    except DspSimError as exc:
        make_console(stderr=True).print(f"[red]error:[/] {exc}", highlight=False)
        return 2
    except KeyboardInterrupt:
        make_console(stderr=True).print("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
