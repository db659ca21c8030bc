"""The Gantt chart of a trace: cores × engines over time, the DDR bandwidth beneath.

A row whose slices are too many for the image's pixels is drawn as busy density: in a
frame marking 100%, each pixel column filled to the share of its cycles the engine was
busy, so that an engine 58% busy throughout shows as a band 58% high all along, never as
white gaps between sub-pixel bars.
Wider slices are drawn as bars with edges in a darker shade of their colour (white edges
would eat the busy time of thin bars). A program's streams come first, in the program's
order, each call a labelled bar on its stream's row.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dspsim.plots import pyplot, save_figure

ENGINE_COLORS = {"dma-in": "tab:blue", "vector": "tab:green", "dma-out": "tab:orange",
                 "call": "tab:gray"}
OTHER_COLOR = "tab:purple"


@dataclass
class Row:
    """One row of the chart: a track of one core, or of several identical cores."""

    cores: list[int]  # empty for the call's own track
    thread: str
    bars: list[tuple[float, float]]  # (start, cycles)
    #: a program stream's calls: (name, start, end), drawn as labelled bars
    calls: list[tuple[str, float, float]] = field(default_factory=list)

    @property
    def engine(self) -> str:
        if self.thread.startswith("stream "):  # a program stream's launches and barriers
            return "call"
        return self.thread.partition(".")[0]


def core_list(cores: list[int]) -> str:
    """``0-3, 6`` for cores 0, 1, 2, 3 and 6."""
    runs: list[list[int]] = []
    for core in sorted(cores):
        if runs and core == runs[-1][-1] + 1:
            runs[-1].append(core)
        else:
            runs.append([core])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs)


#: Cores whose slices start and last within this share of the call of each other's are
#: drawn once by ``--collapse``.
ALIKE_SHARE = 0.005


def _alike(a: dict, b: dict, tolerance: float) -> bool:
    """Whether two cores' tracks hold the same slices at (nearly) the same cycles."""
    if a.keys() != b.keys():
        return False
    for thread, slices in a.items():
        other = b[thread]
        if len(slices) != len(other):
            return False
        for (_, start, cycles), (_, start_b, cycles_b) in zip(slices, other, strict=True):
            if abs(start - start_b) > tolerance or abs(cycles - cycles_b) > tolerance:
                return False
    return True


def chart_rows(trace, collapse: bool = False) -> list[Row]:
    """The rows with at least one slice, the call's first, then each core's engines.

    With ``collapse``, cores whose tracks hold as many slices, each starting and lasting
    within ALIKE_SHARE of the call of the other core's, share one set of rows (named
    ``cores 0-3``, drawn from the first of them).
    """
    tracks: dict[tuple, list[tuple[str, float, float]]] = {}
    for s in trace.slices:
        tracks.setdefault((s.core, s.thread), []).append((s.name, s.start, s.cycles))
    streams = list(getattr(trace, "streams", []) or [])
    calls = getattr(trace, "calls", []) or []
    call = [Row([], f"stream {name}",
                [(a, c) for _, a, c in sorted(tracks.get((None, f"stream {name}"), []),
                                              key=lambda b: b[1])],
                sorted(((n, a, b) for st, n, a, b in calls if st == name), key=lambda c: c[1]))
            for name in streams]
    call += [Row([], thread, [(a, c) for _, a, c in sorted(bars, key=lambda b: b[1])])
             for (core, thread), bars in tracks.items()
             if core is None and thread not in {f"stream {n}" for n in streams}]
    per_core: dict[int, dict[str, list]] = {}
    for (core, thread), bars in tracks.items():
        if core is not None:
            per_core.setdefault(core, {})[thread] = sorted(bars, key=lambda b: b[1])
    tolerance = max(1.0, ALIKE_SHARE * float(trace.total_cycles))
    groups: list[tuple[list[int], dict]] = []
    for core in sorted(per_core):
        shape = per_core[core]
        same = next((g for g in groups if collapse and _alike(g[1], shape, tolerance)), None)
        if same:
            same[0].append(core)
        else:
            groups.append(([core], shape))
    rows = call
    for cores, shape in groups:
        rows += [Row(cores, thread, [(a, c) for _, a, c in shape[thread]])
                 for thread in sorted(shape, key=_thread_rank)]
    return rows


def collapsed_groups(trace) -> list[list[int]]:
    """The groups of two or more cores that ``collapse`` draws once (empty: none alike)."""
    cores = [row.cores for row in chart_rows(trace, collapse=True) if len(row.cores) > 1]
    return [list(c) for c in dict.fromkeys(tuple(c) for c in cores)]


def legend_entries(rows: list[Row]) -> list[tuple[str, str]]:
    """(label, colour) of each engine that has a row, in the usual order; engines without
    a colour of their own share one entry."""
    present = list(dict.fromkeys(row.engine for row in rows))
    entries = [(e, ENGINE_COLORS[e]) for e in ENGINE_COLORS if e in present]
    others = [e for e in present if e not in ENGINE_COLORS]
    if others:
        entries.append((", ".join(others)[:40], OTHER_COLOR))
    return entries


