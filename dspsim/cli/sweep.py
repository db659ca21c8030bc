"""``dspsim sweep``: the command line of studies (see :mod:`dspsim.sweep`): scaling and
what-if sweeps of single calls, and studies of program files.

The parser is built from small groups (what to run, the program to study, the chip's
what-if axes, where and how to run, what to write), so that a new kind of axis adds one
group and one field of a spec. Both kinds of study go through one planner, one runner and
one row store; only the table and the plots of their rows differ.
"""
from __future__ import annotations

import argparse
import contextlib
import os

from rich.text import Text

import dspsim
from dspsim.cli.args import (
    add_kernels_option,
    int_list,
    name_list,
    param_dict,
    parse_int,
    parse_param,
    parse_seed,
)
from dspsim.cli.output import Output, add_json_option
from dspsim.cli.sweep_tables import render_program_rows, render_rows, render_sensitivity
from dspsim.plots import slug
from dspsim.programs.file import parse_value
from dspsim.sim.chip.load import packaged_chips
from dspsim.sim.chip.overrides import parse_set
from dspsim.sim.engine.machine import FIDELITIES
from dspsim.sim.errors import ArgumentError
from dspsim.sweep import SweepSpec, elasticities, rows_for_plots, run_sweep, whatif_points
from dspsim.sweep.executors import make_executor
from dspsim.sweep.plan import plan
from dspsim.sweep.program_plot import write_program_plots
from dspsim.sweep.program_study import ProgramSweepSpec, parse_vary, plan_program
from dspsim.sweep.scaling_plot import forget_stale_plots, write_sweep_plots
from dspsim.sweep.store import CSV, JSON, JSONL, RowStore
from dspsim.sweep.study import DEFAULT_MAX_RUNS, Plan
from dspsim.sweep.whatif_plot import write_whatif_plots
from dspsim.tables import write_table

DEFAULT_SWEEP_DIR = "sweeps"
SENSITIVITY_CSV = "sensitivity.csv"
#: Options of call sweeps, which a program study takes from its file instead.
CALL_OPTIONS = (("--ops", "ops"), ("--chips", "chips"), ("--lengths", "lengths"),
                ("--dtypes", "dtypes"), ("--core-masks", "core_masks"), ("--cores", "cores"),
                ("--param", "param"))


def _flatten(lists):
    return [item for sub in lists or [] for item in sub] or None


def add_sweep(sub) -> None:
    """Register ``dspsim sweep``."""
    p = sub.add_parser(
        "sweep", help="scaling and what-if studies: operators × chips × masks × lengths × "
        "dtypes × chip parameters, or a program file's parameters",
        description="Simulate every combination, write one row per run to OUT/rows.csv and "
        "OUT/rows.json, and plot speedup, DDR bandwidth and time (and, with --set, what each "
        "chip parameter changes). With --program FILE, study a program file instead: "
        "--vary its parameters and --set its chip's numbers. The number of runs is counted "
        "and printed first; more than --max-runs is refused. Rerunning the same command "
        "skips finished rows; an interrupted sweep keeps every row it finished; two sweeps "
        "cannot write one folder at once.")
    _add_calls(p)
    _add_whatif(p)
    _add_execution(p)
    _add_outputs(p)
    _add_program(p)
    p.set_defaults(output_handler=cmd_sweep)


def _add_calls(p) -> None:
    # --ops and --lengths are required unless --program is given (checked in cmd_sweep)
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
    add_kernels_option(p)


def _add_program(p) -> None:
    p.add_argument("--program", default=None, metavar="FILE",
                   help="study a program file (YAML) instead of single calls: vary its "
                   "parameters with --vary, its chip's numbers with --set, or both")
    p.add_argument("--vary", action="append", default=[], metavar="NAME=V1,V2,...",
                   help="with --program: values of one of the file's parameters, e.g. "
                   "mask_a=0x1,0x3,0xf (repeatable; every combination runs)")


def _max_runs(text: str) -> int:
    value = parse_int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"--max-runs {value}: give at least 1")
    return value


def _add_whatif(p) -> None:
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=V1,V2,...",
                   help="what if: a number of the chip file, by key path, takes each value, "
                   "e.g. vector.lane_width_bits=128,256,512 or cores=4,8,16 (repeatable: "
                   "several make a grid); invalid combinations are skipped with the reason")


