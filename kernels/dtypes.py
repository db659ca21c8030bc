"""Data types of the operator library: C-name prefixes, numpy types and check tolerances.

Which dtypes a chip supports is the chip's config (``dtypes``); this table only says how
each one is named and computed.
"""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np


@dataclass(frozen=True)
class DType:
    """One data type the operator library can be compiled for."""

    name: str  # as the chip config lists it
    prefix: str  # C-name prefix: fp_relu_grad_s
    numpy: np.dtype
    c_type: str
    ulp_at_one: float  # spacing of representable values just above 1.0

    @property
    def itemsize(self) -> int:
        return self.numpy.itemsize


DTYPES = {
    "fp32": DType("fp32", "fp", np.dtype(np.float32), "float", float(np.finfo(np.float32).eps)),
    "fp16": DType("fp16", "hp", np.dtype(np.float16), "half", float(np.finfo(np.float16).eps)),
    "bf16": DType("bf16", "bf", np.dtype(ml_dtypes.bfloat16), "bfloat16",
                  float(ml_dtypes.finfo(ml_dtypes.bfloat16).eps)),
}
BY_PREFIX = {d.prefix: d for d in DTYPES.values()}
