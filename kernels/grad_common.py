"""What every activation-gradient operator shares: its C arguments and a few helpers.

The operators themselves are in :mod:`dspsim.kernels.piecewise_grads` (no transcendental
function) and :mod:`dspsim.kernels.smooth_grads` (exp, tanh, divide); see
:mod:`dspsim.kernels.activation_grads` for what they compute and how they are checked.
"""
from __future__ import annotations

import numpy as np

from dspsim.kernels.numerics import const

#: C arguments of the family without parameters: (src0, src1, dst, length).
GRAD_ARGS = ("src0", "src1", "dst", "length")
GRAD_INPUTS = ("src0", "src1")


def grad_args(param: str) -> tuple[str, ...]:
    """C arguments of the family with one parameter, which follows ``length``."""
    return GRAD_ARGS + (param,)


def zero_like(like: np.ndarray) -> np.generic:
    """A zero of ``like``'s dtype."""
    return const(like, 0)


def sigmoid64(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float64 (sigmoid(z), 1 - sigmoid(z)), without cancellation."""
    e = np.exp(-np.abs(z))
    larger, smaller = 1.0 / (1.0 + e), e / (1.0 + e)
    return np.where(z > 0, larger, smaller), np.where(z > 0, smaller, larger)
