"""Measurements made by the simulator itself, for trying and testing calibration.

:func:`synthetic_measurements` times calls on a chip changed on purpose (overrides by key
path) and returns them as measured rows, optionally with multiplicative noise; a fit of
the unchanged chip to them should find the changes again. :func:`write_measurements`
writes rows as a measurement CSV that ``dspsim calibrate`` reads.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

import numpy as np

from dspsim.atomic import write_atomically
from dspsim.calibration.measurements import PARAMETER_NAMES, Measurement
from dspsim.calibration.model import CallTimer, reported_cycles
from dspsim.sim.chip.load import (
    config_from_dict,
    parse_chip_yaml,
    read_chip_text,
    resolve_chip_path,
)
from dspsim.sim.chip.overrides import apply_overrides
from dspsim.tables import csv_text

COLUMNS = ("operator", "length", "core_mask", "region", "cycles")


def synthetic_measurements(chip: str | os.PathLike, calls: Iterable[Measurement],
                           overrides: Mapping[str, float] | None = None, *,
                           noise: float = 0.0, seed: int = 0) -> list[Measurement]:
    """``calls`` with the cycles the simulator predicts on ``chip`` changed by
    ``overrides``, each multiplied by ``exp(noise * N(0, 1))`` when ``noise`` > 0 (the
    cycles of the given calls are ignored)."""
    path = resolve_chip_path(chip)
    raw = parse_chip_yaml(read_chip_text(path), path)
    config = config_from_dict(apply_overrides(raw, dict(overrides or {}), path), path)
    calls = list(calls)
    cycles, _ = CallTimer(calls, "<synthetic>").time(config)
    factors = np.exp(noise * np.random.default_rng(seed).standard_normal(len(calls)))
    return [replace(call, cycles=float(reported_cycles(c) if noise <= 0 else round(c * f, 1)))
            for call, c, f in zip(calls, cycles, factors, strict=True)]


def calls(operators: Sequence[str], lengths: Sequence[int],
          core_masks: Sequence[int | None]) -> list[Measurement]:
    """Every combination as a call to time (cycles still unknown: 1)."""
    return [Measurement(0, op, n, 1.0, None if op.endswith("_p") else mask,
                        "l2" if op.endswith("_p") else "ddr")
            for op in operators for n in lengths
            for mask in (core_masks if not op.endswith("_p") else [None])]


def measurements_csv(rows: Iterable[Measurement], header: str = "") -> str:
    """Rows as measurement CSV text; ``header`` lines go first as ``#`` comments."""
    rows = list(rows)
    params = [p for p in PARAMETER_NAMES if any(dict(r.params).get(p) is not None for r in rows)]
    table = []
    for r in rows:
        cells = dict(zip(COLUMNS, (r.operator, r.length,
                                   None if r.core_mask is None else f"{r.core_mask:#x}",
                                   r.region,
                                   int(r.cycles) if float(r.cycles).is_integer() else r.cycles),
                         strict=True))
        table.append({**cells, **{p: dict(r.params).get(p) for p in params}})
    return csv_text(table, COLUMNS + tuple(params), comments=header)


def write_measurements(path: str | os.PathLike, rows: Iterable[Measurement],
                       header: str = "") -> str:
    """Write rows as a measurement CSV (atomically); returns the path."""
    return write_atomically(measurements_csv(rows, header).encode("utf-8"), path,
                            "measurements file")
