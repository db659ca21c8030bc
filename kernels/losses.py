"""Loss-gradient operators: SmoothL1 loss and sigmoid cross-entropy with logits.

Their C signatures differ from the activation-gradient family: ``smoothl1lossgrad`` takes
``(dy, dx1, x1, x2, length, beta)`` with the output second, and
``sigmoidcrossentropywithlogitsgrad`` takes ``(Input0, Input1, output, length)``, logits
first and labels second, as the operator library's reference pages write them.
"""
from __future__ import annotations

import numpy as np

from dspsim.kernels.numerics import const
from dspsim.kernels.operator import Operator, Param


# --------------------------------------------------------------------------- smoothl1lossgrad
# d = x1 - x2:  dx1 = dy where d > beta; -dy where d < -beta; dy * d / beta otherwise.
# beta = 0 is pure L1: dx1 = sign(d) * dy. The kernel compares against beta in the element
# type (beta's C type is the element type). With beta = 0 the middle case only holds
# d = 0 (or NaN), where dy * d is sign(d) * dy, so the same three-way select serves.
def _smoothl1lossgrad(dy, x1, x2, beta):
    d = x1 - x2
    b = const(d, beta)
    # -beta rounds to exactly -b: rounding to nearest is symmetric about zero
    below = np.where(d < const(d, -beta), -dy, _smoothl1_middle(dy, d, b))
    return np.where(d > b, dy, below)


def _smoothl1_middle(dy, d, b):
    """dy * d / beta for |d| <= beta, ordered so that no intermediate overflows.

    The order is chosen once per call, on the scalar beta, so that every intermediate is
    at most |dy| or the result: (dy / beta) * d when beta >= 1, (dy * d) / beta when
    beta < 1. beta = 0 leaves only d = 0 or NaN here, where dy * d = sign(d) * dy.
    """
    if b == 0:
        return dy * d
    if b >= 1:
        return (dy / b) * d
    return (dy * d) / b


def _smoothl1lossgrad_ref(dy, x1, x2, beta):
    d = x1 - x2
    with np.errstate(invalid="ignore", divide="ignore"):
        middle = dy * d / beta if beta > 0 else dy * np.sign(d)
    return np.where(d > beta, dy, np.where(d < -beta, -dy, middle))


def _smoothl1lossgrad_bound(eps, subnormal, dy, x1, x2, beta):
    # The first step of the middle case can be subnormal while the result is not quite:
    # dy / beta (beta >= 1), then multiplied by |d| <= beta, or dy * d (beta < 1), then
    # divided by beta; its absolute rounding error is magnified by beta or 1 / beta.
    reference = _smoothl1lossgrad_ref(dy, x1, x2, beta)
    magnifier = 1 + (0 if beta == 0 else max(beta, 1 / beta))
    return 3 * eps * np.abs(reference) + subnormal * magnifier


SMOOTHL1LOSSGRAD = Operator(
    stem="smoothl1lossgrad",
    summary="SmoothL1 loss gradient with respect to the prediction x1",
    formula="d = x1 - x2: dx1 = dy where d > beta; -dy where d < -beta; dy * d / beta "
            "otherwise (beta = 0: sign(d) * dy)",
    args=("dy", "dx1", "x1", "x2", "length", "beta"),
    inputs=("dy", "x1", "x2"), output="dx1",
    params=(Param("beta", default=1.0, minimum=0.0, c_type="element",
                  doc="L2-to-L1 transition; 0 means pure L1 (C type: the element type)"),),
    # d = x1 - x2 and -dy (2 sub), times d (mul), / beta (div), compares d > beta, d < -beta,
    # two selects; three operands in, one out
    mix={"load": 3, "sub": 2, "mul": 1, "div": 1, "cmp": 2, "select": 2, "store": 1},
    mix_note="three loads per output and a divide; on shared storage the DMA "
             "of three inputs dominates",
    compute=_smoothl1lossgrad, reference=_smoothl1lossgrad_ref,
    error_bound=_smoothl1lossgrad_bound, linear_in="dy",
    # d, dy*d and the division each round, and hp_ rounds beta itself to half (its C type)
    tolerance_ulps=3,
    notes="up to 3 ULP: three roundings in the middle case plus beta rounded to the "
          "element type",
)


# --------------------------------------------------------------- sigmoidcrossentropywithlogitsgrad
# output = sigmoid(x) - label, x = Input0 (logits), label = Input1. Stable split as the
# reference page writes it: 1/(1 + exp(-x)) for x > 0, exp(x)/(1 + exp(x)) for x <= 0,
# both as n/(1 + e) with e = exp(-|x|) <= 1, so exp never overflows.
def _sigmoid_ce_grad(x, label):
    e = np.exp(-np.abs(x))
    numerator = np.where(x > 0, const(x, 1), e)
    return numerator / (const(x, 1) + e) - label


def _sigmoid64(x):
    e = np.exp(-np.abs(x))
    return np.where(x > 0, 1.0, e) / (1.0 + e)


def _sigmoid_ce_grad_ref(x, label):
    return _sigmoid64(x) - label


def _sigmoid_ce_grad_bound(eps, subnormal, x, label):
    # sigmoid(x) - label cancels where the label is close to sigmoid(x): the rounded
    # sigmoid's error (exp, 1 + e and the division: about 1.5 eps relative) stays, so the
    # error is bounded by the operands' magnitudes, not the result's. Subnormal sigmoid
    # values (x below about -9.7 in fp16) carry a few subnormals of absolute error.
    return 2 * eps * (np.abs(_sigmoid64(x)) + np.abs(label)) + 2 * subnormal


def _sample_sigmoid_ce(rng, length):
    return {"Input0": rng.standard_normal(length) * 4.0, "Input1": rng.uniform(0.0, 1.0, length)}


SIGMOIDCROSSENTROPYWITHLOGITSGRAD = Operator(
    stem="sigmoidcrossentropywithlogitsgrad",
    summary="Sigmoid cross-entropy with logits: gradient with respect to the logits",
    formula="output = sigmoid(Input0) - Input1   (Input0 = logits, Input1 = labels; stable "
            "split at 0)",
    args=("Input0", "Input1", "output", "length"),
    inputs=("Input0", "Input1"), output="output", params=(),
    # |x| (abs), negate and the final subtract (2 sub), exp, 1 + e (add), compare, select
    # of the numerator, divide
    mix={"load": 2, "abs": 1, "sub": 2, "exp": 1, "add": 1, "cmp": 1, "select": 1, "div": 1,
         "store": 1},
    mix_note="a stable sigmoid: an exp plus a divide",
    compute=_sigmoid_ce_grad, reference=_sigmoid_ce_grad_ref, sample=_sample_sigmoid_ce,
    error_bound=_sigmoid_ce_grad_bound,
    notes="sigmoid(x) - label cancels near the label: error bounded by the operands "
          "(error_bound)",
)

OPERATORS = (SMOOTHL1LOSSGRAD, SIGMOIDCROSSENTROPYWITHLOGITSGRAD)
