"""Human-readable reports of a RunResult, rendered with rich."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table

from dspsim.result import RunResult
from dspsim.sim.machine import ENGINES


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:5.1f}%" if whole else "  -  "


def render(result: RunResult, console: Console, check=None, trace_path: str | None = None) -> None:
    """Print the headline numbers, the per-core table, the numeric check and warnings."""
    r = result
    mask = "" if r.core_mask is None else f", core_mask {r.core_mask:#x}"
    console.print(f"[bold]{r.operator}[/] on [bold]{r.chip}[/] ({r.clock_mhz:g} MHz): "
                  f"{r.length} × {r.dtype}, {r.storage} storage{mask}, "
                  f"cores {', '.join(map(str, r.cores)) or '-'}"
                  + (f", [bold]{r.metadata['fidelity']}[/] fidelity"
                     if r.metadata.get("fidelity", "fast") != "fast" else ""))
    summary = Table(show_header=False, box=None, pad_edge=False)
    summary.add_column(style="dim")
    summary.add_column(justify="right")
    summary.add_row("cycles", f"{r.cycles:,}")
    summary.add_row("time", f"{r.microseconds:,.3f} µs")
    if r.storage == "shared":
        summary.add_row("DDR traffic", f"{r.ddr_bytes:,} bytes")
        summary.add_row("achieved DDR bandwidth", f"{r.achieved_gbps:.3f} GB/s")
        summary.add_row("share of DDR peak", f"{100 * r.share_of_ddr_peak:.1f}% of "
                        f"{r.ddr_peak_gbps:g} GB/s (achievable {r.ddr_achievable_gbps:.3g})")
    summary.add_row("roofline bound", f"{r.roofline_cycles:,} cycles "
                    f"({_pct(r.roofline_cycles, r.cycles).strip()} of actual)")
    summary.add_row("bounded by", f"[bold]{r.bound}[/]")
    summary.add_row("tile", f"{r.tile_elements:,} elements, {r.tiles} tiles in all, "
                    f"{r.lanes} lanes, {r.iteration_cycles:g} cycles/iteration")
    console.print(summary)

    cores = Table(title="per core", title_justify="left")
    for column in ("core", "elements", "range", "tiles"):
        cores.add_column(column, justify="right")
    for engine in ENGINES:
        cores.add_column(f"{engine} busy", justify="right")
    cores.add_column("finish", justify="right")
    for c in r.per_core:
        cores.add_row(str(c.core), f"{c.elements:,}", f"[{c.start:,}, {c.stop:,})", str(c.tiles),
                      *(f"{c.busy_cycles[e]:,.0f} ({_pct(c.busy_cycles[e], r.cycles).strip()})"
                        for e in ENGINES),
                      f"{c.finish_cycle:,.0f}")
    console.print(cores)
    if check is not None:
        verdict = "[green]ok[/]" if check.ok else "[red]FAILED[/]"
        console.print(f"numerics vs float64 reference: {verdict} — max abs error "
                      f"{check.max_abs_error:.3g}, max rel error {check.max_rel_error:.3g}, "
                      f"max {check.max_ulps:g} ULP; rule: {check.rule}; "
                      f"{check.failures} elements outside it")
    for warning in r.warnings:
        console.print(f"[yellow]warning:[/] {warning}")
    if trace_path:
        console.print(f"trace written to {trace_path} (open it in ui.perfetto.dev; "
                      f"1 ns on its axis = 1 cycle)")
