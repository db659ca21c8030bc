"""How firmly measured rows determine each fitted key, from the Jacobian of the fit."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: A key whose RMS elasticity over the rows is below this moves no row: a 10% change moves
#: the cycles by less than 0.1% on average.
INSENSITIVE = 0.01
#: Smallest singular value of the Jacobian with unit columns below which keys are
#: collinear: their columns are within about 8 degrees of a common direction.
COLLINEAR = 0.1
#: A key whose standard error (log scale) exceeds this is only loosely determined (±28%).
LOOSE = 0.25


@dataclass
class Determination:
    """How firmly the rows determine each key (see :func:`determination`)."""

    sensitivity: np.ndarray  # RMS elasticity of each key over the rows
    largest: np.ndarray  # largest |elasticity| of each key
    std_error: np.ndarray  # standard error of ln(value); nan where undetermined
    reasons: list[str]  # "" for a key the data pin down


def determination(jacobian: np.ndarray, residuals: np.ndarray,
                  names: Sequence[str]) -> Determination:
    """Sensitivities, standard errors and which keys the data do not pin down.

    A key is not pinned down when no row is sensitive to it (RMS elasticity below
    INSENSITIVE), when its column is nearly a combination of other keys' columns (the
    Jacobian with unit columns has a singular value below COLLINEAR; the keys weighing in
    its singular vector are named), or when its standard error exceeds LOOSE.
    """
    rows, count = jacobian.shape
    sensitivity = np.sqrt(np.mean(jacobian ** 2, axis=0))
    largest = np.max(np.abs(jacobian), axis=0)
    reasons = ["" for _ in range(count)]
    live = [j for j in range(count) if sensitivity[j] >= INSENSITIVE]
    for j in range(count):
        if j not in live:
            reasons[j] = (f"no row is sensitive to it (a 10% change moves the cycles by "
                          f"{sensitivity[j] * 10:.2g}% on average)")
    std_error = np.full(count, np.nan)
    if live:
        sub = jacobian[:, live]
        unit = sub / np.linalg.norm(sub, axis=0)
        _, singular, vt = np.linalg.svd(unit, full_matrices=False)
        for value, vector in zip(singular, vt, strict=True):
            if value >= COLLINEAR:
                continue
            group = [live[i] for i in np.flatnonzero(np.abs(vector) > 0.3)]
            for j in group:
                others = [names[i] for i in group if i != j]
                if others and not reasons[j]:
                    reasons[j] = (f"collinear with {', '.join(others)}: the rows determine "
                                  f"only their combination")
        variance = float(residuals @ residuals) / (rows - len(live)) if rows > len(live) \
            else float("nan")
        covariance = variance * np.linalg.pinv(sub.T @ sub)
        std_error[live] = np.sqrt(np.maximum(np.diag(covariance), 0.0))
        for j in live:
            if not reasons[j] and std_error[j] > LOOSE:
                # beyond e^700 the spread overflows a float: say so rather than fail
                spread = (f"±{math.expm1(std_error[j]):.0%}" if std_error[j] < 700
                          else "by a factor beyond 1e300")
                reasons[j] = (f"loosely determined: one standard error is {spread}, "
                              f"beyond ±{math.expm1(LOOSE):.0%}")
    return Determination(sensitivity, largest, std_error, reasons)