def _label(row: Row) -> str:
    if not row.cores:
        if row.calls:
            return f"{row.thread} (calls)"
        return "call (launch, barrier)" if row.thread == "call" else row.thread
    who = f"core {row.cores[0]}" if len(row.cores) == 1 else f"cores {core_list(row.cores)}"
    return f"{who} · {row.thread}"


def plot_trace(trace, path: str, ddr_peak_gbps: float | None = None,
               ddr_achievable_gbps: float | None = None, bound: str | None = None,
               collapse: bool = False) -> str:
    """A Gantt chart of the cores' engines with the DDR bandwidth in use beneath it.

    ``trace`` is a :class:`dspsim.traces.view.Trace`; the DDR lines are drawn when given.
    Only tracks that hold slices get a row, and only engines that appear get a legend
    entry; ``collapse`` draws identical cores once (see :func:`chart_rows`).
    """
    plt = pyplot()
    from matplotlib.patches import Patch  # noqa: PLC0415
    from matplotlib.ticker import FuncFormatter  # noqa: PLC0415

    rows = chart_rows(trace, collapse)
    finishes: dict[int, float] = {}
    for s in trace.slices:
        if s.core is not None:
            finishes[s.core] = max(finishes.get(s.core, 0.0), s.end)
    latest = max(finishes.values(), default=0.0)
    last = [core for core, finish in finishes.items() if latest - finish < 1.0]
    critical = last[0] if len(last) == 1 else None  # no single critical core when tied
    height = max(1, len(rows))
    fig, (gantt, ddr) = plt.subplots(
        2, 1, sharex=True, figsize=(12, 1.6 + 0.28 * height + 2.2),
        gridspec_kw={"height_ratios": [max(2.0, 0.28 * height), 2.0], "hspace": 0.08})
    total = trace.total_cycles
    dense_rows = 0
    for index, row in enumerate(rows):
        color = ENGINE_COLORS.get(row.engine, OTHER_COLOR)
        if row.calls:
            _draw_calls(gantt, index, row.calls, total)
        dense_rows += _draw_bars(gantt, index, row.bars, color, total)
    gantt.set_yticks(range(len(rows)))
    gantt.set_yticklabels([_label(row) for row in rows], fontsize=8)
    for tick, row in zip(gantt.get_yticklabels(), rows, strict=True):
        if critical is not None and critical in row.cores:
            tick.set_fontweight("bold")
    gantt.set_ylim(len(rows) - 0.5, -0.5)
    gantt.grid(True, axis="x", alpha=0.3)
    handles = [Patch(color=color, label=label) for label, color in legend_entries(rows)]
    if dense_rows:
        handles.append(Patch(facecolor="white", edgecolor="0.3",
                             label="framed rows: height =\nbusy share per pixel"))
    if handles:
        gantt.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.005, 1.0),
                     fontsize=8)
    else:
        gantt.text(0.5, 0.5, "no slices in this trace", transform=gantt.transAxes,
                   ha="center")
    clock = float(trace.metadata.get("clock_mhz") or 1.0)
    top = gantt.secondary_xaxis("top", functions=(lambda c: c / clock, lambda us: us * clock))
    top.set_xlabel("time (µs)")
    extra = f", bound: {bound}" if bound else ""
    cycles = math.ceil(total - 1e-9)
    gantt.set_title(f"{trace.label()} — {cycles:,} cycles ({cycles / clock:,.2f} µs){extra}"
                    + (f"; critical core {critical} in bold" if critical is not None else
                       f"; all {len(last)} cores finish together"
                       if len(last) == len(finishes) > 1 else
                       f"; cores {core_list(sorted(last))} finish last, together"
                       if len(last) > 1 else ""),
                    fontsize=10)

    if trace.ddr:
        xs = [c for c, _ in trace.ddr] + [max(total, trace.ddr[-1][0])]
        ys = [g for _, g in trace.ddr] + [trace.ddr[-1][1]]
        ddr.step(xs, ys, where="post", color="tab:blue", lw=1.2, label="DDR bandwidth in use")
        ddr.fill_between(xs, ys, step="post", alpha=0.25, color="tab:blue")
    else:
        ddr.text(0.5, 0.5, "no DDR traffic in this call", transform=ddr.transAxes, ha="center")
    if ddr_peak_gbps:
        ddr.axhline(ddr_peak_gbps, color="tab:red", ls="--", lw=1.2,
                    label=f"DDR peak {ddr_peak_gbps:g} GB/s")
    if ddr_achievable_gbps:
        ddr.axhline(ddr_achievable_gbps, color="tab:orange", ls=":", lw=1.6,
                    label=f"achievable {ddr_achievable_gbps:.3g} GB/s")
    ddr.set_ylim(0, max([ddr_peak_gbps or 0] + [g for _, g in trace.ddr] + [1.0]) * 1.15)
    ddr.set_xlim(0, total or 1)
    ddr.set_ylabel("DDR GB/s")
    ddr.set_xlabel("core cycles")
    ddr.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:,.0f}"))
    ddr.grid(True, alpha=0.3)
    if ddr.get_legend_handles_labels()[0]:
        ddr.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=8)
    try:
        return save_figure(fig, path)
    finally:
        plt.close(fig)


