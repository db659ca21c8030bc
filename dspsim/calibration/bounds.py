"""The range each fitted key may take: given (``--bounds KEY=LO:HI``) or by default a tenth
to ten times its value, narrowed to what the chip accepts; on the log scale of the fit."""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from dspsim.calibration.model import ChipModel
from dspsim.sim.errors import ArgumentError, DspSimError

#: Default search range of a key: its value in the chip file divided or multiplied by this.
DEFAULT_RANGE = 10.0


def parse_bounds(texts: Sequence[str]) -> dict[str, tuple[float, float]]:
    """``KEY=LO:HI`` texts (``--bounds``) as ``{key: (lo, hi)}``."""
    bounds: dict[str, tuple[float, float]] = {}
    for text in texts:
        key, sep, rest = text.partition("=")
        low, colon, high = rest.partition(":")
        try:
            if not sep or not colon:
                raise ValueError
            pair = (float(low), float(high))
        except ValueError:
            raise ArgumentError(f"--bounds {text!r}: expected KEY=LO:HI, for example "
                                f"dma.setup_cycles=50:800") from None
        key = key.strip()
        if key in bounds:
            raise ArgumentError(f"--bounds: key {key!r} given twice")
        bounds[key] = pair
    return bounds


def log_bounds(model: ChipModel, given: Mapping[str, tuple[float, float]]) -> tuple[np.ndarray,
                                                                                 np.ndarray]:
    """Log-space bounds of every key: given ones checked, default ones kept valid."""
    names = [k.key for k in model.keys]
    for key in given:
        if key not in names:
            raise ArgumentError(f"--bounds {key}: not a key being fitted ({', '.join(names)})")
    lower, upper = [], []
    for index, fit_key in enumerate(model.keys):

        def valid(value: float, at: int = index) -> str | None:
            values = model.originals.copy()
            values[at] = value
            try:
                model.config_for(values)
            except DspSimError as exc:
                return str(exc)
            return None

        if fit_key.key in given:
            low, high = given[fit_key.key]
            if not (0 < low < high) or not math.isfinite(high):
                raise ArgumentError(f"--bounds {fit_key.key}={low:g}:{high:g}: need "
                                    f"0 < LO < HI (the fit works on a log scale)")
            for value in (low, high):
                problem = valid(value)
                if problem:
                    raise ArgumentError(f"--bounds {fit_key.key}: the chip cannot have "
                                        f"{value:g} there ({problem}); narrow the bounds")
        else:
            low, high = fit_key.original / DEFAULT_RANGE, fit_key.original * DEFAULT_RANGE
            if fit_key.whole:
                low = max(low, 1.0)
            low, high = (_valid_end(fit_key.original, end, valid) for end in (low, high))
        lower.append(math.log(low / fit_key.original))
        upper.append(math.log(high / fit_key.original))
    return np.array(lower), np.array(upper)


def _valid_end(start: float, end: float, valid: Callable[[float], str | None]) -> float:
    """The farthest value from ``start`` towards ``end`` that the chip accepts (bisection
    on a log scale, assuming the valid values around ``start`` form an interval)."""
    if valid(end) is None:
        return end
    inside, outside = 0.0, math.log(end / start)
    for _ in range(30):
        middle = (inside + outside) / 2
        if valid(start * math.exp(middle)) is None:
            inside = middle
        else:
            outside = middle
    return start * math.exp(inside)
