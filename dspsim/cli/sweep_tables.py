"""The tables ``dspsim sweep`` prints: the rows of a call sweep or of a program study,
and the sensitivity of cycles to each what-if key."""
from __future__ import annotations

from rich.text import Text

from dspsim.cli.output import Output, number_column, text_column
from dspsim.sweep import rows_for_plots
from dspsim.sweep.program_study import shown_value
from dspsim.sweep.whatif import numeric_order


def _verdict(row: dict) -> Text:
    if not row.get("numerics"):
        return Text("timing only")
    return Text("ok") if row.get("numerics_ok") else Text("FAILED", "red")


def _fmt(value, pattern: str) -> str:
    return "-" if value is None else format(value, pattern)


def bound_text(bound: str, share: float | None) -> str:
    """``DDR (75% of cycles)``: which bound, and how much of the actual cycles it explains,
    so that a run at 75% of a resource is not read as bound by it."""
    return bound if share is None else f"{bound} ({share:.0%} of cycles)"


def render_rows(rows: list[dict], out: Output) -> None:
    """The headline columns of a call sweep's rows as a table that fits."""
    whatif = any(r.get("overrides") for r in rows)
    columns = [text_column("chip", key=True)]
    columns += [text_column("overrides", key=True)] if whatif else []
    columns += [text_column("operator", key=True), number_column("length", key=True),
                number_column("mask", key=True), number_column("cores"),
                number_column("cycles"), number_column("µs"), number_column("speedup"),
                number_column("efficiency"), number_column("DDR ceiling"),
                number_column("GB/s"), number_column("% DDR peak"), text_column("bound"),
                text_column("numerics")]
    table = []
    for r in rows_for_plots(rows):
        cells = [r["chip"]] + ([r.get("overrides") or "as given"] if whatif else [])
        cells += [r["operator"], f"{r['length']:,}", r["core_mask_hex"], str(r["cores"]),
                  f"{r['cycles']:,}", f"{r['microseconds']:,.1f}",
                  _fmt(r.get("speedup"), ".2f"), _fmt(r.get("parallel_efficiency"), ".0%"),
                  _fmt(r.get("speedup_ddr_ceiling"), ".2f"), f"{r['achieved_gbps']:.2f}",
                  f"{100 * r['share_of_ddr_peak']:.1f}", r["bound"], _verdict(r)]
        table.append(cells)
    out.table(columns, table, title="sweep")


def render_program_rows(rows: list[dict], parameters: list[str], out: Output,
                        title: str) -> None:
    """A program study's rows: its varied parameters, the what-if changes, cycles, the
    largest lower bound with its share of the actual cycles, and DDR use."""
    whatif = any(r.get("overrides") for r in rows)
    columns = [number_column(name, key=True) for name in parameters]
    columns += [text_column("overrides", key=True)] if whatif else []
    columns += [number_column("cycles"), number_column("µs"),
                text_column("largest lower bound"), number_column("of cycles"),
                number_column("DDR use")]
    table = []
    for r in rows_for_plots(rows):
        cells = [shown_value(name, r.get(f"param.{name}")) for name in parameters]
        cells += [r.get("overrides") or "as given"] if whatif else []
        cells += [f"{r['cycles']:,}", f"{r['microseconds']:,.1f}", r["bound"],
                  _fmt(r.get("bound_share"), ".1%"), f"{r['ddr_utilisation']:.1%}"]
        table.append(cells)
    out.table(columns, table, title=title)
    out.line(Text("largest lower bound: the resource or constraint that alone needs the "
                  "most cycles; 'of cycles' is its share of the run's cycles (100%: the run "
                  "is at that bound)", style="dim"))


def short_keys(keys: list[str]) -> dict[str, str]:
    """Each key path by its shortest unique ending: lane_width_bits for
    vector.lane_width_bits, unless another key ends the same way."""
    names = {}
    for key in keys:
        parts = key.split(".")
        for n in range(1, len(parts) + 1):
            tail = ".".join(parts[-n:])
            if sum(1 for k in keys if k == tail or k.endswith("." + tail)) == 1:
                names[key] = tail
                break
        else:
            names[key] = key
    return names


def render_sensitivity(found, out: Output, order: list[str] | None = None) -> None:
    """Elasticities as a table: one row per chip and case (operator and length, or program
    and parameters), one column per key (in ``order``, the order of the --set options)."""
    keys = list(dict.fromkeys([k for k in order or [] if any(e.key == k for e in found)]
                              + [e.key for e in found]))
    names = short_keys(keys)
    programs = any(e.program is not None for e in found)
    table: dict[tuple, dict[str, object]] = {}
    for e in found:
        case = ((e.program, e.parameters) if e.program is not None
                else (e.operator, e.length or 0))
        line = table.setdefault((e.chip,) + case,
                                {"bound": bound_text(e.bound, e.bound_share)})
        line[e.key] = e.elasticity
    if programs:
        columns = [text_column("chip", key=True), text_column("program", key=True),
                   text_column("parameters", key=True)]
    else:
        columns = [text_column("chip", key=True), text_column("operator", key=True),
                   number_column("length", key=True)]
    columns += [text_column("bound as given")] + [number_column(names[k]) for k in keys]
    rows = []
    def row_order(item) -> tuple:
        chip, subject, detail = item[0]
        return (chip, subject, numeric_order(detail) if programs else detail)

    for (chip, subject, detail), line in sorted(table.items(), key=row_order):
        shown = (detail or "as in the file") if programs else f"{detail:,}"
        rows.append([chip, subject, shown, line["bound"]]
                    + [_fmt(line.get(k), "+.3f") for k in keys])
    what = "each run as the file has it" if programs else "all cores"
    out.table(columns, rows, title="sensitivity: % change in cycles per % change in the "
              f"parameter, around the chip as given ({what})")
