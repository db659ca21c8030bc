"""The Gantt chart of a trace: cores × engines over time, the DDR bandwidth beneath."""
from __future__ import annotations

import math

from dspsim.plots import pyplot, save_figure


ENGINE_COLORS = {"dma-in": "tab:blue", "vector": "tab:green", "dma-out": "tab:orange",
                 "call": "tab:gray"}


def plot_trace(trace, path: str, ddr_peak_gbps: float | None = None,
               ddr_achievable_gbps: float | None = None, bound: str | None = None) -> str:
    """A Gantt chart of the cores' engines with the DDR bandwidth in use beneath it.

    ``trace`` is a :class:`dspsim.traces.view.Trace`; the DDR lines are drawn when given.
    """
    plt = pyplot()
    from matplotlib.patches import Patch  # noqa: PLC0415
    from matplotlib.ticker import FuncFormatter  # noqa: PLC0415

    tracks = [(None, "call")] + sorted({(s.core, s.thread) for s in trace.slices
                                         if s.core is not None},
                                        key=lambda t: (t[0], _thread_rank(t[1])))
    finishes = {}
    for s in trace.slices:
        if s.core is not None:
            finishes[s.core] = max(finishes.get(s.core, 0.0), s.end)
    latest = max(finishes.values(), default=0.0)
    last = [core for core, finish in finishes.items() if latest - finish < 1.0]
    critical = last[0] if len(last) == 1 else None  # no single critical core when tied
    fig, (gantt, ddr) = plt.subplots(
        2, 1, sharex=True, figsize=(12, 1.6 + 0.28 * len(tracks) + 2.2),
        gridspec_kw={"height_ratios": [max(2.0, 0.28 * len(tracks)), 2.0], "hspace": 0.08})
    for row, (core, thread) in enumerate(tracks):
        bars = [(s.start, s.cycles) for s in trace.slices if s.core == core and s.thread == thread]
        color = ENGINE_COLORS.get(thread.partition(".")[0], "tab:purple")
        gantt.broken_barh(bars, (row - 0.38, 0.76), facecolors=color, edgecolors="white",
                          linewidth=0.4)
    labels = ["call (launch, barrier)" if core is None else f"core {core} · {thread}"
              for core, thread in tracks]
    gantt.set_yticks(range(len(tracks)))
    gantt.set_yticklabels(labels, fontsize=8)
    for tick, (core, _) in zip(gantt.get_yticklabels(), tracks):
        if core is not None and core == critical:
            tick.set_fontweight("bold")
    gantt.set_ylim(len(tracks) - 0.5, -0.5)
    gantt.grid(True, axis="x", alpha=0.3)
    gantt.legend(handles=[Patch(color=c, label=e) for e, c in ENGINE_COLORS.items()],
                 loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=8)
    clock = float(trace.metadata.get("clock_mhz") or 1.0)
    top = gantt.secondary_xaxis("top", functions=(lambda c: c / clock, lambda us: us * clock))
    top.set_xlabel("time (µs)")
    total = trace.total_cycles
    extra = f", bound: {bound}" if bound else ""
    cycles = math.ceil(total - 1e-9)
    gantt.set_title(f"{trace.label()} — {cycles:,} cycles ({cycles / clock:,.2f} µs){extra}"
                    + (f"; critical core {critical} in bold" if critical is not None else
                       f"; all {len(last)} cores finish together" if len(last) > 1 else ""),
                    fontsize=10)

    if trace.ddr:
        xs = [c for c, _ in trace.ddr] + [total]
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
    path = save_figure(fig, path)
    plt.close(fig)
    return path


def _thread_rank(thread: str) -> tuple[int, int]:
    base, _, sub = thread.partition(".")
    order = tuple(ENGINE_COLORS)
    return (order.index(base) if base in order else len(order), int(sub or 0))
