"""``dspsim program FILE.yaml``: run a program file and print its report."""
from __future__ import annotations

import os

from rich.text import Text

import dspsim

from dspsim.cli.output import Output, number_column, text_column
from dspsim.programs.file import load_program, parse_value
from dspsim.programs.result import ProgramResult
from dspsim.sim.errors import ArgumentError
from dspsim.sim.engine.machine import FIDELITIES
from dspsim.atomic import check_target


def cores_text(cores) -> str:
    """Cores as ranges: ``0-3, 6``."""
    cores = sorted(cores)
    parts, start = [], None
    for k, core in enumerate(cores):
        if start is None:
            start = core
        if k + 1 == len(cores) or cores[k + 1] != core + 1:
            parts.append(str(start) if start == core else f"{start}-{core}")
            start = None
    return ", ".join(parts) or "-"


def program_parameters(pairs: list[str]) -> dict:
    """``NAME=VALUE`` pairs of ``--param`` as a dict of numbers."""
    values = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep or not name.strip():
            raise ArgumentError(f"--param {pair!r} must be NAME=VALUE, e.g. --param n=65536")
        if name.strip() in values:
            raise ArgumentError(f"--param {name.strip()} given twice ({values[name.strip()]} "
                                f"and {text.strip()}); give each parameter once")
        values[name.strip()] = parse_value(text.strip())
    return values


