"""Forward operators: leaky ReLU (aclnnLeakyRelu / aclnnInplaceLeakyRelu).

``l_relu`` takes ``(src, dst, length, negative_slope)``; ``dst`` equal to ``src`` runs in
place (the launcher allows exactly that overlap and no other).
"""
from __future__ import annotations

import numpy as np

from dspsim.kernels.numerics import const
from dspsim.kernels.operator import Operator, Param


# dst = x where x > 0, else negative_slope * x
def _l_relu(x, negative_slope):
    return np.where(x > 0, x, const(x, negative_slope) * x)


def _l_relu_ref(x, negative_slope):
    return np.where(x > 0, x, negative_slope * x)


L_RELU = Operator(
    stem="l_relu",
    summary="Leaky ReLU forward (in place when dst is src)",
    formula="dst = src where src > 0, else negative_slope * src",
    args=("src", "dst", "length", "negative_slope"), inputs=("src",), output="dst",
    params=(Param("negative_slope", default=0.01,
                  doc="slope for src <= 0; 0.01 when absent (C type float)"),),
    # negative_slope * x (mul), compare x > 0, select; one operand in, one out
    mix={"load": 1, "mul": 1, "cmp": 1, "select": 1, "store": 1},
    mix_note="one input stream: a multiply, a compare and a select",
    compute=_l_relu, reference=_l_relu_ref,
)

OPERATORS = (L_RELU,)
