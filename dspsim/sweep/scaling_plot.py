"""Figures of scaling studies: speedup, DDR bandwidth and time against cores and length.

One figure of each kind per chip description, one panel per operator and dtype (in the
order the operators were asked for), one legend for the figure. Each point's marker says
which resource bounds the call there.
"""
from __future__ import annotations

import contextlib
import json
import os
from collections import defaultdict
from collections.abc import Iterable

from dspsim.plots import (
    BOUND_MARKERS,
    Row,
    bound_legend,
    figure_grid,
    length_label,
    line_color,
    line_style,
    pyplot,
    save_figure,
    shared_legend,
    slug,
)


def _one_per_core_count(rows: Iterable[Row]) -> dict[int, Row]:
    """Rows keyed by core count; of several masks with one count, the lowest mask."""
    chosen: dict[int, Row] = {}
    for row in sorted(rows, key=lambda r: r["core_mask"]):
        chosen.setdefault(row["cores"], row)
    return dict(sorted(chosen.items()))


def _panels(rows: list[Row], operators: list[str] | None = None
            ) -> dict[tuple[str, str], list[Row]]:
    """Rows per (operator, dtype), in the order the operators were asked for (C names or
    stems), then any others alphabetically."""
    panels: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for row in rows:
        panels[(row["operator"], row["dtype"])].append(row)
    order: dict[str | None, int] = {name: i for i, name in enumerate(operators or [])}

    def rank(key):
        operator = key[0]
        stem = next((r.get("stem") for r in panels[key]), None)
        return (min(order.get(operator, len(order)), order.get(stem, len(order))), key)

    return {key: panels[key] for key in sorted(panels, key=rank)}


def _chip_caption(row: Row) -> str:
    model = "" if (row.get("fidelity") or "fast") == "fast" else f", {row['fidelity']} model"
    return (f"{row['clock_mhz']:g} MHz, DDR {row['ddr_peak_gbps']:g} GB/s peak, "
            f"{row['ddr_achievable_gbps']:.3g} GB/s achievable{model}")


def _by_length(rows: list[Row]) -> dict[int, list[Row]]:
    groups: dict[int, list[Row]] = defaultdict(list)
    for row in rows:
        groups[row["length"]].append(row)
    return dict(sorted(groups.items()))


def _core_axis(ax, counts: list[int]) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(counts)
    ax.set_xticklabels([str(c) for c in counts])
    ax.minorticks_off()
    ax.set_xlabel("cores (lowest mask of each count)")
    ax.grid(True, alpha=0.3)


def _label_ceilings(ax, ceilings: list[tuple[float, object, int]], top: float) -> None:
    """Draw each ceiling once and label it at the right edge of the panel; ceilings closer
    than a label's height (4% of the axis) coincide on the page and are drawn as one."""
    merged: list[list] = []
    for value, color, length in sorted(ceilings, key=lambda c: c[0]):
        if merged and value - merged[-1][1] <= 0.04 * top:
            merged[-1][1] = value
            merged[-1][3].append(length)
            continue
        merged.append([value, value, color, [length]])
    for low, high, color, lengths in merged:
        if low > top:
            continue
        color = color if len(lengths) == 1 else "dimgrey"
        ax.axhline((low + high) / 2, color=color, ls=":", lw=1.6)
        amount = f"{low:.2f}×" if f"{low:.2f}" == f"{high:.2f}" else f"{low:.2f}–{high:.2f}×"
        which = ", ".join(_short_length(n) for n in sorted(lengths))
        ax.annotate(f"DDR ceiling {amount} (n = {which})",
                    xy=(1.0, (low + high) / 2), xycoords=("axes fraction", "data"),
                    xytext=(-3, 2), textcoords="offset points", ha="right", va="bottom",
                    fontsize=7, color=color)


def _short_length(length: int) -> str:
    if length > 0 and length & (length - 1) == 0:
        return f"2^{length.bit_length() - 1}"
    return f"{length:,}"


