"""``dspsim calibrate``: fit chip keys to measured cycles (see :mod:`dspsim.calibration`)."""
from __future__ import annotations

import math
import os

import dspsim
from dspsim.atomic import check_target
from dspsim.calibration import Calibration, calibrate, parse_bounds
from dspsim.calibration.fitted_yaml import write_fitted_chip
from dspsim.calibration.plot import plot_calibration
from dspsim.cli.args import add_kernels_option, name_list, parse_int
from dspsim.cli.output import Output, add_json_option, number_column, text_column
from dspsim.plots import check_image_target
from dspsim.sim.errors import ArgumentError

DEFAULT_PLOT = "calibration.png"


def add_calibrate(sub) -> None:
    """Register ``dspsim calibrate``."""
    p = sub.add_parser(
        "calibrate", help="fit chip keys to measured cycles",
        description="Time every call of a CSV of measured cycles on the chip, fit the chosen "
        "keys of the chip file so that the predictions match (log-space least squares), and "
        "report each key's fitted value, how firmly the data determine it, and every row "
        "before and after. --out writes the fitted chip file, its text and comments kept.")
    p.add_argument("--chip", required=True, help="chip name or YAML path")
    p.add_argument("--measured", required=True, metavar="FILE.csv",
                   help="measured calls: operator, length, core_mask, cycles, and optionally "
                   "region (ddr, shared_sram, l2), dtype, params or one column per parameter")
    p.add_argument("--fit", type=name_list, action="append", required=True, metavar="KEY,...",
                   help="chip keys to fit, e.g. memory.ddr.efficiency,dma.setup_cycles")
    p.add_argument("--bounds", action="append", default=[], metavar="KEY=LO:HI",
                   help="range of a key (default: a tenth to ten times its value, as far as "
                   "the chip allows); repeatable")
    p.add_argument("--out", default=None, metavar="FITTED.yaml",
                   help="write the chip file with the fitted values")
    p.add_argument("--plot", default=None, metavar="IMAGE",
                   help=f"predicted-against-measured plot (default: FITTED.png beside --out, "
                   f"else {DEFAULT_PLOT})")
    p.add_argument("--no-plot", action="store_true", help="draw no plot")
    p.add_argument("--max-evaluations", type=parse_int, default=None, metavar="N",
                   help="evaluations of all rows the solver may spend, besides the checks between "
                   "its rounds (default 20 + 12 per key)")
    add_json_option(p, "the calibration")
    add_kernels_option(p)
    p.set_defaults(output_handler=cmd_calibrate)


def _plot_path(args) -> str | None:
    if args.no_plot:
        return None
    if args.plot:
        return args.plot
    return os.path.splitext(args.out)[0] + ".png" if args.out else DEFAULT_PLOT


def cmd_calibrate(args, out: Output) -> int:
    keys = [key for group in args.fit for key in group]
    bounds = parse_bounds(args.bounds)
    if args.max_evaluations is not None and args.max_evaluations < 1:
        raise ArgumentError(f"--max-evaluations {args.max_evaluations} must be at least 1")
    plot_path = _plot_path(args)
    # every output is checked before the fit, which can take minutes; the inputs (the
    # measurements and the chip file) are refused as outputs by check_target
    if args.out:
        check_target(args.out, "fitted chip file")
    if plot_path:
        check_image_target(plot_path, "calibration plot")
    with out.progress("calibrating") as advance:
        result = calibrate(args.chip, args.measured, keys, bounds,
                           max_evaluations=args.max_evaluations, progress=advance,
                           kernels=args.kernels or None)
    written = write_fitted_chip(result, args.out) if args.out else None
    plotted = plot_calibration(result, plot_path) if plot_path else None
    if args.json:
        out.json({"dspsim": dspsim.__version__, "command": ["dspsim", *args.argv],
                  **result.to_dict(), "out": written, "plot": plotted})
        return 0
    render(result, out)
    if written:
        out.line(f"fitted chip: {written}")
    if plotted:
        out.line(f"plot: {plotted}")
    return 0


def _percent(value: float) -> str:
    return f"{value:+.2%}"


def _number(value: float) -> str:
    return f"{value:,.6g}" if value != int(value) or abs(value) >= 1e15 else f"{int(value):,}"


def render(result: Calibration, out: Output) -> None:
    """The keys, the rows and the errors before and after, as tables."""
    out.line(f"{result.message} of {os.path.basename(result.measured_path)} on "
             f"{result.chip_name}: {result.evaluations} evaluations of every row, "
             f"{result.simulations:,} simulated calls, {result.seconds:.1f} s "
             f"({result.cpu_seconds:.1f} s of processor time)")
    columns = [text_column("key", key=True), number_column("before"),
               number_column("fitted"), text_column("range"), number_column("sensitivity"),
               number_column("± (1σ)"), text_column("pinned down by the data")]
    rows = []
    for k in result.keys:
        spread = "-" if k.std_error is None or k.std_error != k.std_error else \
            f"±{math.expm1(k.std_error):.0%}" if k.std_error < 700 else "unbounded"
        verdict = "yes" if k.pinned else f"no: {k.reason}"
        if not k.written:
            verdict += "; left at its value"
        rows.append([k.key, _number(k.original), _number(k.fitted),
                     f"{_number(k.lower)} to {_number(k.upper)}", f"{k.sensitivity:.3f}",
                     spread, verdict])
    out.table(columns, rows, title="fitted keys (sensitivity: RMS over the rows of the % "
              "change in cycles per % change in the key)")
    columns = [number_column("line", key=True), text_column("call"), number_column("measured"),
               number_column("before"), number_column("error before"), number_column("after"),
               number_column("error after")]
    rows = [[str(r.measurement.line), r.measurement.describe(), _number(r.measurement.cycles),
             f"{r.before:,}", _percent(r.error_before), f"{r.after:,}", _percent(r.error_after)]
            for r in result.rows]
    out.table(columns, rows, title="rows (error: predicted / measured - 1)")
    out.line(f"mean |error| {result.mean_error_before:.2%} before, "
             f"{result.mean_error_after:.2%} after; largest {result.max_error_before:.2%} "
             f"before, {result.max_error_after:.2%} after")
    for note in result.notes:
        out.line(note if note.startswith("warning:") else f"note: {note}")
