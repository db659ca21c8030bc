"""``dspsim sweep``: the command line of scaling and what-if studies (see :mod:`dspsim.sweep`).

The parser is built from small groups (what to run, the chip's what-if axes, where and how
to run, what to write), so that a new kind of axis adds one group and one field of
:class:`~dspsim.sweep.SweepSpec`.
"""
from __future__ import annotations

import argparse
import contextlib
import os

from rich.text import Text

import dspsim

from dspsim.cli.args import int_list, name_list, param_dict, parse_param, parse_seed
from dspsim.cli.output import Output, number_column, text_column
from dspsim.cli.program import cmd_program_sweep
from dspsim.plots import slug
from dspsim.programs.sweep import add_program_options
from dspsim.sim.chip.load import packaged_chips
from dspsim.sim.errors import ArgumentError
from dspsim.sim.engine.machine import FIDELITIES
from dspsim.sim.chip.overrides import parse_set
from dspsim.sweep import SweepSpec, elasticities, rows_for_plots, run_sweep, whatif_points
from dspsim.sweep.executors import make_executor
from dspsim.sweep.plan import Plan, plan
from dspsim.sweep.scaling_plot import forget_stale_plots, write_sweep_plots
from dspsim.sweep.store import CSV, JSON, JSONL, RowStore, atomic_write
from dspsim.sweep.whatif_plot import write_whatif_plots

DEFAULT_SWEEP_DIR = "sweeps"
SENSITIVITY_CSV = "sensitivity.csv"


def _flatten(lists):
    return [item for sub in lists or [] for item in sub] or None


def add_sweep(sub) -> None:
    """Register ``dspsim sweep``."""
    p = sub.add_parser(
        "sweep", help="scaling and what-if study: operators × chips × masks × lengths × "
        "dtypes × chip parameters",
        description="Simulate every combination, write one row per run to OUT/rows.csv and "
        "OUT/rows.json, and plot speedup, DDR bandwidth and time (and, with --set, what each "
        "chip parameter changes). Rerunning the same command skips finished rows; an "
        "interrupted sweep keeps every row it finished.")
    _add_calls(p)
    _add_whatif(p)
    _add_execution(p)
    _add_outputs(p)
    add_program_options(p)
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
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run on a Dask cluster, e.g. tcp://host:8786 "
                   "(needs pip install 'dspsim[distributed]')")


def _add_outputs(p) -> None:
    p.add_argument("--out", default=None, metavar="DIR",
                   help=f"sweep folder (default {DEFAULT_SWEEP_DIR}/<ops>-<chips>)")
    p.add_argument("--no-plots", action="store_true", help="write rows only")
    p.add_argument("--json", action="store_true",
                   help="print the rows, notes, sensitivities and files as JSON")


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
        fidelity=args.fidelity, chip_sets=chip_sets(args.sets))


def default_out(spec: SweepSpec) -> str:
    chips = "-".join(slug(os.path.splitext(os.path.basename(c))[0]) for c in spec.chips)
    return os.path.join(DEFAULT_SWEEP_DIR, f"{slug('-'.join(spec.operators))}-{chips}")


@contextlib.contextmanager
def _resume_hint(store: RowStore, out: Output):
    """On Ctrl-C, say what was kept and how to go on."""
    try:
        yield
    except KeyboardInterrupt:
        out.errors.print(Text(f"stopped: {len(store.rows)} rows are kept in {store.folder}; "
                              f"run the same command again to resume"))
        raise


def _run(the_plan: Plan, store: RowStore, executor, out: Output):
    with out.progress(f"sweep ({executor.description})") as advance:
        state = {"done": 0, "total": None}

        def start(total: int) -> None:
            state["total"] = total
            advance("sweep", 0, total)

        def row(_) -> None:
            state["done"] += 1
            advance("sweep", state["done"], state["total"])

        return run_sweep(the_plan, store, executor, on_start=start, on_row=row)


