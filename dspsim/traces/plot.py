"""The Gantt chart of a trace: cores × engines over time, the DDR bandwidth beneath."""
from __future__ import annotations

import math
from dataclasses import dataclass

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

    @property
    def engine(self) -> str:
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
        for (name, start, cycles), (name_b, start_b, cycles_b) in zip(slices, other):
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
    call = [Row([], thread, [(a, c) for _, a, c in sorted(bars, key=lambda b: b[1])])
            for (core, thread), bars in tracks.items() if core is None]
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
    for index, row in enumerate(rows):
        color = ENGINE_COLORS.get(row.engine, OTHER_COLOR)
        gantt.broken_barh(row.bars, (index - 0.38, 0.76), facecolors=color,
                          edgecolors="white", linewidth=0.4)
    gantt.set_yticks(range(len(rows)))
    gantt.set_yticklabels([_label(row) for row in rows], fontsize=8)
    for tick, row in zip(gantt.get_yticklabels(), rows):
        if critical is not None and critical in row.cores:
            tick.set_fontweight("bold")
    gantt.set_ylim(len(rows) - 0.5, -0.5)
    gantt.grid(True, axis="x", alpha=0.3)
    handles = [Patch(color=color, label=label) for label, color in legend_entries(rows)]
    if handles:
        gantt.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.005, 1.0),
                     fontsize=8)
    else:
        gantt.text(0.5, 0.5, "no slices in this trace", transform=gantt.transAxes,
                   ha="center")
    clock = float(trace.metadata.get("clock_mhz") or 1.0)
    top = gantt.secondary_xaxis("top", functions=(lambda c: c / clock, lambda us: us * clock))
    top.set_xlabel("time (µs)")
    total = trace.total_cycles
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


def _thread_rank(thread: str) -> tuple[int, int, str]:
    base, _, sub = thread.partition(".")
    order = tuple(ENGINE_COLORS)
    return (order.index(base) if base in order else len(order),
            int(sub) if sub.isdigit() else 0, thread)
