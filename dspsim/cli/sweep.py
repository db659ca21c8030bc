"""``dspsim sweep``: the command line of core_mask scaling studies (see :mod:`dspsim.sweep`)."""
from __future__ import annotations

import contextlib
import os

from rich.text import Text

from dspsim.cli.args import int_list, name_list, parse_param
from dspsim.cli.output import Output, number_column, text_column
from dspsim.sweep.executors import make_executor
from dspsim.plots import slug, write_sweep_plots
from dspsim.sim.config import packaged_chips
from dspsim.sim.machine import FIDELITIES
from dspsim.sweep import SweepSpec, rows_for_plots, run_sweep
from dspsim.sweep.plan import Plan, plan
from dspsim.sweep.store import CSV, JSON, JSONL, RowStore

DEFAULT_SWEEP_DIR = "sweeps"


def _flatten(lists):
    return [item for sub in lists or [] for item in sub] or None


def add_sweep(sub) -> None:
    """Register ``dspsim sweep``."""
    p = sub.add_parser(
        "sweep", help="core_mask scaling study: operators × chips × masks × lengths × dtypes",
        description="Simulate every combination, write one row per run to OUT/rows.csv and "
        "OUT/rows.json, and plot speedup, DDR bandwidth and time. Rerunning the same command "
        "skips finished rows; an interrupted sweep keeps every row it finished.")
    p.add_argument("--ops", type=name_list, action="append", required=True, metavar="OPS",
                   help="operator stems (relu_grad: fp_/hp_ prefix per dtype, _s version), "
                   "C names, or all; comma-separated")
    p.add_argument("--chips", type=name_list, action="append", metavar="CHIPS",
                   help="chip names or YAML paths, comma-separated (default: every packaged chip)")
    p.add_argument("--lengths", type=int_list, action="append", required=True, metavar="N,...",
                   help="elements per call, e.g. 2^16,2^20,2^22")
    p.add_argument("--dtypes", type=name_list, action="append", metavar="DTYPES",
                   help="fp32, fp16, bf16 (default fp32); a chip lacking one skips it")
    masks = p.add_mutually_exclusive_group()
    masks.add_argument("--core-masks", type=int_list, action="append", metavar="MASK,...",
                       help="core masks, e.g. 0x1,0x3,0xf,0xff")
    masks.add_argument("--cores", type=int_list, action="append", metavar="N,...",
                       help="core counts meaning the lowest n cores, e.g. 1,2,4,8 "
                       "(default: 1, 2, 4, … up to every core of each chip)")
    p.add_argument("--param", type=parse_param, action="append", default=[],
                   metavar="NAME=VALUE", help="operator parameter, e.g. alpha=0.1 (repeatable)")
    p.add_argument("--timing-only", action="store_true",
                   help="skip the numerics (inputs are zeros, results not computed): "
                   "same cycles, faster for large studies")
    p.add_argument("--seed", type=int, default=0, help="random seed of the inputs (default 0)")
    p.add_argument("--fidelity", choices=FIDELITIES, default=FIDELITIES[0],
                   help=f"timing model (default {FIDELITIES[0]}; detailed is slower, for "
                   f"small lengths)")
    p.add_argument("--workers", type=int, default=1,
                   help="local worker processes (default 1: run in this process)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run on a Dask cluster, e.g. tcp://host:8786 "
                   "(needs pip install 'dspsim[distributed]')")
    p.add_argument("--out", default=None, metavar="DIR",
                   help=f"sweep folder (default {DEFAULT_SWEEP_DIR}/<ops>-<chips>)")
    p.add_argument("--no-plots", action="store_true", help="write rows only")
    p.add_argument("--json", action="store_true",
                   help="print the rows of this sweep as JSON instead of a table")
    p.set_defaults(output_handler=cmd_sweep)


def spec_from_args(args) -> SweepSpec:
    return SweepSpec(
        operators=_flatten(args.ops), chips=_flatten(args.chips) or sorted(packaged_chips()),
        lengths=_flatten(args.lengths), dtypes=_flatten(args.dtypes) or ["fp32"],
        core_masks=_flatten(args.core_masks), core_counts=_flatten(args.cores),
        params=dict(args.param), numerics=not args.timing_only, seed=args.seed,
        fidelity=args.fidelity)


