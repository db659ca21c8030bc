"""``dspsim trace summary|plot|compare``: inspect trace files (see :mod:`dspsim.traces.view`).

Printed through :class:`~dspsim.cli.output.Output`: tables fit the terminal, plain columns
go into a pipe, and text from the trace file is printed as written, never read as markup.
"""
from __future__ import annotations

import dataclasses
import os

from dspsim.cli.output import Output, add_json_option, number_column, text_column
from dspsim.cli.report import render_speed_of_light
from dspsim.plots import check_image_target
from dspsim.sim.errors import ArgumentError
from dspsim.traces.compare import TraceComparison, compare
from dspsim.traces.plot import collapsed_groups, core_list, plot_trace
from dspsim.traces.view import MAX_BUCKETS, TraceSummary, check_buckets, read_trace, summarize

SPARK = " ▁▂▃▄▅▆▇█"


def add_trace(sub) -> None:
    """Register ``dspsim trace`` and its subcommands."""
    p = sub.add_parser("trace", help="summarise, plot or compare trace files",
                       description="Read traces written by `dspsim run`: Perfetto protobuf "
                       "(.pftrace) or Chrome JSON (.json).")
    tsub = p.add_subparsers(dest="trace_command", required=True, metavar="SUBCOMMAND")

    s = tsub.add_parser("summary", help="busy shares, overlap, idle gaps, DDR use, bound, "
                        "critical core")
    s.add_argument("file", help="trace file (.pftrace or .json)")
    s.add_argument("--buckets", default="20", metavar="N",
                   help=f"slices of the call in the DDR timeline, 1 to {MAX_BUCKETS:,} "
                   f"(default 20)")
    add_json_option(s, "the summary")
    s.set_defaults(output_handler=cmd_summary)

    pl = tsub.add_parser("plot", help="Gantt chart of cores × engines over the DDR bandwidth")
    pl.add_argument("file", help="trace file (.pftrace or .json)")
    pl.add_argument("-o", "--output", default=None, metavar="IMAGE",
                    help="image to write: .png, .svg or .pdf (default: the trace's path with "
                    ".png)")
    pl.add_argument("--collapse", action="store_true",
                    help="draw cores that do the same work at the same cycles (within 0.5%% "
                    "of the call) once, as 'cores 0-7'")
    add_json_option(pl, "what was written")
    pl.set_defaults(output_handler=cmd_plot)

    c = tsub.add_parser("compare", help="what changed between two runs: total, per core, "
                        "per engine")
    c.add_argument("a", help="first trace (the reference)")
    c.add_argument("b", help="second trace")
    add_json_option(c, "the comparison")
    c.set_defaults(output_handler=cmd_compare)


def parse_buckets(text: str) -> int:
    """``--buckets``: a whole number from 1 to MAX_BUCKETS, refused otherwise (never clamped)."""
    try:
        value = int(str(text).strip())
    except ValueError:
        raise ArgumentError(f"--buckets {text!r:.40} is not a whole number; give 1 to "
                            f"{MAX_BUCKETS:,}") from None
    check_buckets(value, "--buckets")
    return value


def _pct(part: float | None, whole: float) -> str:
    return "-" if part is None or not whole else f"{100 * part / whole:.1f}%"


def summary_json(summary: TraceSummary) -> dict:
    """The summary as JSON data (vector gaps as their count and total)."""
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


def cmd_summary(args, out: Output) -> int:
    summary = summarize(read_trace(args.file), parse_buckets(args.buckets))
    if args.json:
        out.json(summary_json(summary))
        return 0
    render_summary(summary, out)
    return 0


