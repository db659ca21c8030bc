"""The report of one run: headline figures, the per-core table, the numeric check.

Printed through :class:`~dspsim.cli.output.Output`, so it fits an 80-column terminal and
prints plain columns into a pipe; every value from the chip file or the command line is
printed as given (never read as markup).
"""
from __future__ import annotations

from rich.text import Text

from dspsim.cli.output import Output, number_column, text_column
from dspsim.kernels.check import Check
from dspsim.result import SAVED_FILES, RunResult
from dspsim.sim.engine.machine import ENGINES
from dspsim.traces.formats import trace_format
from dspsim.traces.speed import SpeedOfLight
from dspsim.uncertainty import Band
from dspsim.words import count


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def headline(r: RunResult) -> Text:
    """``fp_relu_grad_s on FT78NE (1000 MHz): 4,194,304 × fp32, ...``."""
    mask = "" if r.core_mask is None else f", core_mask {r.core_mask:#x}"
    fidelity = r.metadata.get("fidelity", "fast")
    return Text.assemble(
        (r.operator, "bold"), " on ", (r.chip, "bold"),
        f" ({r.clock_mhz:g} MHz): {r.length:,} × {r.dtype}, {r.storage} storage{mask}, "
        f"{cores_text(r)}",
        *((", ", (fidelity, "bold"), " fidelity") if fidelity != "fast" else ()))


def cores_text(r: RunResult) -> str:
    """The cores that run the call; at length 0, the cores selected, none of which has
    elements (as the per-core table shows)."""
    if r.cores or not r.per_core:
        return f"cores {', '.join(map(str, r.cores)) or '-'}"
    selected = ", ".join(str(c.core) for c in r.per_core)
    return f"cores {selected} (none has elements at length 0)"


def summary_rows(r: RunResult) -> list[tuple[str, str]]:
    """The headline figures as (name, value) pairs."""
    rows = [("cycles", f"{r.cycles:,}"), ("time", f"{r.microseconds:,.3f} µs")]
    if r.storage == "shared":
        rows += [("DDR traffic", f"{r.ddr_bytes:,} bytes"),
                 ("achieved DDR bandwidth", f"{r.achieved_gbps:.3f} GB/s"),
                 ("share of DDR peak", f"{100 * r.share_of_ddr_peak:.1f}% of "
                  f"{r.ddr_peak_gbps:g} GB/s (achievable {r.ddr_achievable_gbps:.3g})")]
    rows += [("roofline bound", f"{r.roofline_cycles:,} cycles "
              f"({_pct(r.roofline_cycles, r.cycles)} of actual)"),
             ("bounded by", r.bound),
             ("tile", f"{count(r.tile_elements, 'element')}, {count(r.tiles, 'tile')} in all, "
              f"{r.lanes} lanes, {r.iteration_cycles:g} cycles/iteration")]
    if r.tiling:
        rows.append(("tiling", f"{r.tiling['policy']}: {r.tiling['tiles_per_core']:,} tiles on "
                     f"the busiest core, {r.tiling['tile_bytes']:,} bytes per operand; "
                     f"{r.tiling['reason']}"))
    return rows


def check_line(check: Check) -> Text:
    verdict = ("ok", "green") if check.ok else ("FAILED", "red")
    first = "" if check.first_failure is None else f", the first at element {check.first_failure:,}"
    passed = ", ".join(f"{count:,} within {label}" + (" only" if k else "")
                       for k, (label, count) in enumerate(check.accepted_by.items()))
    return Text.assemble(
        "numerics vs float64 reference: ", verdict,
        f" — max abs error {check.max_abs_error:.3g}, max rel error "
        f"{check.max_rel_error:.3g}, max {check.max_ulps:g} ULP; rule: {check.rule}; "
        + (f"passed: {passed}; " if passed else "")
        + f"{check.failures:,} element{'s' * (check.failures != 1)} outside it{first}")