def _add_execution(p) -> None:
    p.add_argument("--timing-only", action="store_true",
                   help="skip the numerics (inputs are zeros, results not computed): "
                   "same cycles, faster for large studies")
    p.add_argument("--seed", type=parse_seed, default=0,
                   help="random seed of the inputs, >= 0 (default 0)")
    p.add_argument("--fidelity", choices=FIDELITIES, default=FIDELITIES[0],
                   help=f"timing model (default {FIDELITIES[0]}; detailed is slower, for "
                   f"small lengths)")
    p.add_argument("--workers", type=int, default=1,
                   help="local worker processes (default 1: run in this process)")
    p.add_argument("--max-runs", type=_max_runs, default=None, metavar="N",
                   help=f"refuse a study of more than N runs before it starts (default "
                   f"{DEFAULT_MAX_RUNS:,}); the count is printed first")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run on a Dask cluster, e.g. tcp://host:8786 "
                   "(needs pip install 'dspsim[distributed]')")


def _add_outputs(p) -> None:
    p.add_argument("--out", default=None, metavar="DIR",
                   help=f"sweep folder (default {DEFAULT_SWEEP_DIR}/<ops>-<chips>)")
    p.add_argument("--no-plots", action="store_true", help="write rows only")
    add_json_option(p, "the rows, notes, sensitivities and files")


def chip_sets(texts: list[str]) -> dict[str, list[float]]:
    """``--set`` options as {key: values}; a key given twice is an error."""
    sets: dict[str, list[float]] = {}
    for text in texts:
        key, values = parse_set(text)
        if key in sets:
            raise ArgumentError(f"--set {key} given twice; give all its values at once: "
                                f"{key}=V1,V2,...")
        sets[key] = values
    return sets


def spec_from_args(args) -> SweepSpec:
    """The sweep a command line asks for."""
    try:
        params = param_dict(args.param)
    except argparse.ArgumentTypeError as exc:
        raise ArgumentError(str(exc)) from None
    return SweepSpec(
        operators=_flatten(args.ops), chips=_flatten(args.chips) or sorted(packaged_chips()),
        lengths=_flatten(args.lengths), dtypes=_flatten(args.dtypes) or ["fp32"],
        core_masks=_flatten(args.core_masks), core_counts=_flatten(args.cores),
        params=params, numerics=not args.timing_only, seed=args.seed,
        fidelity=args.fidelity, chip_sets=chip_sets(args.sets),
        kernels=tuple(args.kernels))


def default_out(spec: SweepSpec) -> str:
    chips = "-".join(slug(os.path.splitext(os.path.basename(c))[0]) for c in spec.chips)
    return os.path.join(DEFAULT_SWEEP_DIR, f"{slug('-'.join(spec.operators))}-{chips}")


def default_program_out(path: str) -> str:
    return os.path.join(DEFAULT_SWEEP_DIR, "program-" + slug(
        os.path.splitext(os.path.basename(path))[0]))


@contextlib.contextmanager
def _resume_hint(store: RowStore, out: Output):
    """On Ctrl-C, say what was kept and how to go on."""
    try:
        yield
    except KeyboardInterrupt:
        out.errors.print(Text(f"stopped: {len(store.rows)} rows are kept in {store.folder}; "
                              f"run the same command again to resume"))
        raise


def _plan_from_args(args) -> tuple[Plan, str, list[str]]:
    """The plan a command line asks for, its folder and the what-if keys, all checked
    before any folder is made."""
    if args.program is not None:
        given = [option for option, dest in CALL_OPTIONS if getattr(args, dest, None)]
        if given or args.seed:
            given += ["--seed"] if args.seed else []
            # silently ignoring them would present a study that was not run
            raise ArgumentError(f"{', '.join(given)} cannot be combined with --program; the "
                                f"program file names its chip, lengths and masks: vary its "
                                f"parameters with --vary NAME=V1,V2,...")
        study = ProgramSweepSpec(args.program, parse_vary(args.vary, parse_value),
                                 chip_sets(args.sets), numerics=not args.timing_only,
                                 fidelity=args.fidelity, kernels=tuple(args.kernels))
        folder = default_program_out(args.program) if args.out is None else args.out
        return plan_program(study), folder, list(study.chip_sets)
    if args.vary:
        raise ArgumentError("--vary varies a program file's parameters; give --program FILE "
                            "too, or vary a chip's numbers with --set KEY=V1,V2,...")
    if not args.ops or not args.lengths:
        raise ArgumentError("dspsim sweep needs --ops and --lengths (or --program FILE with "
                            "--vary NAME=V1,V2,... or --set KEY=V1,V2,...)")
    spec = spec_from_args(args)
    return (plan(spec), default_out(spec) if args.out is None else args.out,
            list(spec.chip_sets))