def plot_speedup(rows: list[Row], path: str, operators: list[str] | None = None,
                 title_note: str = "") -> str:
    """Speedup over one core against cores: one line per length, each point's marker the
    resource that bounds it, the ideal line (clipped to the data), and each length's
    ceiling set by DDR bandwidth (one-core time / DDR-bound time), labelled at the right."""
    plt = pyplot()
    from matplotlib.lines import Line2D  # noqa: PLC0415

    panels = _panels(rows, operators)
    fig, axes = figure_grid(plt, len(panels), f"{rows[0]['chip']}: speedup over one core "
                        f"(core_mask 0x1){title_note}\n{_chip_caption(rows[0])}")
    lengths = sorted({r["length"] for r in rows})
    colors = {length: line_color(plt, i) for i, length in enumerate(lengths)}
    bounds_seen: list[str] = []
    for ax, ((operator, dtype), panel) in zip(axes, panels.items(), strict=True):
        counts = sorted({r["cores"] for r in panel})
        highest, ceilings = 1.0, []
        for length, group in _by_length(panel).items():
            color = colors[length]
            points = [r for r in _one_per_core_count(group).values() if r.get("speedup")]
            if not points:
                continue
            ax.plot([r["cores"] for r in points], [r["speedup"] for r in points], color=color,
                    lw=1.6, label=f"n = {length_label(length)}")
            for r in points:
                ax.plot(r["cores"], r["speedup"], marker=BOUND_MARKERS.get(r["bound"], "o"),
                        color=color, mec="black", mew=0.6, ms=8, ls="none")
                bounds_seen.append(r["bound"])
            highest = max([highest] + [r["speedup"] for r in points])
            ceiling = next((r["speedup_ddr_ceiling"] for r in points
                            if r.get("speedup_ddr_ceiling")), None)
            if ceiling:
                ceilings.append((ceiling, color, length))
        top = highest * 1.25
        nearby = [c for c, _, _ in ceilings if c <= top * 1.2]
        top = max([top] + [c * 1.12 for c in nearby])
        ax.plot(counts, counts, "k--", lw=1, label="ideal (speedup = cores)")
        _label_ceilings(ax, ceilings, top)
        _core_axis(ax, counts)
        ax.set_ylabel("speedup over one core (×)")
        ax.set_ylim(0, top)
        ax.set_title(f"{operator} ({dtype})")
    handles, labels = bound_legend(bounds_seen)
    handles.append(Line2D([], [], color="grey", ls=":", lw=1.6))
    labels.append("DDR ceiling: one-core time / DDR-bound time")
    shared_legend(fig, axes, handles, labels)
    return save_figure(fig, path)


def plot_bandwidth(rows: list[Row], path: str, operators: list[str] | None = None,
                   title_note: str = "") -> str:
    """Achieved DDR bandwidth against cores, with the chip's peak and achievable lines."""
    plt = pyplot()
    panels = _panels(rows, operators)
    first = rows[0]
    fig, axes = figure_grid(plt, len(panels), f"{first['chip']}: achieved DDR bandwidth"
                        f"{title_note}\n{_chip_caption(first)}")
    lengths = sorted({r["length"] for r in rows})
    for ax, ((operator, dtype), panel) in zip(axes, panels.items(), strict=True):
        counts = sorted({r["cores"] for r in panel})
        for length, group in _by_length(panel).items():
            points = list(_one_per_core_count(group).values())
            ax.plot([r["cores"] for r in points], [r["achieved_gbps"] for r in points],
                    **line_style(plt, lengths.index(length)), label=f"n = {length_label(length)}")
        ax.axhline(first["ddr_peak_gbps"], color="tab:red", ls="--", lw=1.2,
                   label=f"DDR peak {first['ddr_peak_gbps']:g} GB/s")
        ax.axhline(first["ddr_achievable_gbps"], color="tab:orange", ls=":", lw=1.6,
                   label=f"DDR achievable {first['ddr_achievable_gbps']:.3g} GB/s")
        _core_axis(ax, counts)
        ax.set_ylim(0, first["ddr_peak_gbps"] * 1.12)
        ax.set_ylabel("achieved DDR bandwidth (GB/s)")
        ax.set_title(f"{operator} ({dtype})")
    shared_legend(fig, axes)
    return save_figure(fig, path)


LINESTYLES = ("-", "--", "-.", ":")


