"""The ``dspsim`` command line: run an operator, list chips and operators.

Further commands (sweeps, trace tools) register themselves through ``COMMANDS``. A
command that sets ``output_handler`` prints through :class:`~dspsim.cli.output.Output`
(fitted tables, plain columns into a pipe, ``--json``); one that sets ``handler`` gets a
rich Console.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import re
import sys
from collections.abc import Callable

from rich.console import Console
from rich.text import Text

import dspsim
from dspsim.atomic import command_inputs
from dspsim.checked import run_checked
from dspsim.chip import Chip
from dspsim.cli.args import (
    add_kernels_option,
    param_dict,
    parse_int,
    parse_length,
    parse_param,
    parse_seed,
)
from dspsim.cli.listings import add_chips, add_ops
from dspsim.cli.output import Output, PipedConsole, add_json_option
from dspsim.cli.report import render, render_band, run_csv_row
from dspsim.placement import c_arguments
from dspsim.result import FORMER_FILES, SAVED_FILES, check_folder
from dspsim.sim.engine.machine import FIDELITIES
from dspsim.sim.errors import ArgumentError, DspSimError
from dspsim.tables import to_jsonable
from dspsim.traces.formats import check_target
from dspsim.traces.speed import speed_of_light
from dspsim.uncertainty import call_band

DEFAULT_TRACE_DIR = "traces"
#: Perfetto's protobuf: clean track names and whole-cycle slices in the Perfetto UI
DEFAULT_TRACE_SUFFIX = ".pftrace"


def file_part(text: str, limit: int = 60) -> str:
    """``text`` as one safe file-name component: no separators, no ``..``, bounded length.

    Characters other than letters, digits, ``.``, ``_``, ``+`` and ``-`` become ``-``; a
    name that had to be cut gets a digest of the whole, so two long names stay apart.
    """
    slug = re.sub(r"[^A-Za-z0-9._+-]+", "-", text).strip(".-") or "x"
    slug = re.sub(r"\.{2,}", ".", slug)
    if len(slug) > limit:
        digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        slug = f"{slug[:limit - 9]}-{digest}"
    return slug


def default_trace_path(result) -> str:
    """``traces/<op>-<chip>-n<length>[-m<mask>].pftrace``, whatever the chip's name holds."""
    mask = "" if result.core_mask is None else f"-m{result.core_mask:x}"
    return os.path.join(DEFAULT_TRACE_DIR, f"{file_part(result.operator)}-"
                        f"{file_part(result.chip.lower())}-n{result.length}{mask}"
                        f"{DEFAULT_TRACE_SUFFIX}")


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
    p.add_argument("--core", type=parse_int, default=None,
                   help="executing core of a private-storage call (default 0)")
    p.add_argument("--param", type=parse_param, action="append", default=[],
                   metavar="NAME=VALUE", help="operator parameter, e.g. alpha=0.1 (repeatable)")
    p.add_argument("--seed", type=parse_seed, default=0,
                   help="random seed of the inputs, >= 0 (default 0)")
    p.add_argument("--fidelity", choices=FIDELITIES, default="fast",
                   help="timing model: fast (default) or detailed (DMA bursts, every vector "
                   "iteration; for small lengths)")
    p.add_argument("--tile-bytes", type=parse_int, default=None, metavar="BYTES",
                   help="fix the tile size (bytes per operand buffer) of a shared-storage "
                   "call; default: the size that minimises the call's time")
    p.add_argument("--trace", default=None, metavar="PATH",
                   help=f"trace file (default {DEFAULT_TRACE_DIR}/<op>-<chip>-n<length>"
                   f"{DEFAULT_TRACE_SUFFIX}): Perfetto protobuf, or Chrome JSON for chrome://"
                   f"tracing if PATH ends in .json")
    p.add_argument("--no-trace", action="store_true", help="do not write a trace")
    p.add_argument("--save", default=None, metavar="DIR",
                   help="keep the run in DIR: result.json, trace.pftrace and chip.yaml (the exact "
                   "chip description used), to reproduce or compare it later")
    p.add_argument("--force", action="store_true",
                   help="with --save, replace a folder that holds another saved run")
    add_json_option(p, "the result", "RunResult.to_dict(), the numeric check and the speed "
                    "of light; --save keeps this same document as result.json")
    p.add_argument("--csv", action="store_true",
                   help="print one CSV row: the headline figures, each resource's busy share "
                   "and share of its peak, the bound and the advice")
    p.add_argument("--uncertainty", action="store_true",
                   help="report the cycles as a band: the call timed again at each end of "
                   "every assumed value's range in the chip file, one at a time and combined, "
                   "plus the model's own documented error")
    add_kernels_option(p)
    p.set_defaults(output_handler=cmd_run)


def run_document(run, args, trace_path: str | None) -> dict:
    """What ``--json`` prints and ``--save`` keeps besides the files: the result, the numeric
    check, and how to run it again."""
    return {
        "dspsim": dspsim.__version__,
        "command": ["dspsim", *getattr(args, "argv", [])],
        "seed": run.seed,
        "operands": {name: hex(address) for name, address in run.addresses.items()},
        "numerics": to_jsonable(dataclasses.asdict(run.check)) if run.check else None,
        "trace": trace_path,
        "result": run.result.to_dict(),
    }


