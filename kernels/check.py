"""Compare a computed result with its float64 reference, in the call dtype's terms.

The rules, per element (any one suffices, after NaN and infinity must coincide):

* **ULPs**: the result is within ``ulps`` representable values of the reference rounded
  to the dtype (the ordinal distance, so that a step across a power of two counts one ULP
  on each side). Default 2, for every dtype.
* **fp32 only**: relative error at most 1e-5, or absolute error at most 1e-6 (near zero).
* **the operator's own bound**: where a formula cancels, or an intermediate underflows,
  or rounds where a later step magnifies it, no dtype-faithful evaluation can stay within
  a few ULPs of the result; such an operator writes down the absolute error it allows per
  element (``Operator.error_bound``) and the reason, next to its formula.

Infinity counts as the neighbour of the largest finite value, so a result that rounds
just past the overflow threshold (or just short of it) is within the ULP rule. A NaN
result where the reference is not NaN fails, except on the elements an operator marks
indeterminate: an infinite gradient times a derivative that is zero within its error
bound, where the dtype-faithful product is inf * 0 = NaN or an infinity of either sign.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

from dspsim.kernels.dtypes import DTYPES, DType

_FP32 = DTYPES["fp32"]
#: The project's fixed fp32 acceptance: (relative, absolute near zero).
FP32_RELATIVE = 1e-5
FP32_ABSOLUTE = 1e-6


@dataclass(frozen=True)
class Tolerance:
    """What a dtype-faithful result may differ from its float64 reference, per element."""

    ulps: float = 2.0  # ordinal distance to the reference rounded to the dtype
    relative: float = 0.0  # |error| <= relative * |reference|
    absolute: float = 0.0  # |error| <= absolute
    bound: np.ndarray | float | None = None  # |error| allowed by the operator's own analysis
    # elements where NaN or an infinity of either sign is accepted (see the module notes)
    indeterminate: np.ndarray | None = None

    def describe(self) -> str:
        parts = [f"{self.ulps:g} ULP"]
        if self.relative:
            parts.append(f"relative {self.relative:g}")
        if self.absolute:
            parts.append(f"absolute {self.absolute:g}")
        if self.bound is not None:
            parts.append("the operator's error bound")
        text = " or ".join(parts)
        if self.indeterminate is not None and np.any(self.indeterminate):
            text += "; NaN or inf accepted for an infinite gradient times a zero derivative"
        return text


def tolerance_for(dtype: DType, ulps: float = 2.0, bound=None, indeterminate=None) -> Tolerance:
    """The project's tolerance for ``dtype``: ``ulps`` everywhere, plus 1e-5/1e-6 for fp32."""
    if dtype.name == "fp32":
        return Tolerance(ulps=ulps, relative=FP32_RELATIVE, absolute=FP32_ABSOLUTE, bound=bound,
                         indeterminate=indeterminate)
    return Tolerance(ulps=ulps, bound=bound, indeterminate=indeterminate)


@dataclass(frozen=True)
class Check:
    """How far a result is from its reference."""

    max_abs_error: float
    max_rel_error: float  # vs the rounded reference, floor the smallest normal; elements
    # accepted only by an absolute rule (fp32 near zero, the operator's bound) left out
    mismatched_nan: int  # elements NaN in one and not the other
    tolerance: float  # the relative error the ULP (and fp32) rule allows, for display
    ok: bool
    max_ulps: float = 0.0  # largest ordinal distance to the rounded reference (finite elements)
    mismatched_inf: int = 0  # elements infinite in one and not the other (or of other sign)
    failures: int = 0  # elements that meet no rule, NaN and infinity mismatches included
    first_failure: int | None = None  # index of the first failing element
    rule: str = ""  # the rules applied, in words
    #: elements each rule accepted, first rule first ("2 ULP": n, ...): which clause passed
    accepted_by: dict[str, int] = field(default_factory=dict)


def ordinal(values: np.ndarray) -> np.ndarray:
    """Each value's position on the dtype's number line (+0 and -0 share position 0)."""
    values = np.ascontiguousarray(values)
    bits = values.dtype.itemsize * 8
    unsigned = values.view({16: np.uint16, 32: np.uint32, 64: np.uint64}[bits]).astype(np.int64)
    sign = 1 << (bits - 1)
    magnitude = unsigned & (sign - 1)
    return np.where(unsigned & sign, -magnitude, magnitude)


def ulp_distance(result: np.ndarray, reference: np.ndarray, dtype: DType) -> np.ndarray:
    """Representable values of ``dtype`` between the result and the rounded reference."""
    got = np.asarray(result).astype(dtype.numpy)
    with np.errstate(over="ignore"):  # beyond the dtype's range: inf, next to its largest
        want = np.asarray(reference, dtype=np.float64).astype(dtype.numpy)
    return np.abs(ordinal(got) - ordinal(want))


