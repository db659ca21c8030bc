"""PNG plots of sweeps: speedup, DDR bandwidth and time against cores and length.

(The Gantt chart of a trace is in :mod:`dspsim.traces.plot`.)

One figure of each kind per chip, one panel per operator and dtype. matplotlib is
imported on first use with the Agg backend, so the command line starts fast and
plotting works without a display.
"""
from __future__ import annotations

import math
import os
from collections import defaultdict
from typing import Any, Iterable

Row = dict[str, Any]
MAX_COLUMNS = 3


def pyplot():
    """matplotlib.pyplot on the Agg backend (files only, no display needed)."""
    import matplotlib  # noqa: PLC0415 - heavy; only plotting needs it

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt  # noqa: PLC0415

    return plt


def length_label(length: int) -> str:
    """2^20 (1,048,576) for powers of two, else 1,000,000."""
    if length > 0 and length & (length - 1) == 0:
        return f"2^{length.bit_length() - 1} ({length:,})"
    return f"{length:,}"


def slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in text.lower())


def _one_per_core_count(rows: Iterable[Row]) -> dict[int, Row]:
    """Rows keyed by core count; of several masks with one count, the lowest mask."""
    chosen: dict[int, Row] = {}
    for row in sorted(rows, key=lambda r: r["core_mask"]):
        chosen.setdefault(row["cores"], row)
    return dict(sorted(chosen.items()))


def _panels(rows: list[Row]) -> dict[tuple[str, str], list[Row]]:
    panels: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for row in rows:
        panels[(row["operator"], row["dtype"])].append(row)
    return dict(sorted(panels.items()))


def _figure(plt, count: int, title: str):
    columns = min(count, MAX_COLUMNS)
    lines = math.ceil(count / columns)
    fig, axes = plt.subplots(lines, columns, figsize=(5.2 * columns + 1.2, 4.3 * lines + 1.1),
                             squeeze=False, layout="constrained")
    for ax in axes.flat[count:]:
        ax.set_visible(False)
    fig.suptitle(title, fontsize=12)
    return fig, list(axes.flat[:count])


def _color(plt, index: int):
    """Distinct colours for up to ten lines (lengths or core counts)."""
    return plt.get_cmap("tab10")(index % 10)


MARKERS = "osD^vP*X"


def _style(plt, index: int) -> dict:
    """Colour, marker and shrinking marker size, so that coinciding lines stay visible."""
    return {"color": _color(plt, index), "marker": MARKERS[index % len(MARKERS)],
            "markersize": max(4.0, 9.0 - 1.6 * index), "linestyle": "-"}


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


def save_figure(fig, path: str) -> str:
    """Write ``fig`` as a PNG, creating the folder; returns the path."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return path


def plot_speedup(rows: list[Row], path: str) -> str:
    """Speedup over one core against cores: one line per length, the ideal line, and each
    length's ceiling set by DDR bandwidth (one-core time / DDR-bound time)."""
    plt = pyplot()
    from matplotlib.lines import Line2D  # noqa: PLC0415

    panels = _panels(rows)
    fig, axes = _figure(plt, len(panels), f"{rows[0]['chip']}: speedup over one core "
                        f"(core_mask 0x1)\n{_chip_caption(rows[0])}")
    for ax, ((operator, dtype), panel) in zip(axes, panels.items()):
        counts = sorted({r["cores"] for r in panel})
        ax.plot(counts, counts, "k--", lw=1, label="ideal (speedup = cores)")
        for i, (length, group) in enumerate(_by_length(panel).items()):
            color = _color(plt, i)
            points = [r for r in _one_per_core_count(group).values() if r.get("speedup")]
            ceiling = next((r["speedup_ddr_ceiling"] for r in points
                            if r.get("speedup_ddr_ceiling")), None)
            label = f"n = {length_label(length)}"
            if ceiling:
                ax.axhline(ceiling, color=color, ls=":", lw=1.6)
                label += f", DDR ceiling {ceiling:.2f}×"
            ax.plot([r["cores"] for r in points], [r["speedup"] for r in points],
                    label=label, **_style(plt, i))
        _core_axis(ax, counts)
        ax.set_ylabel("speedup over one core (×)")
        ax.set_ylim(0, max(counts) * 1.08)
        ax.set_title(f"{operator} ({dtype})")
        handles, labels = ax.get_legend_handles_labels()
        handles.append(Line2D([], [], color="grey", ls=":", lw=1.6))
        labels.append("DDR ceiling: one-core time / DDR-bound time")
        ax.legend(handles, labels, fontsize=8, loc="upper left")
    return save_figure(fig, path)


