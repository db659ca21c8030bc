"""Compare a computed result with its float64 reference, in the call dtype's terms."""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from dspsim.kernels.dtypes import DType


@dataclass(frozen=True)
class Check:
    """How far a result is from its reference."""

    max_abs_error: float
    max_rel_error: float  # relative to max(|reference|, the dtype's smallest normal)
    mismatched_nan: int  # elements NaN in one and not the other
    tolerance: float  # allowed relative error
    ok: bool


def compare(result: np.ndarray, reference: np.ndarray, dtype: DType, ulps: float) -> Check:
    """Check ``result`` against ``reference`` within ``ulps`` units of ``dtype``'s precision.

    The reference is rounded to ``dtype`` first, so the bound counts only what the
    dtype-faithful computation adds. Infinities must match exactly; NaNs must coincide.
    """
    got = np.asarray(result).astype(np.float64)
    want = np.asarray(reference, dtype=np.float64).astype(dtype.numpy).astype(np.float64)
    nan_got, nan_want = np.isnan(got), np.isnan(want)
    mismatched = int(np.count_nonzero(nan_got != nan_want))
    both = ~(nan_got | nan_want)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(got[both] == want[both], 0.0, np.abs(got[both] - want[both]))
    diff = np.nan_to_num(diff, nan=np.inf)
    tiny = float(ml_dtypes.finfo(dtype.numpy).tiny)
    scale = np.maximum(np.abs(want[both]), tiny)
    rel = diff / scale if diff.size else diff
    tolerance = ulps * dtype.ulp_at_one
    max_rel = float(rel.max()) if rel.size else 0.0
    return Check(max_abs_error=float(diff.max()) if diff.size else 0.0, max_rel_error=max_rel,
                 mismatched_nan=mismatched, tolerance=tolerance,
                 ok=mismatched == 0 and max_rel <= tolerance)
