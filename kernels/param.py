"""A scalar parameter of an operator: its name, default, range and how the kernel uses it."""
from __future__ import annotations

import math
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from dspsim.kernels.dtypes import DType
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