def plot_bandwidth(rows: list[Row], path: str) -> str:
    """Achieved DDR bandwidth against cores, with the chip's peak and achievable lines."""
    plt = pyplot()
    panels = _panels(rows)
    first = rows[0]
    fig, axes = _figure(plt, len(panels), f"{first['chip']}: achieved DDR bandwidth\n"
                        f"{_chip_caption(first)}")
    for ax, ((operator, dtype), panel) in zip(axes, panels.items()):
        counts = sorted({r["cores"] for r in panel})
        for i, (length, group) in enumerate(_by_length(panel).items()):
            points = list(_one_per_core_count(group).values())
            ax.plot([r["cores"] for r in points], [r["achieved_gbps"] for r in points],
                    **_style(plt, i),
                    label=f"n = {length_label(length)}")
        ax.axhline(first["ddr_peak_gbps"], color="tab:red", ls="--", lw=1.2,
                   label=f"DDR peak {first['ddr_peak_gbps']:g} GB/s")
        ax.axhline(first["ddr_achievable_gbps"], color="tab:orange", ls=":", lw=1.6,
                   label=f"DDR achievable {first['ddr_achievable_gbps']:.3g} GB/s")
        _core_axis(ax, counts)
        ax.set_ylim(0, first["ddr_peak_gbps"] * 1.12)
        ax.set_ylabel("achieved DDR bandwidth (GB/s)")
        ax.set_title(f"{operator} ({dtype})")
        ax.legend(fontsize=8, loc="lower right")
    return save_figure(fig, path)


def plot_time(rows: list[Row], path: str) -> str:
    """Call time against length: one line per core count and the DDR-bound time."""
    plt = pyplot()
    panels = _panels(rows)
    first = rows[0]
    fig, axes = _figure(plt, len(panels), f"{first['chip']}: call time against length\n"
                        f"{_chip_caption(first)}")
    for ax, ((operator, dtype), panel) in zip(axes, panels.items()):
        by_cores: dict[int, dict[int, Row]] = defaultdict(dict)
        for row in sorted(panel, key=lambda r: r["core_mask"]):
            by_cores[row["cores"]].setdefault(row["length"], row)
        for i, (cores, by_len) in enumerate(sorted(by_cores.items())):
            points = sorted(by_len.values(), key=lambda r: r["length"])
            ax.plot([r["length"] for r in points], [r["microseconds"] for r in points],
                    **_style(plt, i),
                    label=f"{cores} core{'s' if cores > 1 else ''}")
        floor = sorted({(r["length"], r["ddr_floor_cycles"] / r["clock_mhz"])
                        for r in panel if r.get("ddr_floor_cycles")})
        if floor:
            ax.plot([f[0] for f in floor], [f[1] for f in floor], "k--", lw=1,
                    label="DDR-bound time (achievable bandwidth)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("length (elements)")
        ax.set_ylabel("time (µs)")
        ax.grid(True, which="both", alpha=0.3)
        ax.set_title(f"{operator} ({dtype})")
        ax.legend(fontsize=8, loc="upper left")
    return save_figure(fig, path)


def write_sweep_plots(rows: Iterable[Row], folder: str) -> list[str]:
    """Every sweep figure for every chip in ``rows``; returns the PNG paths written.

    The time figure needs two lengths or more; the speedup and bandwidth figures, two
    core counts or more.
    """
    plt = pyplot()
    by_chip: dict[tuple[str, str, str], list[Row]] = defaultdict(list)
    for row in rows:
        key = (row["chip"], row.get("config_digest", ""), row.get("fidelity") or "fast")
        by_chip[key].append(row)
    digests_per_chip = defaultdict(set)
    for chip, digest, _ in by_chip:
        digests_per_chip[chip].add(digest)
    written = []
    for (chip, digest, fidelity), chip_rows in sorted(by_chip.items()):
        # rows of an edited chip description, or of another model fidelity, get figures
        # of their own
        name = slug(chip) + (f"-{digest[:8]}" if len(digests_per_chip[chip]) > 1 else "")
        name += "" if fidelity == "fast" else f"-{slug(fidelity)}"
        if len({r["cores"] for r in chip_rows}) > 1:
            written.append(plot_speedup(chip_rows, os.path.join(folder, f"speedup-{name}.png")))
            written.append(plot_bandwidth(chip_rows,
                                          os.path.join(folder, f"bandwidth-{name}.png")))
        if len({r["length"] for r in chip_rows}) > 1:
            written.append(plot_time(chip_rows, os.path.join(folder, f"time-{name}.png")))
        plt.close("all")
    return written