def compare(result: np.ndarray, reference: np.ndarray, dtype: DType,
            tolerance: Tolerance | float) -> Check:
    """Check ``result`` against the float64 ``reference`` under ``tolerance``.

    ``tolerance`` is a :class:`Tolerance` (see :meth:`Operator.tolerance`) or a number of
    ULPs, to which the dtype's fixed rules are added. NaNs must coincide and infinities
    must match within the ULP rule, except on the tolerance's indeterminate elements.
    """
    if not isinstance(tolerance, Tolerance):
        tolerance = tolerance_for(dtype, float(tolerance))
    got = np.asarray(result).reshape(-1).astype(dtype.numpy).astype(np.float64)
    exact = np.asarray(reference, dtype=np.float64).reshape(-1)
    with np.errstate(over="ignore"):  # a reference beyond the dtype's range rounds to inf
        want = exact.astype(dtype.numpy).astype(np.float64)
    nan_got, nan_want = np.isnan(got), np.isnan(want)
    indeterminate = np.zeros(got.shape, dtype=bool)
    if tolerance.indeterminate is not None:
        indeterminate = np.broadcast_to(tolerance.indeterminate, got.shape) & ~np.isfinite(got)
    nan_mismatch = (nan_got != nan_want) & ~indeterminate
    inf_involved = ~(nan_got | nan_want) & (np.isinf(got) | np.isinf(want))
    # infinity is the ordinal neighbour of the largest finite value
    distance = ulp_distance(got, want, dtype)
    inf_mismatch = (inf_involved & (distance > tolerance.ulps)
                    & ~indeterminate)
    finite = ~(nan_got | nan_want | inf_involved)

    ulps = np.where(finite, distance, 0)
    with np.errstate(invalid="ignore", over="ignore"):  # inf and NaN are judged above
        error = np.abs(got - exact)
        by_ulps = ulps <= tolerance.ulps
        by_relative = error <= tolerance.relative * np.abs(exact)
        by_absolute = error <= tolerance.absolute
        by_bound = np.zeros_like(finite)
        if tolerance.bound is not None:
            bound = np.broadcast_to(np.asarray(tolerance.bound, dtype=np.float64), exact.shape)
            by_bound = error <= bound
    accepted = finite & (by_ulps | by_relative | by_absolute | by_bound)
    accepted_by = {}
    remaining = finite.copy()
    for label, passed in ((f"{tolerance.ulps:g} ULP", by_ulps),
                          (f"relative {tolerance.relative:g}", by_relative),
                          (f"absolute {tolerance.absolute:g}", by_absolute),
                          ("the operator's bound", by_bound)):
        count = int(np.count_nonzero(remaining & passed))
        if count:
            accepted_by[label] = count
        remaining &= ~passed
    failing = ~(accepted | indeterminate | (nan_got & nan_want)
                | (inf_involved & ~inf_mismatch))

    tiny = float(ml_dtypes.finfo(dtype.numpy).tiny)
    relative_judged = finite & ~((by_absolute | by_bound) & ~(by_ulps | by_relative))
    # relative to the rounded reference: the ULP rule then allows at most ulps * eps
    rounded_error = np.abs(got[relative_judged] - want[relative_judged])
    rel = rounded_error / np.maximum(np.abs(want[relative_judged]), tiny)
    shown = max(tolerance.relative, tolerance.ulps * dtype.ulp_at_one)
    failures = int(np.count_nonzero(failing))
    return Check(
        max_abs_error=float(error[finite].max()) if finite.any() else 0.0,
        max_rel_error=float(rel.max()) if rel.size else 0.0,
        mismatched_nan=int(np.count_nonzero(nan_mismatch)),
        tolerance=shown,
        ok=failures == 0,
        max_ulps=float(ulps.max()) if ulps.size else 0.0,
        mismatched_inf=int(np.count_nonzero(inf_mismatch)),
        failures=failures,
        first_failure=int(np.argmax(failing)) if failures else None,
        rule=tolerance.describe(),
        accepted_by=accepted_by,
    )


def merge_checks(parts: list[tuple[int, Check]]) -> Check:
    """One Check for a range checked block by block: ``parts`` are (first element, Check)
    of consecutive blocks, in order."""
    if not parts:
        return compare(np.zeros(0, np.float32), np.zeros(0), _FP32, 2.0)
    checks = [c for _, c in parts]
    first_failure = next((offset + c.first_failure for offset, c in parts
                          if c.first_failure is not None), None)
    failures = sum(c.failures for c in checks)
    return Check(
        max_abs_error=max(c.max_abs_error for c in checks),
        max_rel_error=max(c.max_rel_error for c in checks),
        mismatched_nan=sum(c.mismatched_nan for c in checks),
        tolerance=max(c.tolerance for c in checks),
        ok=failures == 0,
        max_ulps=max(c.max_ulps for c in checks),
        mismatched_inf=sum(c.mismatched_inf for c in checks),
        failures=failures,
        first_failure=first_failure,
        rule=max((c.rule for c in checks), key=len),  # the one naming every rule applied
        accepted_by=_summed([c.accepted_by for c in checks]),
    )


def _summed(counts: list[dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for part in counts:
        for label, count in part.items():
            total[label] = total.get(label, 0) + count
    return total
