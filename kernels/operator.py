"""How an operator is described: C arguments, math, per-vector instruction mix.

An operator is pure description. ``compute`` runs its math with numpy in the call's dtype
(every operation rounds to that dtype, as the hardware does); ``reference`` is the same
formula in float64 for checking; ``mix`` counts the vector instructions of one loop
iteration, from which the chip's unit table derives the cost.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from dspsim.kernels.check import Tolerance, tolerance_for
from dspsim.kernels.declaration import check_declaration
from dspsim.kernels.dtypes import DType
from dspsim.kernels.numerics import smallest_subnormal
from dspsim.kernels.param import Param

Compute = Callable[..., np.ndarray]
#: error_bound(eps, subnormal, *inputs, **params) -> |error| allowed per element, where
#: eps is the dtype's ULP at 1.0 and subnormal its smallest subnormal; inputs are float64.
ErrorBound = Callable[..., np.ndarray]


def _standard_inputs(rng: np.random.Generator, length: int, names: tuple[str, ...]):
    return {name: rng.standard_normal(length) * 3.0 for name in names}


@dataclass(frozen=True)
class Operator:
    """One operator of the library, independent of dtype and storage version."""

    stem: str  # relu_grad
    summary: str
    formula: str
    args: tuple[str, ...]  # C arguments in order, without the trailing core_mask
    inputs: tuple[str, ...]  # the input operands, a subset of args
    output: str  # the output operand
    params: tuple[Param, ...]
    mix: Mapping[str, int]  # vector instructions per loop iteration
    compute: Compute  # compute(*inputs, **params) -> array in the inputs' dtype
    reference: Compute  # the same formula on float64 arrays
    sample: Callable[[np.random.Generator, int], dict[str, np.ndarray]] | None = None
    # ULPs of the call's dtype a result may be from the correctly rounded reference
    tolerance_ulps: float = 2.0
    notes: str = field(default="")
    # where a formula cancels or an intermediate underflows: the absolute error allowed per
    # element, with the reason written next to the operator (see kernels/check.py)
    error_bound: ErrorBound | None = None
    mix_note: str = ""  # why the instruction mix is what it is, in one line
    # the gradient input the result is linear in (dst = dy * f(...)): where it is infinite
    # and f is zero within its error bound in the dtype, the faithful result is inf * 0 =
    # NaN or an infinity of either sign (see kernels/check.py)
    linear_in: str | None = None
    # the dtypes it is written for (names of dspsim.kernels.DTYPES); None: every dtype a
    # chip supports
    dtypes: tuple[str, ...] | None = None

    def supports(self, dtype: str) -> bool:
        """Whether the operator is offered in ``dtype`` (on chips that support it)."""
        return self.dtypes is None or dtype in self.dtypes

    def __post_init__(self) -> None:
        check_declaration(self)  # one KernelDeclarationError naming the field
        # stored as tuples whatever sequence was given, so that declarations compare equal
        for name in ("args", "inputs", "params", "dtypes"):
            value = getattr(self, name)
            if isinstance(value, list):
                object.__setattr__(self, name, tuple(value))

    def tolerance(self, dtype: DType, inputs, params: Mapping[str, float]) -> Tolerance:
        """The check's tolerance for a call in ``dtype`` on these inputs (C order)."""
        wide = [np.asarray(a).astype(np.float64).reshape(-1) for a in inputs]
        eps, subnormal = dtype.ulp_at_one, smallest_subnormal(dtype.numpy)
        with np.errstate(all="ignore"):
            bound = self._bound(eps, subnormal, wide, params)
            indeterminate = self._indeterminate(eps, subnormal, wide, params)
        return tolerance_for(dtype, self.tolerance_ulps, bound, indeterminate)

    def _bound(self, eps, subnormal, wide, params):
        if self.error_bound is None:
            return None
        return self.error_bound(eps, subnormal, *wide, **params)

    def _indeterminate(self, eps, subnormal, wide, params):
        """Elements with an infinite gradient whose factor is zero within its error bound."""
        if self.linear_in is None:
            return None
        index = self.inputs.index(self.linear_in)
        unit = list(wide)
        unit[index] = np.ones_like(wide[index])
        factor = np.abs(self.reference(*unit, **params))
        bound = self._bound(eps, subnormal, unit, params)
        allowed = subnormal / 2 if bound is None else np.maximum(bound, subnormal / 2)
        return np.isinf(wide[index]) & (factor <= allowed)

    def random_inputs(self, rng: np.random.Generator, length: int) -> dict[str, np.ndarray]:
        """Reproducible float64 inputs that exercise the operator's interesting range."""
        if self.sample is not None:
            return self.sample(rng, length)
        return _standard_inputs(rng, length, self.inputs)