def _share(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def render_speed_of_light(sol: SpeedOfLight, out: Output) -> None:
    """The speed-of-light table (every resource's busy share and share of its peak), the
    bound and the advice: what ``run``, ``program`` and ``trace summary`` open with."""
    out.table([text_column("resource", key=True), number_column("busy"),
               number_column("of peak"), text_column("detail")],
              [[r.resource, _share(r.busy_share), _share(r.of_peak), r.detail]
               for r in sol.rows],
              title="speed of light: each resource's busy share of the call and share of "
                    "its peak")
    out.line("bound: ", (sol.bound, "bold"), " — ", sol.advice)


def render_band(band: Band, out: Output, shown: int = 8) -> None:
    """The estimate's band: the cycles as a range, the keys that move them most, the
    combined extremes and the model's own error."""
    def pct(value: float) -> str:
        return f"{100 * (value / band.cycles - 1):+.1f}%" if band.cycles else "-"

    out.line("cycles: ", (f"{band.cycles:,.0f}", "bold"), f", band {band.band_low:,.0f} .. "
             f"{band.band_high:,.0f} ({pct(band.band_low)} .. {pct(band.band_high)}): the "
             f"assumed values' ranges give {band.low_cycles:,.0f} .. {band.high_cycles:,.0f}, "
             f"the model's own error ±{100 * band.model_error:.2g}% ({band.model_error_source})")
    if band.combined_low_cycles is not None:
        out.line(f"combined extremes (every value at the end that lowers, or raises, the "
                 f"cycles): {band.combined_low_cycles:,.0f} .. {band.combined_high_cycles:,.0f}")
    moving = band.dominant(shown)
    total = sum(k.swing for k in band.keys) or 1.0
    rows = [[k.key, f"{k.low:g}..{k.high:g}", f"{k.low_cycles:,.0f}", f"{k.high_cycles:,.0f}",
             f"{100 * k.swing / total:.0f}%", k.reason] for k in moving]
    if rows:
        out.table([text_column("key", key=True), number_column("range"),
                   number_column("cycles at low"), number_column("at high"),
                   number_column("share"), text_column("why this range")], rows,
                  title="one at a time: the assumed values that move this estimate most")
    still = [k.key for k in band.keys if k.swing == 0 and k.problem is None]
    failed = [k for k in band.keys if k.problem is not None]
    if still:
        out.line(f"{len(still)} other assumed value{'s' * (len(still) != 1)} with a range "
                 f"do not move this estimate", style="dim")
    for k in failed:
        out.line(("warning:", "yellow"), f" {k.key}: an end of its range cannot run this: "
                 f"{k.problem}")


def run_csv_row(result: RunResult, sol: SpeedOfLight) -> dict:
    """``run --csv``: the headline figures, then each resource's busy share and share of
    its peak, then the bound and the advice; the columns depend only on the chip."""
    row = {k: float(f"{v:.6g}") if isinstance(v, float) else v
           for k, v in result.to_row().items() if k != "bound"}
    for region in ("ddr", "shared_sram"):
        row[f"{region} read bytes"] = result.bytes_read.get(region, 0)
        row[f"{region} write bytes"] = result.bytes_written.get(region, 0)
    return {**row, **sol.csv_columns()}


def render(result: RunResult, out: Output, check: Check | None = None,
           trace_path: str | None = None, saved: str | None = None,
           sol: SpeedOfLight | None = None) -> None:
    """Print the headline, the speed of light, the headline numbers, the per-core table,
    the numeric check and warnings."""
    r = result
    out.line(headline(r))
    for warning in r.warnings:  # first: they say how to read what follows
        out.line(("warning:", "yellow"), " ", warning)
    if sol is not None:
        render_speed_of_light(sol, out)
    out.table([text_column("figure"), text_column("value")],
              [(Text(name, style="dim"), value) for name, value in summary_rows(r)],
              show_header=False, boxed=False)

    columns = [number_column("core", key=True), number_column("elements"),
               number_column("range"), number_column("tiles"),
               *(number_column(f"{engine} busy") for engine in ENGINES),
               number_column("finish")]
    rows = [[str(c.core), f"{c.elements:,}", f"[{c.start:,}, {c.stop:,})", f"{c.tiles:,}",
             *(f"{c.busy_cycles[e]:,.0f} ({_pct(c.busy_cycles[e], r.cycles)})"
               for e in ENGINES),
             f"{c.finish_cycle:,.0f}"] for c in r.per_core]
    out.table(columns, rows, title="per core")
    if check is not None:
        out.line(check_line(check))
    if trace_path:
        viewer = ("chrome://tracing or ui.perfetto.dev" if trace_format(trace_path) == "json"
                  else "ui.perfetto.dev")
        out.line(f"trace written to {trace_path} (open it in {viewer}; 1 ns on its axis = "
                 f"1 cycle)")
    if saved:
        out.line(f"run saved in {saved} ({', '.join(SAVED_FILES.values())})")