def default_out(spec: SweepSpec) -> str:
    chips = "-".join(slug(os.path.splitext(os.path.basename(c))[0]) for c in spec.chips)
    return os.path.join(DEFAULT_SWEEP_DIR, f"{slug('-'.join(spec.operators))}-{chips}")


@contextlib.contextmanager
def _resume_hint(store: RowStore, out: Output):
    """On Ctrl-C, say what was kept and how to go on."""
    try:
        yield
    except KeyboardInterrupt:
        out.error(f"stopped: {len(store.rows)} rows are kept in {store.folder}; run the same "
                  f"command again to resume")
        raise


def _run_with_progress(the_plan: Plan, store: RowStore, executor, out: Output):
    label = f"sweep ({executor.description})"
    done, whole = 0, None
    with out.progress(label) as advance:
        def on_start(total):
            nonlocal whole
            whole = total
            advance(label, done, whole)

        def on_row(_row):
            nonlocal done
            done += 1
            advance(label, done, whole)

        return run_sweep(the_plan, store, executor, on_start=on_start, on_row=on_row)


def cmd_sweep(args, out: Output) -> int:
    spec = spec_from_args(args)
    the_plan = plan(spec)  # a bad request fails here, before any folder is made
    folder = args.out or default_out(spec)
    with RowStore(folder) as store:
        with make_executor(args.workers, args.scheduler) as executor, \
                _resume_hint(store, out):
            outcome = _run_with_progress(the_plan, store, executor, out)
        rows = [store.rows[k] for k in outcome.keys]
        plots = ([] if args.no_plots
                 else write_sweep_plots(rows_for_plots(store.rows.values()), folder))
    failed = [r for r in rows if r.get("numerics_ok") is False]
    if args.json:
        out.json({"folder": folder, "ran": outcome.ran, "already_done": outcome.already_done,
                  "planned": outcome.planned, "notes": list(outcome.notes),
                  "plots": plots, "rows": rows_for_plots(rows)})
        return 1 if failed else 0
    render_rows(rows, out)
    out.line(f"{outcome.ran} runs done, {outcome.already_done} already in {folder} "
             f"(of {outcome.planned} planned)")
    for note in outcome.notes:
        out.line(Text("note:", "yellow"), f" {note}")
    out.line(f"rows: {os.path.join(folder, CSV)}, {os.path.join(folder, JSON)} "
             f"(log: {os.path.join(folder, JSONL)})")
    for path in plots:
        out.line(f"plot: {path}")
    for row in failed:
        out.line(Text("numerics FAILED:", "red"), f" {row['key']} (max rel error "
                 f"{row['max_rel_error']:.3g})")
    return 1 if failed else 0


def _verdict(row: dict) -> str | Text:
    if not row.get("numerics"):
        return "timing only"
    return "ok" if row.get("numerics_ok") else Text("FAILED", "red")


SWEEP_COLUMNS = (
    text_column("chip", key=True), text_column("operator", key=True),
    number_column("length", key=True), number_column("mask", key=True),
    number_column("cores"), number_column("cycles"), number_column("µs"),
    number_column("speedup"), number_column("efficiency"), number_column("DDR ceiling"),
    number_column("GB/s"), number_column("% DDR peak"), text_column("bound"),
    text_column("numerics"))


def render_rows(rows: list[dict], out: Output) -> None:
    """The headline columns of a sweep's rows as a table."""
    def fmt(value, pattern):
        return "-" if value is None else format(value, pattern)

    cells = [[r["chip"], r["operator"], f"{r['length']:,}", r["core_mask_hex"],
              str(r["cores"]), f"{r['cycles']:,}", f"{r['microseconds']:,.1f}",
              fmt(r.get("speedup"), ".2f"), fmt(r.get("parallel_efficiency"), ".0%"),
              fmt(r.get("speedup_ddr_ceiling"), ".2f"), f"{r['achieved_gbps']:.2f}",
              f"{100 * r['share_of_ddr_peak']:.1f}", r["bound"], _verdict(r)]
             for r in rows_for_plots(rows)]
    out.table(SWEEP_COLUMNS, cells, title="sweep")
