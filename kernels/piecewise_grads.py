"""Activation gradients of piecewise activations: relu, relu6, leaky relu, hard sigmoid,
hard swish and the shrinks (compares, selects and a few multiplies; see
:mod:`dspsim.kernels.activation_grads`)."""
from __future__ import annotations

import numpy as np

from dspsim.kernels.grad_common import GRAD_ARGS, GRAD_INPUTS, grad_args, zero_like
from dspsim.kernels.numerics import const, threshold_below
from dspsim.kernels.operator import Operator, Param


# --------------------------------------------------------------------------- relu_grad
# dst = src0 where src1 > 0, else 0
def _relu_grad(dy, x):
    return np.where(x > 0, dy, zero_like(dy))


def _relu_grad_ref(dy, x):
    return np.where(x > 0, dy, 0.0)


RELU_GRAD = Operator(
    stem="relu_grad",
    summary="ReLU gradient",
    formula="dst = src0 where src1 > 0, else 0   (src1 = forward input x)",
    args=GRAD_ARGS, inputs=GRAD_INPUTS, output="dst", params=(),
    # load dy, load x; compare x > 0; select dy or 0; store
    mix={"load": 2, "cmp": 1, "select": 1, "store": 1},
    mix_note="one compare and one select: the cheapest gradient",
    compute=_relu_grad, reference=_relu_grad_ref,
)


# --------------------------------------------------------------------------- relu6_grad
# dst = src0 where 0 < src1 < 6, else 0
def _relu6_grad(dy, x):
    below_six = np.where(x < const(x, 6), dy, zero_like(dy))
    return np.where(x > 0, below_six, zero_like(dy))


def _relu6_grad_ref(dy, x):
    return np.where((x > 0) & (x < 6), dy, 0.0)


RELU6_GRAD = Operator(
    stem="relu6_grad",
    summary="ReLU6 gradient",
    formula="dst = src0 where 0 < src1 < 6, else 0   (src1 = x)",
    args=GRAD_ARGS, inputs=GRAD_INPUTS, output="dst", params=(),
    # two compares (x > 0, x < 6), two selects (each bound zeroes what it excludes)
    mix={"load": 2, "cmp": 2, "select": 2, "store": 1},
    mix_note="two bounds: two compares and two selects",
    compute=_relu6_grad, reference=_relu6_grad_ref,
)


# --------------------------------------------------------------------------- l_relu_grad
# dst = src0 where src1 > 0, else alpha * src0
def _l_relu_grad(dy, x, alpha):
    return np.where(x > 0, dy, const(dy, alpha) * dy)


def _l_relu_grad_ref(dy, x, alpha):
    return np.where(x > 0, dy, alpha * dy)


L_RELU_GRAD = Operator(
    stem="l_relu_grad",
    summary="Leaky ReLU gradient",
    formula="dst = src0 where src1 > 0, else alpha * src0   (src1 = x)",
    args=grad_args("alpha"), inputs=GRAD_INPUTS, output="dst",
    params=(Param("alpha", default=0.01, doc="slope for x <= 0 (C type float)"),),
    # alpha * dy on every lane (mul), compare x > 0, select
    mix={"load": 2, "mul": 1, "cmp": 1, "select": 1, "store": 1},
    mix_note="relu_grad plus one multiply for the negative side",
    compute=_l_relu_grad, reference=_l_relu_grad_ref,
)


# --------------------------------------------------------------------------- h_sigmoid_grad
# dst = src0 / 6 where -3 < src1 < 3, else 0
def _h_sigmoid_grad(dy, x):
    sixth = dy * const(dy, 1 / 6)  # a multiply by the rounded constant 1/6: within 1 ULP
    inside = np.where(x < const(x, 3), sixth, zero_like(dy))
    return np.where(x > const(x, -3), inside, zero_like(dy))


def _h_sigmoid_grad_ref(dy, x):
    return np.where((x > -3) & (x < 3), dy / 6, 0.0)


H_SIGMOID_GRAD = Operator(
    stem="h_sigmoid_grad",
    summary="Hard sigmoid gradient",
    formula="dst = src0 / 6 where -3 < src1 < 3, else 0   (src1 = x)",
    args=GRAD_ARGS, inputs=GRAD_INPUTS, output="dst", params=(),
    # dy * (1/6) (mul); compares x > -3, x < 3; two selects
    mix={"load": 2, "mul": 1, "cmp": 2, "select": 2, "store": 1},
    mix_note="relu6_grad's two bounds plus one multiply by 1/6",
    compute=_h_sigmoid_grad, reference=_h_sigmoid_grad_ref,
)


# --------------------------------------------------------------------------- h_swish_grad
# dst = 0 where x < -3; src0 * (2x + 3) / 6 where -3 <= x <= 3; src0 where x > 3
def _h_swish_grad(dy, x):
    # (2x + 3)/6 as (x + 1.5) * (1/3): x + 1.5 is exact where it is small (x near -1.5),
    # so the slope crosses zero exactly; then two roundings and the constant's
    slope = (x + const(x, 1.5)) * const(x, 1 / 3)
    middle = dy * slope
    upper = np.where(x > const(x, 3), dy, middle)
    return np.where(x < const(x, -3), zero_like(dy), upper)


def _h_swish_grad_ref(dy, x):
    return np.where(x < -3, 0.0, np.where(x > 3, dy, dy * (2 * x + 3) / 6))


H_SWISH_GRAD = Operator(
    stem="h_swish_grad",
    summary="Hard swish gradient",
    formula="dst = 0 where x < -3; src0 * (2x + 3) / 6 where -3 <= x <= 3; src0 where x > 3",
    args=GRAD_ARGS, inputs=GRAD_INPUTS, output="dst", params=(),
    # x + 1.5 (add), * 1/3 (mul), * dy (mul); compares x > 3, x < -3; two selects
    mix={"load": 2, "add": 1, "mul": 2, "cmp": 2, "select": 2, "store": 1},
    mix_note="a linear ramp (add, two multiplies) between two bounds (two compares, two selects)",
    compute=_h_swish_grad, reference=_h_swish_grad_ref,
)


# --------------------------------------------------------------------------- shrink grads
# dst = src0 where |src1| > lambd, else 0. The float parameter is turned into a threshold
# of the element type rounded downward, so that every element compares as against the
# exact lambd (see numerics.threshold_below).
def _shrink_grad(dy, x, lambd):
    return np.where(np.abs(x) > threshold_below(x, lambd), dy, zero_like(dy))


def _shrink_grad_ref(dy, x, lambd):
    return np.where(np.abs(x) > lambd, dy, 0.0)


def _shrink_operator(stem: str, summary: str) -> Operator:
    return Operator(
        stem=stem,
        summary=summary,
        formula="dst = src0 where |src1| > lambd, else 0   (src1 = x; lambd >= 0)",
        args=grad_args("lambd"), inputs=GRAD_INPUTS, output="dst",
        params=(Param("lambd", default=0.5, minimum=0.0, role="threshold",
                      doc="half-width of the zeroed band (C type float; compared exactly)"),),
        # |x| (abs), compare with lambd, select
        mix={"load": 2, "abs": 1, "cmp": 1, "select": 1, "store": 1},
        mix_note="relu_grad plus one abs",
        compute=_shrink_grad, reference=_shrink_grad_ref,
    )


HARD_SHRINK_GRAD = _shrink_operator("hard_shrink_grad", "Hard shrink gradient")
SOFTSHRINK_GRAD = _shrink_operator("softshrink_grad", "Soft shrink gradient")
