"""What-if studies: how each changed chip parameter moves each operator's cycles.

A what-if sweep runs the chip as given and its variants (``--set KEY=V1,V2``; see
:func:`dspsim.sweep.chips.chip_variants`). Each variant's row records its ``overrides``
and the chip's own values of those keys (``given_values``), so the analysis here needs
nothing but rows.

The chip is compared at full use: for each variant, operator, dtype and length, the run
with the most cores (the widest mask) stands for it, so that ``cores=4,8,16`` compares
4, 8 and 16 busy cores.

:func:`whatif_points` pairs each one-parameter change with the chip as given (cycles,
speedup over the chip as given, bound); :func:`elasticities` gives, around the chip as
given, the % change in cycles per % change in each parameter: the central difference
over the nearest swept values below and above the chip's own
``((C(v+) - C(v-)) / C0) / ((v+ - v-) / P0)``, or the one-sided difference where only one
side was swept.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass
from typing import Any, Iterable

from dspsim.sweep.chips import parse_overrides

Row = dict[str, Any]


@dataclass(frozen=True)
class WhatIfPoint:
    """One operator call on a chip with one parameter changed, against the chip as given."""

    chip: str
    base_digest: str
    operator: str
    dtype: str
    length: int
    key: str
    value: float  # the parameter's value in this variant (the chip's own at the reference)
    given: float  # the chip's own value
    cycles: int
    given_cycles: int
    speedup: float  # given_cycles / cycles: > 1 means the change made the call faster
    bound: str
    cores: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Elasticity:
    """% change in cycles per % change in one parameter, around the chip as given."""

    chip: str
    base_digest: str
    operator: str
    dtype: str
    length: int
    key: str
    given: float
    given_cycles: int
    bound: str  # the bound of the chip as given
    elasticity: float | None  # None where the chip's own value is 0 (no % change exists)
    low: float | None  # the swept values the difference uses (None: that side not swept)
    high: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _group(row: Row) -> tuple:
    return (row["chip"], row.get("base_digest") or row["config_digest"], row["operator"],
            row["dtype"], row["length"], row.get("params", ""), row.get("fidelity") or "fast")


def _widest(rows: Iterable[Row]) -> dict[tuple, Row]:
    """Per variant and call, the row with the most cores (of equal counts, the lowest mask)."""
    chosen: dict[tuple, Row] = {}
    for row in sorted(rows, key=lambda r: (-r["cores"], r["core_mask"])):
        chosen.setdefault((_group(row), row["config_digest"]), row)
    return chosen


def whatif_points(rows: Iterable[Row]) -> list[WhatIfPoint]:
    """Every one-parameter change with a chip-as-given run to compare with, and the chip
    as given itself for each swept key (speedup 1), sorted by chip, key, call and value."""
    widest = _widest(rows)
    given_rows = {group: row for (group, digest), row in widest.items()
                  if digest == (row.get("base_digest") or digest)}
    points: dict[tuple, WhatIfPoint] = {}
    for (group, _), row in widest.items():
        overrides = parse_overrides(row.get("overrides", ""))
        reference = given_rows.get(group)
        if len(overrides) != 1 or reference is None:
            continue  # the chip as given, a grid point of several keys, or no reference
        (key, value), = overrides
        given = dict(parse_overrides(row.get("given_values", ""))).get(key)
        if given is None:
            continue
        for what, at, cycles, bound, cores in (
                ("variant", value, row["cycles"], row["bound"], row["cores"]),
                ("given", given, reference["cycles"], reference["bound"], reference["cores"])):
            points[(group, key, at)] = WhatIfPoint(
                row["chip"], group[1], row["operator"], row["dtype"], row["length"], key,
                float(at), float(given), cycles, reference["cycles"],
                reference["cycles"] / cycles if cycles else float("nan"), bound, cores)
    return sorted(points.values(), key=lambda p: (p.chip, p.base_digest, p.key, p.operator,
                                                  p.dtype, p.length, p.value))


def elasticities(rows: Iterable[Row]) -> list[Elasticity]:
    """The elasticity of cycles to every swept parameter, per chip, operator, dtype and
    length (see the module for the formula)."""
    series: dict[tuple, list[WhatIfPoint]] = defaultdict(list)
    for point in whatif_points(rows):
        series[(point.chip, point.base_digest, point.operator, point.dtype, point.length,
                point.key)].append(point)
    found = []
    for (chip, digest, operator, dtype, length, key), points in series.items():
        p0, c0 = points[0].given, points[0].given_cycles
        reference = next(p for p in points if p.value == p0)
        below = [p for p in points if p.value < p0]
        above = [p for p in points if p.value > p0]
        low = below[-1] if below else reference
        high = above[0] if above else reference
        value = None
        if p0 != 0 and c0 and high.value != low.value:
            value = ((high.cycles - low.cycles) / c0) / ((high.value - low.value) / p0)
        found.append(Elasticity(chip, digest, operator, dtype, length, key, p0, c0,
                                reference.bound, value, low.value if below else None,
                                high.value if above else None))
    return found