def cmd_run(args, out: Output) -> int:
    if args.trace is not None and args.no_trace:
        raise ArgumentError(f"--trace {args.trace} and --no-trace contradict each other; give "
                            f"one of them")
    if args.trace is not None:
        check_target(args.trace)  # refused before simulating, not after
    if args.save is not None:
        check_folder(args.save, tuple(SAVED_FILES.values()) + FORMER_FILES)
    try:
        params = param_dict(args.param)
    except argparse.ArgumentTypeError as exc:
        raise ArgumentError(str(exc)) from None
    chip = Chip(args.chip, kernels=args.kernels or None)
    with out.progress("simulating") as advance:
        run = run_checked(chip, args.op, args.length, core_mask=args.core_mask, core=args.core,
                          params=params, seed=args.seed, fidelity=args.fidelity,
                          tile_bytes=args.tile_bytes, progress=advance)
    result, check = run.result, run.check
    trace_path = None
    if not args.no_trace:
        trace_path = args.trace if args.trace is not None else default_trace_path(result)
        check_target(trace_path)
    document = run_document(run, args, trace_path)
    sol = speed_of_light(result.trace_model())
    band = None
    if args.uncertainty:
        with out.progress("timing the ranges' ends"):
            band = run_band(chip, args, result, run.addresses, params)
    saved = args.save
    # --json prints, and result.json holds, this same document
    document = to_jsonable({**document, "saved": saved,
                            "files": dict(SAVED_FILES) if saved is not None else None,
                            "speed_of_light": sol.to_dict(),
                            "uncertainty": band.to_dict() if band else None})
    if saved is not None:  # first: a refused save leaves no trace behind either
        assert chip.description_yaml is not None, "a command's chip is read from a file"
        result.save(saved, chip_yaml=chip.description_yaml, force=args.force,
                    document=document)
    if trace_path is not None:
        result.write_trace(trace_path)
    if args.json:
        out.json(document)
    elif args.csv:
        row = run_csv_row(result, sol)
        if band is not None:
            row.update(band_low_cycles=round(band.band_low), band_high_cycles=round(band.band_high))
        out.csv([row])
    else:
        render(result, out, check, trace_path, saved, sol)
        if band is not None:
            render_band(band, out)
    return 0 if check is None or check.ok else 1


def run_band(chip: Chip, args, result, addresses: dict[str, int], params: dict):
    """The band of ``dspsim run``'s call (see :mod:`dspsim.uncertainty`)."""
    cname = chip.resolve(args.op)
    call_args = c_arguments(cname.operator, addresses, args.length, params)
    kwargs = {"core_mask": args.core_mask} if cname.storage == "shared" else {}
    bound = chip.bind(args.op, tuple(call_args), kwargs, core=args.core, require_written=False)
    return call_band(chip, bound, result.cycles, result.metadata["transfer_timing"],
                     fidelity=args.fidelity, tile_bytes=args.tile_bytes,
                     source=chip.config.source)


#: argument names whose values are files a command reads: no output may replace them
INPUT_ARGUMENTS = ("chip", "chips", "measured", "file", "program", "a", "b")


def command_input_paths(args) -> list:
    """The files the parsed command reads (chip files, program files, traces, CSVs)."""
    paths = []
    for name in INPUT_ARGUMENTS:
        value = getattr(args, name, None)
        for item in value if isinstance(value, list) else [value]:
            for part in item if isinstance(item, list) else [item]:
                if isinstance(part, (str, bytes, os.PathLike)):
                    paths.append(part)
    return paths


# --------------------------------------------------------------------------- the parser
class Parser(argparse.ArgumentParser):
    """argparse, reporting a usage error on one line (and exit status 2)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


from dspsim.cli.calibrate import add_calibrate  # noqa: E402
from dspsim.cli.program import add_program  # noqa: E402
from dspsim.cli.sweep import add_sweep  # noqa: E402 - commands defined in their own modules
from dspsim.cli.trace import add_trace  # noqa: E402

COMMANDS: list[Callable] = [add_run, add_chips, add_ops, add_sweep, add_trace, add_program,
                            add_calibrate]


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="dspsim", description="Cycle-approximate simulator of multi-core DSP chips and "
        "their operator library.")
    parser.add_argument("--version", action="version", version=f"dspsim {dspsim.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=Parser)
    for add in COMMANDS:
        add(sub)
    return parser


def make_console(stderr: bool = False) -> Console:
    """A console that does not squeeze tables to 80 columns when output is piped."""
    console = PipedConsole(stderr=stderr)
    if not console.is_terminal:
        console = PipedConsole(stderr=stderr, width=160)
    return console


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    if not argv:  # `dspsim` alone: what it can do, not a usage error
        parser.print_help()
        return 0
    args = parser.parse_args(argv)
    args.argv = argv
    out = Output()
    try:
        with command_inputs(command_input_paths(args)):
            if getattr(args, "output_handler", None):
                status = args.output_handler(args, out)
            else:
                status = args.handler(args, make_console())
            sys.stdout.flush()  # a reader that left is found here, not at the interpreter's exit
            return status
    except DspSimError as exc:
        out.error(str(exc))
        return 2
    except KeyboardInterrupt:
        out.errors.print(Text("interrupted"))
        return 130
    except BrokenPipeError:  # `dspsim ops | head`: the reader left; not an error of ours
        # Whatever is still buffered goes nowhere, so the exit flushes without a traceback;
        # status 0, as `head` took what it wanted (a pipeline under pipefail stays green).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
