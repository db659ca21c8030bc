"""Activation-gradient operators: dst = f'(src1) * src0 for an activation f.

``src0`` is the incoming gradient ``dy``; ``src1`` is the activation's forward input ``x``
(or its output ``y`` where the formula says so). Each operator's instruction mix sits next
to its math: it is what one vector iteration issues, loads and stores included.
"""
from __future__ import annotations

import numpy as np

from dspsim.kernels.operator import Operator

#: C arguments of the family without parameters: (src0, src1, dst, length).
GRAD_ARGS = ("src0", "src1", "dst", "length")
GRAD_INPUTS = ("src0", "src1")


# relu_grad: dst = src0 where src1 > 0, else 0
def _relu_grad(dy, x):
    return np.where(x > 0, dy, dy.dtype.type(0))


def _relu_grad_ref(dy, x):
    return np.where(x > 0, dy, 0.0)


RELU_GRAD = Operator(
    stem="relu_grad",
    summary="ReLU gradient",
    formula="dst = src0 where src1 > 0, else 0   (src1 = forward input x)",
    args=GRAD_ARGS, inputs=GRAD_INPUTS, output="dst", params=(),
    # load dy, load x; compare x > 0; select dy or 0; store
    mix={"load": 2, "cmp": 1, "select": 1, "store": 1},
    compute=_relu_grad, reference=_relu_grad_ref,
)

OPERATORS = (RELU_GRAD,)