def add_program(sub) -> None:
    p = sub.add_parser("program", help="run a program file: many calls on streams of one chip",
                       description="Load a program file (YAML: chip, buffers, streams of calls, "
                       "records and waits), run every call on one chip timeline, and print "
                       "when each call ran, why it waited, the per-core use, DDR use, the "
                       "critical path and what bounds the program.")
    p.add_argument("file", help="program file (YAML), e.g. examples/mlp_backward_split.yaml")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="override a parameter of the file, e.g. mask_a=0x3 (repeatable)")
    p.add_argument("--fidelity", choices=FIDELITIES, default="fast",
                   help="timing model: fast (default) or detailed")
    p.add_argument("--timing-only", action="store_true",
                   help="time the program without computing any result")
    p.add_argument("--races", choices=("error", "warn"), default="error",
                   help="what an unordered pair of calls touching the same bytes is: an error "
                   "(default) or a warning in the report")
    p.add_argument("--trace", default=None, metavar="PATH",
                   help="write the program's trace: Perfetto protobuf, or Chrome JSON for a "
                   "name ending in .json (open it in ui.perfetto.dev)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(output_handler=cmd_program)


def cmd_program(args, out: Output) -> int:
    if args.trace is not None:
        check_target(args.trace)  # a path that can never be the trace fails before running
    loaded = load_program(args.file, program_parameters(args.param))
    with out.progress("simulating"):
        result = loaded.run(numerics=not args.timing_only, fidelity=args.fidelity,
                            races=args.races)
    if args.trace is not None:
        result.write_trace(args.trace)
    if args.json:
        out.json({"dspsim": dspsim.__version__, "command": ["dspsim", *args.argv],
                  "file": args.file, "parameters": loaded.parameters,
                  "buffers": loaded.buffer_table(), "trace": args.trace,
                  "numerics": not args.timing_only, "result": result.to_dict()})
    else:
        render_program(result, out, args.file, args.trace)
    return 0


def summary_rows(r: ProgramResult) -> list[tuple[str, str]]:
    """The program's headline figures as (name, value) pairs."""
    ddr = r.ddr
    bound = r.bounds.get(r.bound, 0.0)
    return [
        ("cycles", f"{r.cycles:,}"), ("time", f"{r.microseconds:,.3f} µs"),
        ("bounded by", f"{r.bound}: {bound:,.0f} cycles at least "
                       f"({100 * bound / r.cycles:.1f}% of actual)" if r.cycles else r.bound),
        ("DDR traffic", f"{ddr['bytes']:,} bytes, {ddr['achieved_gbps']:.3f} GB/s = "
                        f"{100 * ddr['utilisation']:.1f}% of achievable "
                        f"{ddr['achievable_gbps']:.3g} GB/s"),
        ("simulation", f"{r.scheduled_events:,} events for {r.tiles:,} tiles"),
    ]


def render_program(r: ProgramResult, out: Output, name: str = "program",
                   trace_path: str | None = None) -> None:
    """Print a program's report: headline, calls, cores, bounds, critical path."""
    out.line(Text.assemble((name, "bold"), " on ", (r.chip, "bold"),
                           f" ({r.clock_mhz:g} MHz): {len(r.calls)} call{'s' * (len(r.calls) != 1)} "
                           f"on {len(r.streams)} stream{'s' * (len(r.streams) != 1)}, "
                           f"{r.fidelity} fidelity"))
    out.table([text_column("figure"), text_column("value")],
              [(Text(k, style="dim"), v) for k, v in summary_rows(r)],
              show_header=False, boxed=False)
    out.table([number_column("#", key=True), text_column("stream"), text_column("operator"),
               number_column("cores"), number_column("start"), number_column("end"),
               number_column("cycles"), text_column("waited for"), text_column("bound")],
              [[str(c.index), c.stream, c.operator, cores_text(c.cores),
                f"{c.start_cycle:,.0f}", f"{c.end_cycle:,.0f}", f"{c.result.cycles:,}",
                c.waited_for + (f" (call {c.after_call})" if c.after_call is not None else ""),
                c.result.bound] for c in r.calls], title="calls")
    out.table([number_column("core", key=True), number_column("busy"), number_column("idle"),
               text_column("calls")],
              [[str(core), f"{e['busy_cycles']:,.0f}", f"{e['idle_cycles']:,.0f}",
                ", ".join(map(str, e["calls"]))] for core, e in r.per_core.items()],
              title="per core (busy: held by a call, launch to barrier)")
    out.table([text_column("lower bound"), number_column("cycles"), number_column("of actual")],
              [[k, f"{v:,.0f}", f"{100 * v / r.cycles:.1f}%" if r.cycles else "-"]
               for k, v in sorted(r.bounds.items(), key=lambda kv: -kv[1])],
              title="what bounds the program")
    out.line(critical_path_text(r.critical_path))
    for warning in r.warnings:
        out.line(("warning:", "yellow"), " ", warning)
    if trace_path:
        out.line(f"trace written to {trace_path} (open it in ui.perfetto.dev; 1 ns on its "
                 f"axis = 1 cycle)")


#: calls of a critical path printed at each end when it is longer than twice this
CRITICAL_PATH_ENDS = 5


def critical_path_text(path: list[dict]) -> str:
    """The critical path on one line of bounded length: a long one shows its first and
    last calls and how many lie between (the JSON output holds all of them)."""
    steps = [f"call {p['call']} {p['operator']} ({p['waited_for']}; {p['bound']})"
             for p in (path if len(path) <= 2 * CRITICAL_PATH_ENDS else
                       path[:CRITICAL_PATH_ENDS] + path[-CRITICAL_PATH_ENDS:])]
    if len(path) > 2 * CRITICAL_PATH_ENDS:
        hidden = len(path) - 2 * CRITICAL_PATH_ENDS
        steps.insert(CRITICAL_PATH_ENDS, f"... {hidden:,} more call{'s' * (hidden != 1)} "
                                         f"(--json lists them) ...")
    count = len(path)
    return f"critical path ({count:,} call{'s' * (count != 1)}): " + " -> ".join(steps)


def cmd_program_sweep(args, out: Output) -> int:
    """``dspsim sweep --program FILE --vary NAME=V1,V2``: rows, a table and plots."""
    from dspsim.programs.sweep import (check_out_folder, default_folder, parse_axes,
                                       run_program_sweep, write_plots, write_rows)
    ignored = [option for option, dest in (
        ("--ops", "ops"), ("--chips", "chips"), ("--lengths", "lengths"), ("--dtypes", "dtypes"),
        ("--core-masks", "core_masks"), ("--cores", "cores"), ("--param", "param"),
        ("--set", "sets"), ("--seed", "seed"), ("--scheduler", "scheduler"))
        if getattr(args, dest, None)] + (["--workers"] if getattr(args, "workers", 1) != 1
                                         else [])
    if ignored:  # silently ignoring them would present a study that was not run
        raise ArgumentError(f"{', '.join(ignored)} cannot be combined with --program; vary "
                            f"the program file's parameters with --vary NAME=V1,V2,... (the "
                            f"chip and lengths are set in the file)")
    axes = parse_axes(args.vary)
    folder = default_folder(args.program) if args.out is None else args.out
    check_out_folder(folder)  # before any run, not after the first
    rows: list[dict] = []
    with out.progress("program sweep") as advance:
        total = 1
        for values in axes.values():
            total *= len(values)
        run_program_sweep(args.program, axes, numerics=not args.timing_only,
                          fidelity=args.fidelity,
                          on_row=lambda row: (rows.append(row), write_rows(rows, folder),
                                              advance("program sweep", len(rows), total)))
    plots = [] if args.no_plots else write_plots(rows, axes, folder, args.program)
    if args.json:
        out.json({"dspsim": dspsim.__version__, "command": ["dspsim", *args.argv],
                  "folder": folder, "program": args.program, "axes": axes, "plots": plots,
                  "rows": rows})
        return 0
    names = list(axes)
    columns = [number_column(n, key=True) for n in names] + [
        number_column("cycles"), number_column("µs"), text_column("bound"),
        number_column("DDR busy"), text_column("error")]
    table = []
    for row in rows:
        shown = [hex(row[f"param.{n}"]) if "mask" in n and isinstance(row[f"param.{n}"], int)
                 else str(row[f"param.{n}"]) for n in names]
        if "error" in row:
            table.append(shown + ["-", "-", "-", "-", row["error"]])
        else:
            table.append(shown + [f"{row['cycles']:,}", f"{row['microseconds']:,.1f}",
                                  row["bound"], f"{100 * row['ddr_utilisation']:.1f}%", ""])
    out.table(columns, table, title=f"program sweep: {args.program}")
    out.line(f"rows: {os.path.join(folder, 'rows.csv')}, {os.path.join(folder, 'rows.json')}")
    for path in plots:
        out.line(f"plot: {path}")
    return 0
