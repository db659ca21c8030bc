"""Dtype-faithful building blocks of the kernels' math.

A kernel's ``compute`` works on numpy arrays of the call's dtype, and numpy already rounds
every ``+ - * /``, ``exp``, ``abs``, ``minimum`` ... to that dtype, as the vector unit
does. The helpers here cover what plain numpy does not say directly: scalars held in
vector registers (rounded to the element type), the fused multiply-add (one rounding),
thresholds that must compare exactly against a float parameter, and the numerically
stable sigmoid several operators share. Each helper names the instructions it stands for,
so that an operator's instruction mix can be checked against its code.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np


def const(like: np.ndarray, value: float) -> np.generic:
    """``value`` broadcast into a vector register of ``like``'s dtype (rounded to nearest)."""
    return like.dtype.type(value)


def threshold_below(like: np.ndarray, value: float) -> np.generic:
    """The largest value of ``like``'s dtype that is <= ``value``.

    For any element x of that dtype, ``x > value`` (exact, in float64) holds exactly when
    ``x > threshold_below(value)``; a kernel that compares against a float parameter this
    way decides every boundary as the float parameter says, whatever the element type.
    """
    rounded = like.dtype.type(value)
    if float(rounded) > value:
        rounded = np.nextafter(rounded, like.dtype.type(-np.inf))
    return rounded


def fma(a, b, c) -> np.ndarray:
    """The fused multiply-add ``a * b + c``, rounded once to the operands' dtype (one ``fma``).

    The product of two elements of at most 24 significant bits is exact in float64, so
    evaluating in float64 and rounding at the end is the single rounding of the hardware's
    fused instruction.
    """
    dtype = next(np.asarray(v).dtype for v in (a, b, c) if isinstance(v, (np.ndarray, np.generic)))
    wide = np.asarray(a, np.float64) * np.asarray(b, np.float64) + np.asarray(c, np.float64)
    return wide.astype(dtype)


def clamp(x: np.ndarray, low: float, high: float) -> np.ndarray:
    """``x`` limited to [low, high] (one ``max`` and one ``min``); NaN stays NaN."""
    return np.minimum(np.maximum(x, const(x, low)), const(x, high))


def sigmoid_pair(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(sigmoid(z), 1 - sigmoid(z))`` without cancellation, in z's dtype.

    With e = exp(-|z|) in (0, 1], the two values are 1/(1 + e) and e/(1 + e), the larger one
    being sigmoid(z) when z > 0. Neither is formed as a difference, so 1 - sigmoid(z) keeps
    its full precision where sigmoid(z) is close to 1, and exp never overflows.
    Instructions: abs, sub (negate), exp, add, div, mul, cmp, select x2.
    """
    e = np.exp(-np.abs(z))
    larger = const(z, 1) / (const(z, 1) + e)
    smaller = e * larger
    positive = z > 0
    return np.where(positive, larger, smaller), np.where(positive, smaller, larger)


def smallest_subnormal(dtype: np.dtype) -> float:
    """The spacing of the dtype's subnormal numbers: the rounding error floor near zero."""
    return float(ml_dtypes.finfo(dtype).smallest_subnormal)
