"""``dspsim trace summary|plot|compare``: inspect trace files (see :mod:`dspsim.traces.view`)."""
from __future__ import annotations

import dataclasses
import json
import os

from rich.console import Console
from rich.table import Table

from dspsim.traces.plot import plot_trace
from dspsim.traces.compare import TraceComparison, compare
from dspsim.traces.view import TraceSummary, read_trace, summarize

SPARK = " ▁▂▃▄▅▆▇█"


def add_trace(sub) -> None:
    """Register ``dspsim trace`` and its subcommands."""
    p = sub.add_parser("trace", help="summarise, plot or compare trace files",
                       description="Read traces written by `dspsim run` (Chrome trace JSON).")
    tsub = p.add_subparsers(dest="trace_command", required=True, metavar="SUBCOMMAND")

    s = tsub.add_parser("summary", help="busy shares, overlap, idle gaps, DDR use, bound, "
                        "critical core")
    s.add_argument("file", help="trace file (.json)")
    s.add_argument("--buckets", type=int, default=20,
                   help="slices of the call in the DDR timeline (default 20)")
    s.add_argument("--json", action="store_true", help="print the summary as JSON")
    s.set_defaults(handler=cmd_summary)

    pl = tsub.add_parser("plot", help="Gantt chart of cores × engines over the DDR bandwidth")
    pl.add_argument("file", help="trace file (.json)")
    pl.add_argument("-o", "--output", default=None, metavar="PNG",
                    help="image to write (default: the trace's path with .png)")
    pl.set_defaults(handler=cmd_plot)

    c = tsub.add_parser("compare", help="what changed between two runs: total, per core, "
                        "per engine")
    c.add_argument("a", help="first trace (the reference)")
    c.add_argument("b", help="second trace")
    c.add_argument("--json", action="store_true", help="print the comparison as JSON")
    c.set_defaults(handler=cmd_compare)


def _summary(path: str, buckets: int = 20) -> TraceSummary:
    return summarize(read_trace(path), buckets)


def _pct(part: float | None, whole: float) -> str:
    return "-" if part is None or not whole else f"{100 * part / whole:.1f}%"


def summary_json(summary: TraceSummary) -> dict:
    data = dataclasses.asdict(summary)
    for core in data["cores"]:
        core["vector_gap_count"] = len(core["vector_gaps"])
        core["vector_gap_cycles"] = sum(core.pop("vector_gaps"))
    return data


def critical_text(s: TraceSummary) -> str:
    """The critical core, or which cores tie for it."""
    if s.critical_core is None:
        return "-"
    if len(s.finishing_together) == len(s.cores) > 1:
        return f"none, all {len(s.cores)} cores finish within a cycle of each other"
    if len(s.finishing_together) > 1:
        return f"cores {', '.join(map(str, s.finishing_together))} (finish together)"
    return str(s.critical_core)


def cmd_summary(args, console: Console) -> int:
    summary = _summary(args.file, args.buckets)
    if args.json:
        console.print_json(json.dumps(summary_json(summary)))
        return 0
    render_summary(summary, console)
    return 0


def render_summary(s: TraceSummary, console: Console) -> None:
    total = s.total_cycles
    clock = float(s.metadata.get("clock_mhz") or 1.0)
    console.print(f"[bold]{s.label}[/]: {s.cycles:,} cycles ({s.cycles / clock:,.3f} µs at "
                  f"{clock:g} MHz)", highlight=False)
    console.print(f"bounded by [bold]{s.bound}[/]; critical core (finishes last): "
                  f"{critical_text(s)}; "
                  + ", ".join(f"{k} {v:,.0f} cycles" for k, v in s.call_cycles.items()),
                  highlight=False)

    cores = Table(title="per core: engine busy cycles (share of the call)", title_justify="left")
    for column in ("core", "tiles", *s.engines, "active", "DMA∥vector", "vector gaps",
                   "gap cycles", "longest", "finish", "slack"):
        cores.add_column(column, justify="right")
    finish_max = max((c.finish for c in s.cores), default=0.0)
    for c in s.cores:
        gaps = c.vector_gaps
        style = "bold" if c.core == s.critical_core else None
        cores.add_row(str(c.core), str(c.tiles),
                      *(f"{c.busy.get(e, 0):,.0f} ({_pct(c.busy.get(e, 0), total)})"
                        for e in s.engines),
                      _pct(c.active, total), f"{c.overlap:,.0f} ({_pct(c.overlap, c.active)})",
                      str(len(gaps)), f"{sum(gaps):,.0f}", f"{max(gaps, default=0):,.0f}",
                      f"{c.finish:,.0f}", f"{finish_max - c.finish:,.0f}", style=style)
    console.print(cores)

    roof = Table(title="roofline: each resource's lower bound", title_justify="left")
    for column in ("resource", "cycles", "share of actual"):
        roof.add_column(column, justify="left" if column == "resource" else "right")
    for name, cycles in sorted(s.roofline_terms.items(), key=lambda kv: -kv[1]):
        roof.add_row(name + (" ← bound" if name == s.bound else ""), f"{cycles:,.0f}",
                     _pct(cycles, total))
    console.print(roof)

    top = max(s.ddr_timeline + [s.ddr_achievable_gbps]) or 1.0
    spark = "".join(SPARK[min(8, round(8 * g / top))] for g in s.ddr_timeline)
    console.print(f"DDR: {s.ddr_bytes:,.0f} bytes, mean {s.ddr_mean_gbps:.3f} GB/s = "
                  f"{_pct(s.ddr_mean_gbps, s.ddr_peak_gbps)} of peak {s.ddr_peak_gbps:g} GB/s, "
                  f"{_pct(s.ddr_mean_gbps, s.ddr_achievable_gbps)} of achievable "
                  f"{s.ddr_achievable_gbps:.3g}; saturated {100 * s.ddr_saturated_share:.1f}% "
                  f"of the call", highlight=False)
    console.print(f"DDR over time ({len(s.ddr_timeline)} slices, full block = "
                  f"{top:.3g} GB/s): |{spark}|", highlight=False)
    console.print("  " + " ".join(f"{g:.2f}" for g in s.ddr_timeline), style="dim",
                  highlight=False)


