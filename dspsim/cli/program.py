"""``dspsim program FILE.yaml``: run a program file and print its report."""
from __future__ import annotations

from typing import Any

from rich.text import Text

import dspsim
from dspsim.atomic import check_target
from dspsim.cli.args import add_kernels_option
from dspsim.cli.output import Output, add_json_option, number_column, text_column
from dspsim.cli.report import render_band, render_speed_of_light
from dspsim.programs.file import parse_value
from dspsim.programs.loader import load_program
from dspsim.programs.result import ProgramResult
from dspsim.sim.engine.machine import FIDELITIES
from dspsim.sim.errors import ArgumentError
from dspsim.tables import to_jsonable
from dspsim.traces.speed import SpeedOfLight, speed_of_light
from dspsim.uncertainty import program_band


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
    values: dict[str, Any] = {}
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
    add_json_option(p, "the result")
    p.add_argument("--csv", action="store_true",
                   help="print one CSV row per call: stream, operator, cores, start, end, "
                   "cycles, what it waited for, its bound, and read and write bytes and "
                   "bandwidth per link")
    p.add_argument("--uncertainty", action="store_true",
                   help="report the program's cycles as a band from the chip file's assumed "
                   "values' ranges (one at a time and combined) and the model's own error")
    add_kernels_option(p)
    p.set_defaults(output_handler=cmd_program)


def cmd_program(args, out: Output) -> int:
    if args.trace is not None:
        check_target(args.trace)  # a path that can never be the trace fails before running
    loaded = load_program(args.file, program_parameters(args.param),
                          kernels=args.kernels or None)
    with out.progress("simulating"):
        result = loaded.run(numerics=not args.timing_only, fidelity=args.fidelity,
                            races=args.races)
    if args.trace is not None:
        result.write_trace(args.trace)
    sol = speed_of_light(result.trace_model())
    band = None
    if args.uncertainty:
        with out.progress("timing the ranges' ends"):
            band = program_band(loaded, result, fidelity=args.fidelity,
                                source=loaded.chip.config.source)
    if args.json:
        out.json({"dspsim": dspsim.__version__, "command": ["dspsim", *args.argv],
                  "file": args.file, "parameters": loaded.parameters,
                  "buffers": loaded.buffer_table(), "trace": args.trace,
                  "numerics": not args.timing_only, "result": result.to_dict(),
                  "speed_of_light": to_jsonable(sol.to_dict()),
                  "uncertainty": to_jsonable(band.to_dict()) if band else None})
    elif args.csv:
        out.csv(program_csv_rows(result))
    else:
        render_program(result, out, args.file, args.trace, sol)
        if band is not None:
            render_band(band, out)
    return 0


#: the links a program's CSV reports, in order (every chip has these regions)
CSV_LINKS = ("ddr", "shared_sram")


def program_csv_rows(r: ProgramResult) -> list[dict]:
    """``program --csv``: one row per call, stable columns (see ``--help``)."""
    rows = []
    for c in r.calls:
        seconds = c.cycles / (r.clock_mhz * 1e6)
        row = {"call": c.index, "stream": c.stream, "operator": c.operator,
               "cores": cores_text(c.cores),
               "core_mask": "" if c.core_mask is None else hex(c.core_mask),
               "start_cycle": round(c.start_cycle, 2), "end_cycle": round(c.end_cycle, 2),
               "cycles": round(c.cycles, 2), "waited_for": c.waited_for,
               "bound": c.result.bound}
        for link in CSV_LINKS:
            read = c.result.bytes_read.get(link, 0)
            written = c.result.bytes_written.get(link, 0)
            row[f"{link} read bytes"] = read
            row[f"{link} write bytes"] = written
            row[f"{link} read GB/s"] = round(read / seconds / 1e9, 4) if seconds else 0.0
            row[f"{link} write GB/s"] = round(written / seconds / 1e9, 4) if seconds else 0.0
        rows.append(row)
    return rows


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
                   trace_path: str | None = None, sol: SpeedOfLight | None = None) -> None:
    """Print a program's report: headline, speed of light, calls, cores, bounds, critical
    path."""
    out.line(Text.assemble((name, "bold"), " on ", (r.chip, "bold"),
                           f" ({r.clock_mhz:g} MHz): "
                           f"{len(r.calls)} call{'s' * (len(r.calls) != 1)} "
                           f"on {len(r.streams)} stream{'s' * (len(r.streams) != 1)}, "
                           f"{r.fidelity} fidelity"))
    if sol is not None:
        render_speed_of_light(sol, out)
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