#: Pixel columns of the chart's time axis (12 inches at the image's 110 dots per inch,
#: less the labels): busy density is computed at this resolution.
PIXELS = 1100
#: Bars narrower than this many pixels (the median of a row) make the row dense, when it
#: has more than DENSE_BARS of them (a few thin bars, a launch, are drawn as bars).
DENSE_PIXELS = 3.0
DENSE_BARS = 50


def merged(bars: list[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
    """The union of (start, cycles) bars as sorted disjoint (starts, ends) arrays."""
    if not bars:
        return np.zeros(0), np.zeros(0)
    data = np.asarray(bars, float)
    order = np.argsort(data[:, 0], kind="stable")
    starts, ends = data[order, 0], data[order, 0] + data[order, 1]
    reach = np.maximum.accumulate(ends)
    new = np.ones(len(starts), bool)
    new[1:] = starts[1:] > reach[:-1]  # a gap before this bar: a new busy stretch
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(starts) - 1)
    return starts[first], reach[last]


def busy_density(bars: list[tuple[float, float]], total: float, bins: int) -> np.ndarray:
    """The share of each of ``bins`` equal stretches of [0, total] that ``bars`` cover."""
    starts, ends = merged(bars)
    if not len(starts) or total <= 0:
        return np.zeros(bins)
    # busy cycles before t, piecewise linear through each stretch's start and end
    lengths = ends - starts
    before = np.concatenate(([0.0], np.cumsum(lengths)[:-1]))
    xs = np.column_stack((starts, ends)).ravel()
    ys = np.column_stack((before, before + lengths)).ravel()
    edges = np.linspace(0.0, total, bins + 1)
    covered = np.interp(edges, xs, ys, left=0.0, right=float(ys[-1]))
    return np.clip(np.diff(covered) / (total / bins), 0.0, 1.0)


def _darker(color: str) -> tuple[float, float, float]:
    from matplotlib.colors import to_rgb  # noqa: PLC0415
    red, green, blue = to_rgb(color)
    return (0.6 * red, 0.6 * green, 0.6 * blue)


def _draw_bars(axes, index: int, bars: list[tuple[float, float]], color: str,
               total: float) -> int:
    """One row's busy time: bars, or busy density where bars would be sub-pixel; returns
    1 for a dense row, 0 otherwise."""
    if not bars:
        return 0
    widths = np.asarray([c for _, c in bars], float)
    pixel = (total or 1.0) / PIXELS
    if len(bars) <= DENSE_BARS or float(np.median(widths)) >= DENSE_PIXELS * pixel:
        axes.broken_barh(bars, (index - 0.38, 0.76), facecolors=color,
                         edgecolors=[_darker(color)], linewidth=0.3)
        return 0
    share = busy_density(bars, total, PIXELS)
    edges = np.linspace(0.0, total, PIXELS + 1)
    base = index + 0.38  # the row's bottom (rows run down the axis)
    # the busy share as the filled height of the row, in full colour: 58% busy throughout
    # is a band 58% high all along, never a row of gaps; the frame marks 100%
    axes.fill_between(edges, base, base - 0.76 * np.append(share, share[-1]), step="post",
                      color=color, linewidth=0, zorder=2)
    axes.broken_barh([(0, total)], (index - 0.38, 0.76), facecolors="none",
                     edgecolors=[_darker(color)], linewidth=0.4, zorder=2)
    return 1


def _draw_calls(axes, index: int, calls: list[tuple[str, float, float]], total: float) -> None:
    """A program stream's calls: a light bar each, labelled with its name, centred in the
    bar when it fits, else from the bar's start on a pale box over what follows."""
    pixel = (total or 1.0) / PIXELS
    for name, start, end in calls:
        axes.broken_barh([(start, end - start)], (index - 0.45, 0.9), facecolors="0.88",
                         edgecolors="0.35", linewidth=0.6, zorder=1)
        fits = (end - start) / pixel >= 6.5 * len(name)
        axes.text(start + (end - start) / 2 if fits else start, index, name, fontsize=7,
                  ha="center" if fits else "left", va="center", zorder=4, clip_on=True,
                  bbox=None if fits else {"boxstyle": "square,pad=0.1", "facecolor": "white",
                                          "alpha": 0.8, "linewidth": 0})


def _thread_rank(thread: str) -> tuple[int, int, str]:
    base, _, sub = thread.partition(".")
    order = tuple(ENGINE_COLORS)
    return (order.index(base) if base in order else len(order),
            int(sub) if sub.isdigit() else 0, thread)