def plot_time(rows: list[Row], path: str, operators: list[str] | None = None,
              title_note: str = "") -> str:
    """Call time against length: one line per core count (each its own colour, marker and
    dash), and the DDR-bound time; lengths are labelled as the powers of two they are."""
    plt = pyplot()
    from matplotlib.ticker import FuncFormatter  # noqa: PLC0415

    panels = _panels(rows, operators)
    first = rows[0]
    fig, axes = figure_grid(plt, len(panels), f"{first['chip']}: call time against length"
                        f"{title_note}\n{_chip_caption(first)}")
    all_counts = sorted({r["cores"] for r in rows})
    for ax, ((operator, dtype), panel) in zip(axes, panels.items(), strict=True):
        by_cores: dict[int, dict[int, Row]] = defaultdict(dict)
        for row in sorted(panel, key=lambda r: r["core_mask"]):
            by_cores[row["cores"]].setdefault(row["length"], row)
        for cores, by_len in sorted(by_cores.items()):
            i = all_counts.index(cores)
            points = sorted(by_len.values(), key=lambda r: r["length"])
            style = {**line_style(plt, i), "linestyle": LINESTYLES[i % len(LINESTYLES)]}
            ax.plot([r["length"] for r in points], [r["microseconds"] for r in points],
                    **style, label=f"{cores} core{'s' if cores > 1 else ''}")
        floor = sorted({(r["length"], r["ddr_floor_cycles"] / r["clock_mhz"])
                        for r in panel if r.get("ddr_floor_cycles")})
        if floor:
            ax.plot([f[0] for f in floor], [f[1] for f in floor], color="black", lw=2.4,
                    alpha=0.35, label="DDR-bound time (achievable bandwidth)")
        lengths = sorted({r["length"] for r in panel})
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        shown = lengths if len(lengths) <= 8 else lengths[::-(-len(lengths) // 8)]
        ax.set_xticks(shown)
        ax.set_xticklabels([_short_length(n) for n in shown])
        ax.minorticks_off()
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.6g}"))
        ax.set_xlabel("length (elements)")
        ax.set_ylabel("time (µs)")
        ax.grid(True, which="both", alpha=0.3)
        ax.set_title(f"{operator} ({dtype})")
    shared_legend(fig, axes)
    return save_figure(fig, path)


PLOT_MANIFEST = ".plots.json"


def forget_stale_plots(folder: str, keep: list[str]) -> None:
    """Remove figures an earlier drawing wrote that this one did not redraw, so that no
    figure of rows since superseded stays beside the new ones."""
    manifest = os.path.join(folder, PLOT_MANIFEST)
    try:
        with open(manifest, encoding="utf-8") as handle:
            previous = json.load(handle)
    except (OSError, ValueError):
        previous = []
    kept = {os.path.basename(p) for p in keep}
    for name in previous if isinstance(previous, list) else []:
        if isinstance(name, str) and name not in kept and os.path.basename(name) == name \
                and name.endswith(".png"):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, name))
    with contextlib.suppress(OSError), open(manifest, "w", encoding="utf-8") as handle:
        json.dump(sorted(kept), handle)


def write_sweep_plots(rows: Iterable[Row], folder: str, operators: list[str] | None = None,
                      current: Iterable[str] | None = None) -> list[str]:
    """Every scaling figure for every chip in ``rows``; returns the PNG paths written.

    ``current`` are the digests of the chip descriptions the last sweep ran: their figures
    get the plain names (``speedup-ft78ne.png``); rows of any other description of the
    same chip (an edited file) get figures named and titled with that description's
    digest. What-if variants (rows with overrides) are drawn by the what-if figures
    instead. The time figure needs two lengths or more; the speedup and bandwidth
    figures, two core counts or more. (:func:`forget_stale_plots` then removes what an
    earlier drawing wrote and this one did not.)
    """
    plt = pyplot()
    current = set(current or ())
    by_chip: dict[tuple[str, str, str], list[Row]] = defaultdict(list)
    for row in rows:
        if row.get("overrides"):
            continue
        key = (row["chip"], row.get("config_digest", ""), row.get("fidelity") or "fast")
        by_chip[key].append(row)
    digests_per_chip = defaultdict(set)
    for chip, digest, _ in by_chip:
        digests_per_chip[chip].add(digest)
    written = []
    for (chip, digest, fidelity), chip_rows in sorted(by_chip.items()):
        # rows of another chip description, or of another model fidelity, get figures of
        # their own, named so that they cannot be taken for the current ones
        plain = digest in current or (not current and len(digests_per_chip[chip]) == 1)
        name = slug(chip) + ("" if plain else f"-older-{digest[:8]}")
        name += "" if fidelity == "fast" else f"-{slug(fidelity)}"
        note = "" if plain else f" (older chip description {digest[:8]})"
        kinds = []
        if len({r["cores"] for r in chip_rows}) > 1:
            kinds += [("speedup", plot_speedup), ("bandwidth", plot_bandwidth)]
        if len({r["length"] for r in chip_rows}) > 1:
            kinds.append(("time", plot_time))
        for kind, draw in kinds:
            written.append(draw(chip_rows, os.path.join(folder, f"{kind}-{name}.png"),
                                operators, note))
        plt.close("all")
    return written