def cmd_sweep(args, out: Output) -> int:
    if args.program is not None:
        return cmd_program_sweep(args, out)
    if not args.ops or not args.lengths:
        raise ArgumentError("dspsim sweep needs --ops and --lengths (or --program FILE with "
                            "--vary NAME=V1,V2,...)")
    spec = spec_from_args(args)
    the_plan = plan(spec)  # a bad request fails here, before any folder is made
    folder = args.out or default_out(spec)
    with RowStore(folder) as store:
        with make_executor(args.workers, args.scheduler) as executor, _resume_hint(store, out):
            outcome = _run(the_plan, store, executor, out)
        rows = [store.rows[k] for k in outcome.keys]
        every_row = list(store.rows.values())
    points = whatif_points(rows)
    sensitivity = elasticities(rows)
    files = _write_sensitivity(sensitivity, folder) if sensitivity else []
    if not args.no_plots:
        order = [r.operator for r in the_plan.runs] + list(spec.operators)
        current = {r.chip.digest for r in the_plan.runs if not r.chip.overrides}
        files += write_sweep_plots(rows_for_plots(every_row), folder, order, current)
        files += write_whatif_plots(points, folder, order)
        forget_stale_plots(folder, [f for f in files if f.endswith(".png")])
    failed = [r for r in rows if r.get("numerics_ok") is False]
    if args.json:
        out.json({"dspsim": dspsim.__version__, "command": ["dspsim", *args.argv],
                  "folder": folder, "planned": outcome.planned, "ran": outcome.ran,
                  "already_done": outcome.already_done, "notes": outcome.notes,
                  "files": files, "plots": [f for f in files if f.endswith(".png")],
                  "rows": rows_for_plots(rows),
                  "sensitivity": [e.to_dict() for e in sensitivity]})
        return 1 if failed else 0
    render_rows(rows, out)
    if sensitivity:
        render_sensitivity(sensitivity, out, list(spec.chip_sets))
    out.line(f"{outcome.ran} runs done, {outcome.already_done} already in {folder} "
             f"(of {outcome.planned} planned)")
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


def _verdict(row: dict) -> Text:
    if not row.get("numerics"):
        return Text("timing only")
    return Text("ok") if row.get("numerics_ok") else Text("FAILED", "red")


def _fmt(value, pattern: str) -> str:
    return "-" if value is None else format(value, pattern)


def render_rows(rows: list[dict], out: Output) -> None:
    """The headline columns of a sweep's rows as a table that fits."""
    whatif = any(r.get("overrides") for r in rows)
    columns = [text_column("chip", key=True)]
    columns += [text_column("overrides", key=True)] if whatif else []
    columns += [text_column("operator", key=True), number_column("length", key=True),
                number_column("mask", key=True), number_column("cores"),
                number_column("cycles"), number_column("µs"), number_column("speedup"),
                number_column("efficiency"), number_column("DDR ceiling"),
                number_column("GB/s"), number_column("% DDR peak"), text_column("bound"),
                text_column("numerics")]
    table = []
    for r in rows_for_plots(rows):
        cells = [r["chip"]] + ([r.get("overrides") or "as given"] if whatif else [])
        cells += [r["operator"], f"{r['length']:,}", r["core_mask_hex"], str(r["cores"]),
                  f"{r['cycles']:,}", f"{r['microseconds']:,.1f}",
                  _fmt(r.get("speedup"), ".2f"), _fmt(r.get("parallel_efficiency"), ".0%"),
                  _fmt(r.get("speedup_ddr_ceiling"), ".2f"), f"{r['achieved_gbps']:.2f}",
                  f"{100 * r['share_of_ddr_peak']:.1f}", r["bound"], _verdict(r)]
        table.append(cells)
    out.table(columns, table, title="sweep")


def short_keys(keys: list[str]) -> dict[str, str]:
    """Each key path by its shortest unique ending: lane_width_bits for
    vector.lane_width_bits, unless another key ends the same way."""
    names = {}
    for key in keys:
        parts = key.split(".")
        for n in range(1, len(parts) + 1):
            tail = ".".join(parts[-n:])
            if sum(1 for k in keys if k == tail or k.endswith("." + tail)) == 1:
                names[key] = tail
                break
        else:
            names[key] = key
    return names


def render_sensitivity(found, out: Output, order: list[str] | None = None) -> None:
    """Elasticities as a table: one row per chip, operator and length, one column per key
    (in ``order``, the order of the --set options)."""
    keys = list(dict.fromkeys([k for k in order or [] if any(e.key == k for e in found)]
                              + [e.key for e in found]))
    names = short_keys(keys)
    table: dict[tuple, dict[str, object]] = {}
    for e in found:
        line = table.setdefault((e.chip, e.operator, e.length), {"bound": e.bound})
        line[e.key] = e.elasticity
    columns = [text_column("chip", key=True), text_column("operator", key=True),
               number_column("length", key=True), text_column("bound as given")]
    columns += [number_column(names[k]) for k in keys]
    rows = [[chip, operator, f"{length:,}", line["bound"]]
            + [_fmt(line.get(k), "+.3f") for k in keys]
            for (chip, operator, length), line in sorted(table.items())]
    out.table(columns, rows, title="sensitivity: % change in cycles per % change in the "
              "parameter, around the chip as given (all cores)")


def _write_sensitivity(found, folder: str) -> list[str]:
    """sensitivity.csv: one line per chip, operator, dtype, length and key."""
    import csv  # noqa: PLC0415 - only what-if sweeps write it
    import io  # noqa: PLC0415

    buffer = io.StringIO()
    fields = list(found[0].to_dict())
    writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for e in found:
        writer.writerow({k: "" if v is None else v for k, v in e.to_dict().items()})
    path = os.path.join(folder, SENSITIVITY_CSV)
    atomic_write(path, buffer.getvalue().encode("utf-8"))
    return [path]
