"""How an operator is described: C arguments, math, per-vector instruction mix.

An operator is pure description. ``compute`` runs its math with numpy in the call's dtype
(every operation rounds to that dtype, as the hardware does); ``reference`` is the same
formula in float64 for checking; ``mix`` counts the vector instructions of one loop
iteration, from which the chip's unit table derives the cost.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Mapping

import ml_dtypes
import numpy as np

from dspsim.kernels.check import Tolerance, tolerance_for
from dspsim.kernels.declaration import check_declaration
from dspsim.kernels.dtypes import DType
from dspsim.kernels.numerics import smallest_subnormal
from dspsim.sim.errors import ArgumentError


@dataclass(frozen=True)
class Param:
    """A scalar parameter of an operator (alpha, lambd, beta, ...)."""

    name: str
    default: float | None = None  # None: the caller must pass it
    minimum: float | None = None  # inclusive lower bound
    maximum: float | None = None  # inclusive upper bound
    doc: str = ""
    c_type: str = "float"  # "element" where the C signature uses the call's element type

    #: "scale" where the kernel holds the parameter in a vector register of the element
    #: type and multiplies by it (it must then be a normal number of that type);
    #: "threshold" where the kernel only compares against it (any finite value is exact).
    role: str = "scale"

    def validate(self, op_name: str, value, dtype: DType | None = None) -> float:
        """The parameter as a float, or an ArgumentError saying what is wrong and the range.

        With ``dtype``, a scaling parameter must also survive rounding to it: one that
        overflows, or that is subnormal there (fp16's 1e-6 keeps 6 of its 11 bits), would
        silently compute something else.
        """
        if value is None:
            if self.default is None:
                raise ArgumentError(f"{op_name}: parameter {self.name} is required")
            value = self.default
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value.item()
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
            raise ArgumentError(f"{op_name}: {self.name}={value!r} must be a number")
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if not math.isfinite(number):
            shown = (f"an integer of {len(str(abs(int(value))))} digits"
                     if isinstance(value, (int, np.integer)) else f"{value}")
            raise ArgumentError(f"{op_name}: {self.name} = {shown} must be a finite number")
        if self.minimum is not None and number < self.minimum:
            raise ArgumentError(f"{op_name}: {self.name}={number:g} must be >= {self.minimum:g}")
        if self.maximum is not None and number > self.maximum:
            raise ArgumentError(f"{op_name}: {self.name}={number:g} must be <= {self.maximum:g}")
        if dtype is not None and self.role == "scale":
            self._check_representable(op_name, number, dtype)
        return number

    def _check_representable(self, op_name: str, number: float, dtype: DType) -> None:
        info = ml_dtypes.finfo(dtype.numpy)
        largest, smallest_normal = float(info.max), float(info.smallest_normal)
        with np.errstate(over="ignore"):  # overflowing is what is checked
            rounded = float(np.asarray(number).astype(dtype.numpy))
        where = (f"{dtype.name} holds magnitudes from {smallest_normal:.4g} to {largest:.6g} "
                 f"(or 0)")
        if math.isinf(rounded):
            raise ArgumentError(f"{op_name}: {self.name}={number:g} overflows {dtype.name}, the "
                                f"call's element type; {where}")
        if number != 0 and abs(rounded) < smallest_normal:
            state = "flushes to 0" if rounded == 0 else "is subnormal"
            raise ArgumentError(f"{op_name}: {self.name}={number:g} {state} in {dtype.name}, the "
                                f"call's element type, and would lose its precision; {where}")


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