def cmd_plot(args, console: Console) -> int:
    trace = read_trace(args.file)
    meta = trace.metadata
    peak, achievable, bound = meta["ddr_peak_gbps"], meta["ddr_achievable_gbps"], meta["bound"]
    output = args.output or os.path.splitext(args.file)[0] + ".png"
    console.print(f"plot: {plot_trace(trace, output, peak, achievable, bound)}")
    return 0


def comparison_json(cmp: TraceComparison) -> dict:
    data = {k: v for k, v in dataclasses.asdict(cmp).items() if k not in ("a", "b")}
    data["a"], data["b"] = cmp.a.label, cmp.b.label
    data["cores"] = {str(k): v for k, v in cmp.cores.items()}
    return data


def _delta(a: float | None, b: float | None) -> tuple[str, str, str, str]:
    def show(x):
        return "-" if x is None else f"{x:,.0f}"

    if a is None or b is None:
        return show(a), show(b), "-", "-"
    change = f"{(b - a) / a:+.1%}" if a else "-"
    return show(a), show(b), f"{b - a:+,.0f}", change


def cmd_compare(args, console: Console) -> int:
    a = _summary(args.a)
    b = _summary(args.b)
    cmp = compare(a, b)
    if args.json:
        console.print_json(json.dumps(comparison_json(cmp)))
        return 0
    console.print(f"A: {a.label}\nB: {b.label}", highlight=False)
    for key, (va, vb) in cmp.metadata.items():
        console.print(f"  {key}: {va} → {vb}", highlight=False)
    ta, tb = a.cycles, b.cycles
    console.print(f"total: {ta:,} → {tb:,} cycles ({_delta(ta, tb)[3]}; "
                  f"{cmp.microseconds[0]:,.3f} → {cmp.microseconds[1]:,.3f} µs; B is "
                  f"{ta / tb:.2f}× as fast as A)" if tb else "total: B has no cycles",
                  highlight=False)
    console.print(f"bound: {cmp.bound[0]} → {cmp.bound[1]}; critical core: "
                  f"{critical_text(a)} → {critical_text(b)}; mean DDR "
                  f"{cmp.ddr_mean_gbps[0]:.3f} → {cmp.ddr_mean_gbps[1]:.3f} GB/s",
                  highlight=False)
    engines = Table(title="per engine: busy cycles added up over the cores", title_justify="left")
    for column in ("engine", "A", "B", "Δ", "change"):
        engines.add_column(column, justify="left" if column == "engine" else "right")
    for engine, (va, vb) in cmp.engines.items():
        engines.add_row(engine, *_delta(va, vb))
    console.print(engines)
    cores = Table(title="per core: cycles A → B (Δ)", title_justify="left")
    cores.add_column("core", justify="right")
    names = ["finish"] + list(cmp.engines)
    for name in names:
        cores.add_column(name if name == "finish" else f"{name} busy", justify="right")
    for core, entry in cmp.cores.items():
        cells = []
        for name in names:
            va, vb, d, change = _delta(*entry[name])
            cells.append(f"{va} → {vb} ({d})" if d != "-" else f"{va} → {vb}")
        cores.add_row(str(core), *cells)
    console.print(cores)
    return 0
