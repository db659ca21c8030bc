"""What-if studies: how each changed chip parameter moves the cycles of each call or
program.

A what-if study runs the chip as given and its variants (``--set KEY=V1,V2``; see
:func:`dspsim.sweep.chips.chip_variants`). Each variant's row records its ``overrides``
and the chip's own values of those keys (``given_values``), so the analysis here needs
nothing but rows, of call sweeps and program studies alike.

What is compared across variants is a *case*: for calls, an operator, dtype and length
(at full use: the run with the most cores, the widest mask, stands for it, so that
``cores=4,8,16`` compares 4, 8 and 16 busy cores); for programs, one program file with
one combination of its parameters.

:func:`whatif_points` pairs each one-parameter change with the chip as given (cycles,
speedup over the chip as given, bound); :func:`elasticities` gives, around the chip as
given, the % change in cycles per % change in each parameter: the central difference
over the nearest swept values below and above the chip's own
``((C(v+) - C(v-)) / C0) / ((v+ - v-) / P0)``, or the one-sided difference where only one
side was swept.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from dspsim.sweep.chips import parse_overrides

Row = dict[str, Any]


@dataclass(frozen=True)
class WhatIfCase:
    """One call or program on a chip, and the parameter changed in it.

    ``operator``, ``dtype`` and ``length`` name the call (None for a program);
    ``program`` names the program file (None for a call); ``parameters`` are the call's
    operator parameters or the program's varied parameters (``""`` if none).
    """

    chip: str
    base_digest: str
    operator: str | None
    dtype: str | None
    length: int | None
    program: str | None
    parameters: str
    key: str

    @property
    def subject(self) -> str:
        """What ran: the operator's C name or the program file's name."""
        return self.operator if self.operator is not None else self.program or ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class WhatIfPoint(WhatIfCase):
    """The case with one parameter changed, against the chip as given."""

    value: float  # the parameter's value in this variant (the chip's own at the reference)
    given: float  # the chip's own value
    cycles: int
    given_cycles: int
    speedup: float  # given_cycles / cycles: > 1 means the change made the call faster
    bound: str  # the bound of this point (for a program, its largest lower bound)
    bound_share: float | None  # that bound's cycles as a share of this point's cycles
    cores: int


@dataclass(frozen=True)
class Elasticity(WhatIfCase):
    """% change in cycles per % change in the case's parameter, around the chip as
    given."""

    given: float
    given_cycles: int
    bound: str  # the bound of the chip as given
    bound_share: float | None  # its cycles as a share of the given cycles
    elasticity: float | None  # None where the chip's own value is 0 (no % change exists)
    low: float | None  # the swept values the difference uses (None: that side not swept)
    high: float | None


def _case(row: Row) -> tuple:
    """What a row measured apart from the chip variant (see the module)."""
    fidelity = row.get("fidelity") or "fast"
    if row.get("study") == "program":
        return (None, None, None, row["program"], row.get("parameters", ""),
                row.get("program_digest", ""), fidelity)
    return (row["operator"], row["dtype"], row["length"], None, row.get("params", ""), "",
            fidelity)


def _group(row: Row) -> tuple:
    return (row["chip"], row.get("base_digest") or row["config_digest"]) + _case(row)


def _bound_share(row: Row) -> float | None:
    """The bound's cycles as a share of the row's: a program's largest lower bound, a
    call's roofline."""
    share = row.get("bound_share", row.get("roofline_share"))
    return float(share) if isinstance(share, (int, float)) else None


def _widest(rows: Iterable[Row]) -> dict[tuple, Row]:
    """Per variant and case, the row with the most cores (of equal counts, the lowest
    mask; a program's case has one row per variant)."""
    chosen: dict[tuple, Row] = {}
    for row in sorted(rows, key=lambda r: (-r.get("cores", 0), r.get("core_mask", 0))):
        chosen.setdefault((_group(row), row["config_digest"]), row)
    return chosen


def _order(point) -> tuple:
    """Sort key: chip, key, then the case, with numbers compared as numbers."""
    return (point.chip, point.base_digest, point.key, point.operator or "",
            point.program or "", point.dtype or "", point.length or 0,
            numeric_order(point.parameters), point.value)


def numeric_order(text: str) -> tuple:
    """``mask=0x10,n=2`` as a key that orders 0x3 before 0x10 and 2 before 10."""
    parts = []
    for part in (text or "").split(","):
        name, _, value = part.partition("=")
        try:
            parts.append((name, 0, float(int(value, 0)), ""))
        except ValueError:
            try:
                parts.append((name, 0, float(value), ""))
            except ValueError:
                parts.append((name, 1, 0.0, value))
    return tuple(parts)


def whatif_points(rows: Iterable[Row]) -> list[WhatIfPoint]:
    """Every one-parameter change with a chip-as-given run to compare with, and the chip
    as given itself for each swept key (speedup 1), sorted by chip, key, case and value."""
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
        operator, dtype, length, program, parameters, _, _ = _case(row)
        for at, measured in ((value, row), (given, reference)):
            cycles = measured["cycles"]
            points[(group, key, at)] = WhatIfPoint(
                row["chip"], group[1], operator, dtype, length, program, parameters, key,
                float(at), float(given), cycles, reference["cycles"],
                reference["cycles"] / cycles if cycles else float("nan"), measured["bound"],
                _bound_share(measured), measured.get("cores", 0))
    return sorted(points.values(), key=_order)


def elasticities(rows: Iterable[Row]) -> list[Elasticity]:
    """The elasticity of cycles to every swept parameter, per chip, operator, dtype and
    length (see the module for the formula)."""
    series: dict[tuple, list[WhatIfPoint]] = defaultdict(list)
    for point in whatif_points(rows):
        series[(point.chip, point.base_digest, point.operator, point.dtype, point.length,
                point.program, point.parameters, point.key)].append(point)
    found = []
    for (chip, digest, operator, dtype, length, program, parameters, key), points \
            in series.items():
        p0, c0 = points[0].given, points[0].given_cycles
        reference = next(p for p in points if p.value == p0)
        below = [p for p in points if p.value < p0]
        above = [p for p in points if p.value > p0]
        low = below[-1] if below else reference
        high = above[0] if above else reference
        value = None
        if p0 != 0 and c0 and high.value != low.value:
            value = ((high.cycles - low.cycles) / c0) / ((high.value - low.value) / p0)
        found.append(Elasticity(chip, digest, operator, dtype, length, program, parameters,
                                key, p0, c0, reference.bound, reference.bound_share, value,
                                low.value if below else None, high.value if above else None))
    return found