def _run(the_plan: Plan, store: RowStore, executor, out: Output):
    with out.progress(f"sweep ({executor.description})") as advance:
        return run_sweep(the_plan, store, executor,
                         on_progress=lambda done, total: advance("sweep", done, total))


def cmd_sweep(args, out: Output) -> int:
    the_plan, folder, keys = _plan_from_args(args)  # a bad request fails here
    the_plan.check_size(args.max_runs)  # so does a grid too large to mean
    with RowStore(folder, the_plan.schema) as store:  # locked and writable, or refused
        out.errors.print(Text(f"planned: {the_plan.describe()} ({the_plan.shape}) into "
                              f"{folder}"), highlight=False, soft_wrap=not out.errors.is_terminal)
        with make_executor(args.workers, args.scheduler) as executor, _resume_hint(store, out):
            outcome = _run(the_plan, store, executor, out)
        rows = [store.rows[k] for k in outcome.keys]
        every_row = list(store.rows.values())
    if not rows:  # every run refused: a table of nothing would read as a study done
        raise ArgumentError("no run of the study gave a row: " + "; ".join(outcome.notes[:3]))
    sensitivity = elasticities(rows)
    files = _write_sensitivity(sensitivity, folder) if sensitivity else []
    parameters = list(parse_vary(args.vary, parse_value)) if args.program else []
    if not args.no_plots:
        files += _plots(the_plan, args, rows, every_row, parameters, folder)
    failed = [r for r in rows if r.get("numerics_ok") is False]
    if args.json:
        out.json({"dspsim": dspsim.__version__, "command": ["dspsim", *args.argv],
                  "folder": folder, "study": the_plan.study, "program": args.program,
                  "planned": outcome.planned, "baselines": outcome.baselines,
                  "ran": outcome.ran, "already_done": outcome.already_done,
                  "notes": outcome.notes, "files": files,
                  "plots": [f for f in files if f.endswith(".png")],
                  "rows": rows_for_plots(rows),
                  "sensitivity": [e.to_dict() for e in sensitivity]})
        return 1 if failed else 0
    if the_plan.study == "program":
        render_program_rows(rows, parameters, out, f"program study: {args.program}")
    else:
        render_rows(rows, out)
    if sensitivity:
        render_sensitivity(sensitivity, out, keys)
    out.line(outcome.summary(folder))
    for note in outcome.notes:
        out.line(Text("note:", "yellow"), " ", note)
    out.line(f"rows: {os.path.join(folder, CSV)}, {os.path.join(folder, JSON)} "
             f"(log: {os.path.join(folder, JSONL)})")
    for path in files:
        out.line(f"{'table' if path.endswith('.csv') else 'plot'}: {path}")
    for row in failed:
        out.line(Text("numerics FAILED:", "red"), f" {row['key']} (max rel error "
                 f"{row['max_rel_error']:.3g})")
    return 1 if failed else 0


def _plots(the_plan: Plan, args, rows, every_row, parameters, folder) -> list[str]:
    """The study's figures: scaling (calls) or program figures, and what-if figures."""
    points = whatif_points(rows)
    if the_plan.study == "program":
        files = write_program_plots(rows, parameters, folder)
        files += write_whatif_plots(points, folder)
    else:
        order = list(dict.fromkeys(r["operator"] for r in rows)) + _flatten(args.ops)
        current = {r["config_digest"] for r in rows if not r.get("overrides")}
        files = write_sweep_plots(rows_for_plots(every_row), folder, order, current)
        files += write_whatif_plots(points, folder, order)
    forget_stale_plots(folder, [f for f in files if f.endswith(".png")])
    return files


def _write_sensitivity(found, folder: str) -> list[str]:
    """sensitivity.csv: one line per chip, operator, dtype, length and key."""
    path = os.path.join(folder, SENSITIVITY_CSV)
    return [write_table(path, [e.to_dict() for e in found], what=SENSITIVITY_CSV,
                        make_folder=False)]