def render_summary(s: TraceSummary, out: Output) -> None:
    """The summary as text: headline, per-core table, roofline table, DDR use."""
    total = s.total_cycles
    clock = float(s.metadata.get("clock_mhz") or 1.0)
    out.line((s.label, "bold"), f": {s.cycles:,} cycles ({s.cycles / clock:,.3f} µs at "
             f"{clock:g} MHz)")
    if s.speed_of_light is not None:
        render_speed_of_light(s.speed_of_light, out)
    out.line("bounded by ", (s.bound, "bold"), f"; critical core (finishes last): "
             f"{critical_text(s)}; "
             + ", ".join(f"{k} {v:,.0f} cycles" for k, v in s.call_cycles.items()))

    columns = [number_column("core", key=True), number_column("tiles"),
               *(number_column(e) for e in s.engines), number_column("active"),
               number_column("DMA∥vector"), number_column("vector gaps"),
               number_column("gap cycles"), number_column("longest"),
               number_column("finish"), number_column("slack")]
    finish_max = max((c.finish for c in s.cores), default=0.0)
    rows, styles = [], []
    for c in s.cores:
        gaps = c.vector_gaps
        rows.append([str(c.core), f"{c.tiles:,}",
                     *(f"{c.busy.get(e, 0):,.0f} ({_pct(c.busy.get(e, 0), total)})"
                       for e in s.engines),
                     _pct(c.active, total), f"{c.overlap:,.0f} ({_pct(c.overlap, c.active)})",
                     f"{len(gaps):,}", f"{sum(gaps):,.0f}", f"{max(gaps, default=0):,.0f}",
                     f"{c.finish:,.0f}", f"{finish_max - c.finish:,.0f}"])
        styles.append("bold" if c.core == s.critical_core else None)
    out.table(columns, rows, title="per core: engine busy cycles (share of the call)",
              row_styles=styles)

    roof = [[name + (" ← bound" if name == s.bound else ""), f"{cycles:,.0f}",
             _pct(cycles, total)]
            for name, cycles in sorted(s.roofline_terms.items(), key=lambda kv: -kv[1])]
    out.table([text_column("resource", key=True), number_column("cycles"),
               number_column("share of actual")], roof,
              title="roofline: each resource's lower bound")

    top = max(s.ddr_timeline + [s.ddr_achievable_gbps]) or 1.0
    spark = "".join(SPARK[min(8, max(0, round(8 * g / top)))] for g in s.ddr_timeline)
    out.line(f"DDR: {s.ddr_bytes:,.0f} bytes, mean {s.ddr_mean_gbps:.3f} GB/s = "
             f"{_pct(s.ddr_mean_gbps, s.ddr_peak_gbps)} of peak {s.ddr_peak_gbps:g} GB/s, "
             f"{_pct(s.ddr_mean_gbps, s.ddr_achievable_gbps)} of achievable "
             f"{s.ddr_achievable_gbps:.3g}; saturated {100 * s.ddr_saturated_share:.1f}% "
             f"of the call")
    out.line(f"DDR over time ({len(s.ddr_timeline)} slices, full block = {top:.3g} GB/s): "
             f"|{spark}|")
    out.line("  " + " ".join(f"{g:.2f}" for g in s.ddr_timeline), style="dim")


def cmd_plot(args, out: Output) -> int:
    output = args.output or os.path.splitext(args.file)[0] + ".png"
    check_image_target(output)  # before reading and drawing
    trace = read_trace(args.file)
    meta = trace.metadata
    peak, achievable, bound = meta["ddr_peak_gbps"], meta["ddr_achievable_gbps"], meta["bound"]
    written = plot_trace(trace, output, peak, achievable, bound, collapse=args.collapse)
    groups = collapsed_groups(trace) if args.collapse else []
    if args.json:
        out.json({"plot": written, "trace": args.file, "collapse": args.collapse,
                  "collapsed": groups})
        return 0
    out.line(f"plot: {written}")
    if args.collapse and not groups:
        out.line("--collapse: no two cores do the same work at the same cycles, so every "
                 "core has its own rows")
    elif args.collapse:
        out.line("--collapse: drew " + "; ".join(f"cores {core_list(g)} once"
                                                 for g in groups))
    return 0


def comparison_json(cmp: TraceComparison) -> dict:
    """The comparison as JSON data (the two runs by their labels)."""
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


def cmd_compare(args, out: Output) -> int:
    a = summarize(read_trace(args.a))
    b = summarize(read_trace(args.b))
    cmp = compare(a, b)
    if args.json:
        out.json(comparison_json(cmp))
        return 0
    out.line(f"A: {a.label}")
    out.line(f"B: {b.label}")
    for key, (va, vb) in cmp.metadata.items():
        out.line(f"  {key}: {str(va)[:200]} → {str(vb)[:200]}")
    ta, tb = a.cycles, b.cycles
    out.line(f"total: {ta:,} → {tb:,} cycles ({_delta(ta, tb)[3]}; "
             f"{cmp.microseconds[0]:,.3f} → {cmp.microseconds[1]:,.3f} µs; B is "
             f"{ta / tb:.2f}× as fast as A)" if tb else "total: B has no cycles")
    out.line(f"bound: {cmp.bound[0]} → {cmp.bound[1]}; critical core: "
             f"{critical_text(a)} → {critical_text(b)}; mean DDR "
             f"{cmp.ddr_mean_gbps[0]:.3f} → {cmp.ddr_mean_gbps[1]:.3f} GB/s")
    out.table([text_column("engine", key=True), number_column("A"), number_column("B"),
               number_column("Δ"), number_column("change")],
              [[engine, *_delta(va, vb)] for engine, (va, vb) in cmp.engines.items()],
              title="per engine: busy cycles added up over the cores")
    names = ["finish"] + list(cmp.engines)
    columns = [number_column("core", key=True)] + [
        number_column(name if name == "finish" else f"{name} busy") for name in names]
    rows = []
    for core, entry in cmp.cores.items():
        cells = [str(core)]
        for name in names:
            va, vb, d, _ = _delta(*entry[name])
            cells.append(f"{va} → {vb} ({d})" if d != "-" else f"{va} → {vb}")
        rows.append(cells)
    out.table(columns, rows, title="per core: cycles A → B (Δ)")
    return 0


__all__ = ["add_trace", "cmd_compare", "cmd_plot", "cmd_summary", "comparison_json",
           "parse_buckets", "render_summary", "summary_json"]
