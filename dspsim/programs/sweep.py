"""Studies over programs: one program file, its named parameters varied on a grid.

``dspsim sweep --program FILE --vary mask_a=0x1,0x3,0xf --vary mask_b=0xf0,0xe0`` runs the
program for every combination and writes one row per run (the parameters, cycles, time,
bound, DDR use, each stream's end) to ``OUT/rows.csv`` and ``OUT/rows.json``, and plots
cycles and DDR utilisation against the first varied parameter, one line per combination
of the others. Every run loads the file afresh onto a fresh chip.
"""
from __future__ import annotations

import io
import itertools
import os
from typing import Any, Callable

from dspsim.plots import pyplot, slug
from dspsim.programs.file import load_program, parse_value
from dspsim.programs.result import ProgramResult
from dspsim.tables import write_table
from dspsim.sim.errors import ArgumentError, DspSimError
from dspsim.atomic import write_atomically

DEFAULT_SWEEP_DIR = "sweeps"
ROWS_CSV, ROWS_JSON = "rows.csv", "rows.json"


def add_program_options(parser) -> None:
    """The options of ``dspsim sweep`` that study a program file instead of one call."""
    parser.add_argument("--program", default=None, metavar="FILE",
                        help="study a program file (YAML) instead of single calls; vary its "
                        "parameters with --vary")
    parser.add_argument("--vary", action="append", default=[], metavar="NAME=V1,V2,...",
                        help="with --program: values of one of the file's parameters, e.g. "
                        "mask_a=0x1,0x3,0xf (repeatable; every combination runs)")


def parse_axes(pairs: list[str]) -> dict[str, list]:
    """``NAME=V1,V2`` pairs as {name: [values]}, in the order given."""
    axes: dict[str, list] = {}
    for pair in pairs:
        name, sep, values = pair.partition("=")
        name = name.strip()
        if not sep or not name or not values.strip():
            raise ArgumentError(f"--vary {pair!r} must be NAME=V1,V2,..., e.g. "
                                f"--vary mask_a=0x1,0x3,0xf")
        if name in axes:
            raise ArgumentError(f"--vary {name} is given twice; list all its values once")
        axes[name] = [parse_value(v.strip()) for v in values.split(",") if v.strip()]
    return axes


def program_row(parameters: dict[str, Any], result: ProgramResult) -> dict[str, Any]:
    """One run of a program study as a flat row."""
    row = {f"param.{k}": v for k, v in parameters.items()}
    row.update({
        "chip": result.chip, "fidelity": result.fidelity, "calls": len(result.calls),
        "streams": len(result.streams), "cycles": result.cycles,
        "microseconds": result.microseconds, "bound": result.bound,
        "bound_cycles": result.bounds.get(result.bound),
        "ddr_bytes": result.ddr["bytes"], "achieved_gbps": result.ddr["achieved_gbps"],
        "ddr_utilisation": result.ddr["utilisation"],
        "critical_path": " -> ".join(f"{p['call']}:{p['operator']}"
                                     for p in result.critical_path),
        "warnings": "; ".join(result.warnings)})
    for stream in result.streams:
        row[f"end.{stream}"] = max((c.end_cycle for c in result.calls if c.stream == stream),
                                   default=0.0)
    return row


def run_program_sweep(path: str, axes: dict[str, list], *, numerics: bool = False,
                      fidelity: str = "fast",
                      on_row: Callable[[dict], None] | None = None) -> list[dict[str, Any]]:
    """Run the program at ``path`` for every combination of ``axes``; its rows.

    A combination the program refuses (a mask selecting no core, buffers that no longer
    fit) is a row with its error instead of figures.
    """
    if not axes:
        raise ArgumentError("--program needs at least one --vary NAME=V1,V2,... over a "
                            "parameter of the file")
    load_program(path)  # a broken file fails here, before any run
    rows = []
    for values in itertools.product(*axes.values()):
        parameters = dict(zip(axes, values))
        try:
            result = load_program(path, parameters).run(numerics=numerics, fidelity=fidelity)
            row = program_row(parameters, result)
        except DspSimError as exc:
            if "is not in the file's parameters" in str(exc):
                raise
            row = {**{f"param.{k}": v for k, v in parameters.items()}, "error": str(exc)}
        rows.append(row)
        if on_row is not None:
            on_row(row)
    return rows


def check_out_folder(folder: str) -> None:
    """Refuse, before any run, an output folder that can never hold the rows."""
    if not folder:
        raise ArgumentError("the sweep's --out folder is empty; give a folder name")
    if os.path.lexists(folder) and not os.path.isdir(folder):
        raise ArgumentError(f"cannot write the sweep to {folder}: it exists and is not a "
                            f"folder; give a new or existing folder")
    for name in (ROWS_CSV, ROWS_JSON):
        path = os.path.join(folder, name)
        if os.path.lexists(path) and not os.path.isfile(path):
            raise ArgumentError(f"cannot write the sweep's {path}: it exists and is not a "
                                f"regular file; give another folder")


def write_rows(rows: list[dict[str, Any]], folder: str) -> list[str]:
    """``rows.csv`` and ``rows.json`` in ``folder``, each written atomically."""
    paths = [os.path.join(folder, ROWS_CSV), os.path.join(folder, ROWS_JSON)]
    for path in paths:
        write_table(path, rows, what="sweep's " + os.path.basename(path))
    return paths


def write_plots(rows: list[dict[str, Any]], axes: dict[str, list], folder: str,
                title: str) -> list[str]:
    """Cycles and DDR utilisation against the first varied parameter, one line per
    combination of the others."""
    good = [r for r in rows if "cycles" in r]
    if not good:
        return []
    plt = pyplot()
    first, others = next(iter(axes)), list(axes)[1:]
    paths = []
    for key, label, name in (("cycles", "cycles", "cycles.png"),
                             ("ddr_utilisation", "DDR utilisation (of achievable)",
                              "ddr.png")):
        fig, ax = plt.subplots(figsize=(6.4, 4.4), layout="constrained")
        groups: dict[tuple, list] = {}
        for row in good:
            groups.setdefault(tuple(row[f"param.{o}"] for o in others), []).append(row)
        for group, members in groups.items():
            members.sort(key=lambda r: r[f"param.{first}"])
            xs = [str(_shown(r[f"param.{first}"], first)) for r in members]
            legend = ", ".join(f"{o}={_shown(v, o)}" for o, v in zip(others, group)) or None
            ax.plot(xs, [r[key] for r in members], marker="o", label=legend)
        ax.set_xlabel(first)
        ax.set_ylabel(label)
        ax.set_title(os.path.basename(title), fontsize=10)
        if others:
            ax.legend(fontsize=8)
        image = io.BytesIO()
        fig.savefig(image, format="png", dpi=110, bbox_inches="tight")
        plt.close(fig)
        paths.append(os.path.join(folder, name))
        write_atomically(image.getvalue(), paths[-1], "sweep's " + os.path.basename(paths[-1]))
    return paths


def _shown(value, name: str):
    """Masks in hex, other numbers as they are."""
    return hex(value) if "mask" in name and isinstance(value, int) else value


def default_folder(path: str) -> str:
    return os.path.join(DEFAULT_SWEEP_DIR, "program-" + slug(
        os.path.splitext(os.path.basename(path))[0]))
