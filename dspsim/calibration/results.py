"""What a calibration found: each key's fitted value and how firmly the data determine it,
each row's cycles before and after, and the errors."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dspsim.calibration.measurements import Measurement


@dataclass
class KeyFit:
    """What the fit found for one key and how firmly the data determine it."""

    key: str
    original: float
    whole: bool  # the chip format takes only whole numbers here
    fitted: float  # the value written (the original where the fit left the key alone)
    lower: float
    upper: float
    sensitivity: float  # RMS over the rows of d ln(cycles) / d ln(value), at the fitted values
    largest_elasticity: float  # the most sensitive row's elasticity
    std_error: float | None  # standard error of ln(value): about the relative uncertainty
    pinned: bool
    reason: str  # why the key is not pinned down ("" when it is)
    written: bool  # whether the fitted chip carries a new value

    def to_dict(self) -> dict:
        return {k: _finite(v) for k, v in self.__dict__.items()}


@dataclass
class RowFit:
    """One measured call: the cycles predicted before and after the fit."""

    measurement: Measurement
    before: int
    after: int

    @property
    def error_before(self) -> float:
        return self.before / self.measurement.cycles - 1

    @property
    def error_after(self) -> float:
        return self.after / self.measurement.cycles - 1

    def to_dict(self) -> dict:
        m = self.measurement
        return {"line": m.line, "operator": m.operator, "length": m.length,
                "core_mask": m.core_mask, "region": m.region, "params": dict(m.params),
                "measured": m.cycles, "before": self.before, "after": self.after,
                "error_before": self.error_before, "error_after": self.error_after}


@dataclass
class Calibration:
    """The outcome of :func:`calibrate`."""

    chip_path: str
    chip_name: str
    measured_path: str
    keys: list[KeyFit]
    rows: list[RowFit]
    evaluations: int  # times the whole set of rows was timed
    simulations: int  # calls simulated
    seconds: float  # wall-clock time of the whole calibration
    cpu_seconds: float  # processor time of this process (the same on an idle machine)
    rounds: int  # fits run until the tiles settled
    message: str
    notes: list[str] = field(default_factory=list)
    chip_text: str = field(default="", repr=False)  # the chip file as read

    @property
    def values(self) -> dict[str, float]:
        """The value of every fitted key that the fitted chip file carries."""
        return {k.key: k.fitted for k in self.keys if k.written}

    def _errors(self, when: str) -> np.ndarray:
        return np.abs([getattr(r, f"error_{when}") for r in self.rows])

    @property
    def mean_error_before(self) -> float:
        return float(self._errors("before").mean())

    @property
    def mean_error_after(self) -> float:
        return float(self._errors("after").mean())

    @property
    def max_error_before(self) -> float:
        return float(self._errors("before").max())

    @property
    def rms_error_after(self) -> float:
        """Root mean square of the relative errors after the fit."""
        return float(np.sqrt(np.mean(self._errors("after") ** 2)))

    @property
    def max_error_after(self) -> float:
        return float(self._errors("after").max())

    def to_dict(self) -> dict:
        """Everything, as plain data for JSON."""
        return {
            "chip": self.chip_path, "chip_name": self.chip_name,
            "measured": self.measured_path,
            "keys": [k.to_dict() for k in self.keys],
            "rows": [r.to_dict() for r in self.rows],
            "mean_error_before": self.mean_error_before,
            "mean_error_after": self.mean_error_after,
            "max_error_before": self.max_error_before,
            "max_error_after": self.max_error_after,
            "rms_error_after": self.rms_error_after,
            "evaluations": self.evaluations, "simulations": self.simulations,
            "seconds": round(self.seconds, 3), "cpu_seconds": round(self.cpu_seconds, 3),
            "rounds": self.rounds,
            "message": self.message, "notes": list(self.notes),
        }


def _finite(value):
    return None if isinstance(value, float) and not math.isfinite(value) else value
