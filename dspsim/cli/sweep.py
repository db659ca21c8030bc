"""``dspsim sweep``: the command line of core_mask scaling studies (see :mod:`dspsim.sweep`)."""
from __future__ import annotations

import contextlib
import os

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)
from rich.table import Table

from dspsim.cli.args import int_list, name_list, parse_param
from dspsim.cli.output import Output
from dspsim.cli.program import cmd_program_sweep
from dspsim.programs.sweep import add_program_options
from dspsim.sim.errors import ArgumentError
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
    p.add_argument("--ops", type=name_list, action="append", metavar="OPS",
                   help="operator stems (relu_grad: fp_/hp_ prefix per dtype, _s version), "
                   "C names, or all; comma-separated")
    p.add_argument("--chips", type=name_list, action="append", metavar="CHIPS",
                   help="chip names or YAML paths, comma-separated (default: every packaged chip)")
    p.add_argument("--lengths", type=int_list, action="append", metavar="N,...",
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
    add_program_options(p)
    p.set_defaults(handler=cmd_sweep)


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
def _resume_hint(store: RowStore, console: Console):
    """On Ctrl-C, say what was kept and how to go on."""
    try:
        yield
    except KeyboardInterrupt:
        console.print(f"stopped: {len(store.rows)} rows are kept in {store.folder}; run the same "
                      f"command again to resume")
        raise


def _run_with_progress(the_plan: Plan, store: RowStore, executor, console: Console):
    with Progress(TextColumn("[bold]sweep[/]"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("runs"), TimeElapsedColumn(), TextColumn("eta"),
                  TimeRemainingColumn(), TextColumn("{task.description}"),
                  console=console) as progress:
        bar = progress.add_task(executor.description, total=None)
        return run_sweep(the_plan, store, executor,
                         on_start=lambda total: progress.update(bar, total=total),
                         on_row=lambda row: progress.advance(bar))


def cmd_sweep(args, console: Console) -> int:
    if args.program is not None:
        return cmd_program_sweep(args, Output())
    if not args.ops or not args.lengths:
        raise ArgumentError("dspsim sweep needs --ops and --lengths (or --program FILE with "
                            "--vary NAME=V1,V2,...)")
    spec = spec_from_args(args)
    the_plan = plan(spec)  # a bad request fails here, before any folder is made
    out = args.out or default_out(spec)
    with RowStore(out) as store:
        with make_executor(args.workers, args.scheduler) as executor, \
                _resume_hint(store, console):
            outcome = _run_with_progress(the_plan, store, executor, console)
        rows = [store.rows[k] for k in outcome.keys]
        plots = [] if args.no_plots else write_sweep_plots(rows_for_plots(store.rows.values()), out)
    render_rows(rows, console)
    console.print(f"{outcome.ran} runs done, {outcome.already_done} already in {out} "
                  f"(of {outcome.planned} planned)")
    for note in outcome.notes:
        console.print(f"[yellow]note:[/] {note}", highlight=False)
    console.print(f"rows: {os.path.join(out, CSV)}, {os.path.join(out, JSON)} "
                  f"(log: {os.path.join(out, JSONL)})")
    for path in plots:
        console.print(f"plot: {path}")
    failed = [r for r in rows if r.get("numerics_ok") is False]
    for row in failed:
        console.print(f"[red]numerics FAILED:[/] {row['key']} (max rel error "
                      f"{row['max_rel_error']:.3g})")
    return 1 if failed else 0


def _verdict(row: dict) -> str:
    if not row.get("numerics"):
        return "timing only"
    return "ok" if row.get("numerics_ok") else "[red]FAILED[/]"


def render_rows(rows: list[dict], console: Console) -> None:
    """The headline columns of a sweep's rows as a table."""
    table = Table(title="sweep", title_justify="left")
    columns = ("chip", "operator", "length", "mask", "cores", "cycles", "µs", "speedup",
               "efficiency", "DDR ceiling", "GB/s", "% DDR peak", "bound", "numerics")
    for column in columns:
        table.add_column(column, justify="left" if column in ("chip", "operator", "bound",
                                                               "numerics") else "right")

    def fmt(value, pattern):
        return "-" if value is None else format(value, pattern)

    for r in rows_for_plots(rows):
        table.add_row(r["chip"], r["operator"], f"{r['length']:,}", r["core_mask_hex"],
                      str(r["cores"]), f"{r['cycles']:,}", f"{r['microseconds']:,.1f}",
                      fmt(r.get("speedup"), ".2f"), fmt(r.get("parallel_efficiency"), ".0%"),
                      fmt(r.get("speedup_ddr_ceiling"), ".2f"), f"{r['achieved_gbps']:.2f}",
                      f"{100 * r['share_of_ddr_peak']:.1f}", r["bound"], _verdict(r))
    console.print(table)
