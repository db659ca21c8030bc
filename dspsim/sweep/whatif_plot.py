"""Pictures of what-if studies: speedup over the chip as given against each parameter.

One figure per chip and swept key; for calls one panel per length and one line per
operator, for programs one panel per program and one line per combination of its varied
parameters. Each point's marker says which resource bounds the run there (for a program,
its largest lower bound), so that a flat line reads as "this parameter is not the
bottleneck" and the marker says what is. The speedup axis starts at 0.
"""
from __future__ import annotations

import os
from collections import defaultdict

from dspsim.plots import BOUND_MARKERS, bound_legend, length_label, pyplot, save_figure, slug
from dspsim.sweep.whatif import WhatIfPoint, numeric_order


def plot_whatif(points: list[WhatIfPoint], path: str, operators: list[str] | None = None) -> str:
    """Speedup over the chip as given against one parameter (``points`` of one chip and key)."""
    plt = pyplot()
    first = points[0]
    lengths = sorted({_panel(p) for p in points}, key=lambda v: (isinstance(v, str), v))
    names = list(dict.fromkeys(operators or [])) + sorted({_line(p) for p in points},
                                                          key=numeric_order)
    names = [n for n in dict.fromkeys(names) if any(_line(p) == n for p in points)]
    columns = min(len(lengths), 3)
    rows_of_panels = -(-len(lengths) // columns)
    fig, axes = plt.subplots(rows_of_panels, columns, squeeze=False, layout="constrained",
                             figsize=(5.0 * columns + 1.5, 4.0 * rows_of_panels + 1.0))
    for ax in axes.flat[len(lengths):]:
        ax.set_visible(False)
    use = "all cores of each variant" if first.program is None else "each run as the file has it"
    fig.suptitle(f"{first.chip}: what if {first.key} were changed (everything else as given)"
                 f"\nspeedup over the chip as given ({first.key} = {first.given:g}), {use}",
                 fontsize=11)
    cmap = plt.get_cmap("tab10")
    values = sorted({p.value for p in points})
    bounds_seen: list[str] = []
    for ax, length in zip(axes.flat, lengths, strict=True):
        by_operator: dict[str, list[WhatIfPoint]] = defaultdict(list)
        for point in points:
            if _panel(point) == length:
                by_operator[_line(point)].append(point)
        for i, name in enumerate(names):
            series = sorted(by_operator.get(name, []), key=lambda p: p.value)
            if not series:
                continue
            color = cmap(i % 10)
            ax.plot([p.value for p in series], [p.speedup for p in series], color=color,
                    lw=1.6, label=name)
            for point in series:
                marker = BOUND_MARKERS.get(point.bound, "o")
                ax.plot(point.value, point.speedup, marker=marker, color=color, ms=8,
                        mec="black", mew=0.6, ls="none")
                if point.bound not in bounds_seen:
                    bounds_seen.append(point.bound)
        ax.axvline(first.given, color="grey", ls=":", lw=1.2)
        ax.axhline(1.0, color="grey", lw=0.8)
        if values[0] > 0 and values[-1] / values[0] >= 4:
            ax.set_xscale("log", base=2)
        ax.set_xticks(values)
        ax.set_xticklabels([f"{v:g}" for v in values], rotation=30 if len(values) > 5 else 0)
        ax.minorticks_off()
        ax.set_xlabel(f"{first.key} (dotted: as given)")
        ax.set_ylabel("speedup over the chip as given (×)")
        highest = max((p.speedup for p in points if _panel(p) == length), default=1.0)
        ax.set_ylim(0, 1.1 * max(1.0, highest))  # room above the highest marker
        ax.set_title(f"n = {length_label(length)}" if isinstance(length, int) else length,
                     fontsize=10)
        ax.grid(True, alpha=0.3)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    bound_handles, bound_labels = bound_legend(bounds_seen)
    kind = "operator" if first.program is None else "parameters"
    fig.legend(handles + bound_handles, labels + bound_labels, loc="outside right center",
               fontsize=8, title=f"{kind} · bound (marker)", title_fontsize=8)
    return save_figure(fig, path)


def _panel(point: WhatIfPoint):
    """The panel of a point: its length for a call, its program file for a program."""
    return point.length if point.program is None else point.program


def _line(point: WhatIfPoint) -> str:
    """The line of a point: its operator, or its program's varied parameters."""
    if point.program is None:
        return point.operator or ""
    return point.parameters or "as in the file"


def write_whatif_plots(points: list[WhatIfPoint], folder: str,
                       operators: list[str] | None = None) -> list[str]:
    """One figure per chip description and swept key; returns the PNG paths written."""
    plt = pyplot()
    groups: dict[tuple, list[WhatIfPoint]] = defaultdict(list)
    for point in points:
        groups[(point.chip, point.base_digest, point.key)].append(point)
    digests = defaultdict(set)
    for chip, digest, _ in groups:
        digests[chip].add(digest)
    written = []
    for (chip, digest, key), group in sorted(groups.items()):
        name = slug(chip) + (f"-{digest[:8]}" if len(digests[chip]) > 1 else "")
        written.append(plot_whatif(group, os.path.join(folder, f"whatif-{name}-{slug(key)}.png"),
                                   operators))
        plt.close("all")
    return written
