"""Pictures of program studies: cycles and DDR use against the first varied parameter
(the first that takes more than one value).

One figure per program and chip as given: on the left the cycles of each run (solid, the
marker saying which lower bound is largest there) and that largest lower bound (dashed,
same colour), on the right DDR use as a share of its achievable bandwidth; one line per
combination of the other varied parameters. Axes start at 0 and print whole numbers, so
that the gap between a run and its bound reads as what it is. What-if variants of the
chip are drawn by :mod:`dspsim.sweep.whatif_plot`.
"""
from __future__ import annotations

import io
import os
from collections import defaultdict
from typing import Any

from dspsim.atomic import write_atomically
from dspsim.plots import BOUND_MARKERS, bound_legend, line_color, pyplot, slug
from dspsim.sweep.files import StoreError
from dspsim.sweep.program_study import shown_value
from dspsim.sweep.whatif import numeric_order

Row = dict[str, Any]
#: Lines drawn at most; more combinations are listed in the rows, not the figure.
MAX_LINES = 10


def _whole(value, _position=None) -> str:
    return f"{value:,.0f}"


def plot_program_study(rows: list[Row], parameters: list[str], path: str) -> str:
    """The figure of one program on one chip as given (see the module)."""
    plt = pyplot()
    from matplotlib.lines import Line2D  # noqa: PLC0415 - matplotlib on demand
    from matplotlib.ticker import FuncFormatter  # noqa: PLC0415

    # the x axis: the first parameter that takes more than one value
    first = next((p for p in parameters if len({r[f"param.{p}"] for r in rows}) > 1),
                 parameters[0])
    others = [p for p in parameters if p != first]
    head = rows[0]
    xs = sorted({r[f"param.{first}"] for r in rows})
    position = {value: i for i, value in enumerate(xs)}
    lines: dict[tuple, list[Row]] = defaultdict(list)
    for row in rows:
        lines[tuple(row[f"param.{o}"] for o in others)].append(row)
    shown = sorted(lines, key=lambda combo: numeric_order(",".join(
        f"{o}={shown_value(o, v)}" for o, v in zip(others, combo, strict=True))))[:MAX_LINES]
    fig, (cycles_ax, ddr_ax) = plt.subplots(1, 2, figsize=(12.5, 4.8), layout="constrained")
    fig.suptitle(f"{head['program']} on {head['chip']} ({head['clock_mhz']:g} MHz, DDR "
                 f"{head['ddr_achievable_gbps']:.3g} GB/s achievable): against {first}"
                 + (f" (the first {MAX_LINES} of {len(lines)} combinations; every one is in "
                    f"the rows)" if len(lines) > MAX_LINES else ""), fontsize=11)
    bounds_seen: list[str] = []
    for index, combo in enumerate(shown):
        members = sorted(lines[combo], key=lambda r: position[r[f"param.{first}"]])
        x = [position[r[f"param.{first}"]] for r in members]
        color = line_color(plt, index)
        label = ", ".join(f"{o}={shown_value(o, v)}"
                          for o, v in zip(others, combo, strict=True)) or "cycles"
        cycles_ax.plot(x, [r["cycles"] for r in members], color=color, lw=1.6, label=label)
        cycles_ax.plot(x, [r["bound_cycles"] or 0 for r in members], color=color, lw=1.2,
                       ls="--")
        for xi, row in zip(x, members, strict=True):
            cycles_ax.plot(xi, row["cycles"], marker=BOUND_MARKERS.get(row["bound"], "o"),
                           color=color, ms=8, mec="black", mew=0.6, ls="none")
            if row["bound"] not in bounds_seen:
                bounds_seen.append(row["bound"])
        ddr_ax.plot(x, [100 * r["ddr_utilisation"] for r in members], color=color, lw=1.6,
                    marker="o", label=label)
    clock = head["clock_mhz"]
    for ax in (cycles_ax, ddr_ax):
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels([shown_value(first, v) for v in xs],
                           rotation=30 if len(xs) > 6 else 0)
        ax.set_xlabel(first)
        ax.set_xlim(-0.4, len(xs) - 0.6)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
    cycles_ax.yaxis.set_major_formatter(FuncFormatter(_whole))
    cycles_ax.set_ylabel("cycles")
    cycles_ax.set_title("cycles (solid) and the largest lower bound (dashed)", fontsize=10)
    seconds = cycles_ax.secondary_yaxis("right", functions=(lambda c: c / clock,
                                                           lambda us: us * clock))
    seconds.set_ylabel("µs")
    ddr_ax.set_ylim(0, max(100.0, ddr_ax.get_ylim()[1]))
    ddr_ax.set_ylabel("DDR use (% of achievable bandwidth)")
    ddr_ax.set_title("DDR use over the whole program", fontsize=10)
    handles, labels = cycles_ax.get_legend_handles_labels()
    handles.append(Line2D([], [], color="grey", ls="--"))
    labels.append("largest lower bound")
    bound_handles, bound_labels = bound_legend(bounds_seen)
    title = " · ".join(others) if others else None
    fig.legend(handles + bound_handles, labels + bound_labels, loc="outside right center",
               fontsize=8, title=title, title_fontsize=8)
    image = io.BytesIO()
    fig.savefig(image, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    write_atomically(image.getvalue(), path, "study's " + os.path.basename(path),
                     make_folder=False, error=StoreError)
    return path


def write_program_plots(rows: list[Row], parameters: list[str], folder: str) -> list[str]:
    """One figure per program and chip as given (rows without overrides); returns the
    paths written. Nothing without a varied parameter."""
    if not parameters:
        return []
    groups: dict[tuple, list[Row]] = defaultdict(list)
    for row in rows:
        if not row.get("overrides") and all(f"param.{p}" in row for p in parameters):
            groups[(row["program"], row["chip"])].append(row)
    written = []
    for (program, chip), members in sorted(groups.items()):
        name = f"program-{slug(os.path.splitext(program)[0])}-{slug(chip)}.png"
        written.append(plot_program_study(members, parameters, os.path.join(folder, name)))
    return written
