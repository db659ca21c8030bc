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

import numpy as np

from dspsim.sim.errors import ArgumentError


@dataclass(frozen=True)
class Param:
    """A scalar parameter of an operator (alpha, lambd, beta, ...)."""

    name: str
    default: float | None = None  # None: the caller must pass it
    minimum: float | None = None  # inclusive lower bound
    doc: str = ""
    c_type: str = "float"  # "element" where the C signature uses the call's element type

    def validate(self, op_name: str, value) -> float:
        if value is None:
            if self.default is None:
                raise ArgumentError(f"{op_name}: parameter {self.name} is required")
            return self.default
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
            raise ArgumentError(f"{op_name}: {self.name}={value!r} must be a number")
        value = float(value)
        if not math.isfinite(value):
            raise ArgumentError(f"{op_name}: {self.name}={value} must be finite")
        if self.minimum is not None and value < self.minimum:
            raise ArgumentError(f"{op_name}: {self.name}={value} must be >= {self.minimum}")
        return value


Compute = Callable[..., np.ndarray]


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
    # relative tolerance in ULPs of the call's dtype for checks against the reference
    tolerance_ulps: float = 2.0
    notes: str = field(default="")

    def __post_init__(self) -> None:
        expected = set(self.inputs) | {self.output, "length"} | {p.name for p in self.params}
        if set(self.args) != expected:
            raise ValueError(f"{self.stem}: args {self.args} do not match operands and params")

    def random_inputs(self, rng: np.random.Generator, length: int) -> dict[str, np.ndarray]:
        """Reproducible float64 inputs that exercise the operator's interesting range."""
        if self.sample is not None:
            return self.sample(rng, length)
        return _standard_inputs(rng, length, self.inputs)
