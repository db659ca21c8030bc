"""Independent float64 references for every operator, written from DESIGN.md's catalogue.

Nothing here comes from ``dspsim.kernels``: each function restates the table's formula in
float64 (inputs are converted first), with the boundaries exactly as the table writes
them (a NaN satisfies no condition, so it takes the "otherwise" branch). Where the plain
formula is not accurate in float64 the function says which equivalent form it uses.
Special values follow the formula, except that the smooth activations' derivatives take
their limits at x = +-inf (the formula would give inf * 0 there).

``REFERENCES`` maps each operator stem to ``(function, input names in C order)``.
"""
from __future__ import annotations

import math

import numpy as np

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
GELU_CUBIC = 0.044715


def _f64(*arrays):
    return [np.asarray(a, dtype=np.float64) for a in arrays]


def sigmoid(x):
    """The seed's split form: 1/(1 + e^-x) for x > 0, e^x/(1 + e^x) for x <= 0."""
    (x,) = _f64(x)
    with np.errstate(over="ignore"):
        positive = 1.0 / (1.0 + np.exp(-np.where(x > 0, x, 0.0)))
        ex = np.exp(np.where(x > 0, 0.0, x))
        negative = ex / (1.0 + ex)
    return np.where(x > 0, positive, negative)


def relu_grad(dy, x):
    dy, x = _f64(dy, x)
    return np.where(x > 0, dy, 0.0)


def relu6_grad(dy, x):
    dy, x = _f64(dy, x)
    return np.where((x > 0) & (x < 6), dy, 0.0)


def l_relu_grad(dy, x, alpha):
    dy, x = _f64(dy, x)
    return np.where(x > 0, dy, alpha * dy)


def sigmoid_grad(dy, y):
    dy, y = _f64(dy, y)
    return dy * y * (1.0 - y)


def tanh_grad(dy, y):
    dy, y = _f64(dy, y)
    return dy * (1.0 - y * y)


def h_sigmoid_grad(dy, x):
    dy, x = _f64(dy, x)
    return np.where((x > -3) & (x < 3), dy / 6.0, 0.0)


def h_swish_grad(dy, x):
    dy, x = _f64(dy, x)
    middle = dy * (2.0 * x + 3.0) / 6.0
    return np.where(x < -3, 0.0, np.where(x > 3, dy, middle))


def gelu_derivative(x):
    """d/dx of 0.5 x (1 + tanh(z)), z = sqrt(2/pi) (x + 0.044715 x^3).

    Written as 0.5 (1 + tanh z) + 0.5 x sech^2(z) z'. In float64, 1 + tanh z cancels for
    z < 0, so that half uses the identity 0.5 (1 + tanh z) = 1 / (1 + e^(-2z)); sech^2 comes
    from cosh, which saturates to 1/inf = 0 without cancelling.
    """
    (x,) = _f64(x)
    with np.errstate(over="ignore", invalid="ignore"):
        z = SQRT_2_OVER_PI * (x + GELU_CUBIC * x ** 3)
        half_one_plus_tanh = 1.0 / (1.0 + np.exp(-2.0 * z))
        sech2 = 1.0 / np.cosh(z) ** 2
        dz = SQRT_2_OVER_PI * (1.0 + 3.0 * GELU_CUBIC * x * x)
        value = half_one_plus_tanh + 0.5 * x * sech2 * dz
    return np.where(np.isinf(x), np.where(x > 0, 1.0, 0.0), value)


def gelu_grad(dy, x):
    dy, x = _f64(dy, x)
    return dy * gelu_derivative(x)


def elu_grad(dy, x, alpha):
    dy, x = _f64(dy, x)
    with np.errstate(over="ignore"):
        return np.where(x > 0, dy, dy * alpha * np.exp(np.where(x > 0, 0.0, x)))


def softplus_grad(dy, x):
    dy, x = _f64(dy, x)
    return dy * sigmoid(x)


def hard_shrink_grad(dy, x, lambd):
    dy, x = _f64(dy, x)
    return np.where(np.abs(x) > lambd, dy, 0.0)


def softshrink_grad(dy, x, lambd):
    dy, x = _f64(dy, x)
    return np.where(np.abs(x) > lambd, dy, 0.0)


def smoothl1lossgrad(dy, x1, x2, beta):
    dy, x1, x2 = _f64(dy, x1, x2)
    d = x1 - x2
    with np.errstate(invalid="ignore", divide="ignore"):
        middle = np.sign(d) * dy if beta == 0 else dy * d / beta
    return np.where(d > beta, dy, np.where(d < -beta, -dy, middle))


def sigmoidcrossentropywithlogitsgrad(logits, labels):
    logits, labels = _f64(logits, labels)
    return sigmoid(logits) - labels


def swish_derivative(x, beta):
    """d/dx of x * sigmoid(beta x) = s + beta x s (1 - s), s = sigmoid(beta x).

    1 - s is taken as sigmoid(-beta x), which does not cancel where s is close to 1.
    """
    (x,) = _f64(x)
    with np.errstate(invalid="ignore", over="ignore"):
        bx = beta * x
        s, one_minus_s = sigmoid(bx), sigmoid(-bx)
        value = s + bx * s * one_minus_s
    limit = np.where(bx > 0, 1.0, 0.0)
    return np.where(np.isinf(bx), limit, value)


def swish_grad(dy, x, beta=1.0):
    dy, x = _f64(dy, x)
    return dy * swish_derivative(x, beta)


def l_relu(x, negative_slope=0.01):
    (x,) = _f64(x)
    return np.where(x > 0, x, negative_slope * x)


REFERENCES = {
    "relu_grad": (relu_grad, ("src0", "src1")),
    "relu6_grad": (relu6_grad, ("src0", "src1")),
    "l_relu_grad": (l_relu_grad, ("src0", "src1")),
    "sigmoid_grad": (sigmoid_grad, ("src0", "src1")),
    "tanh_grad": (tanh_grad, ("src0", "src1")),
    "h_sigmoid_grad": (h_sigmoid_grad, ("src0", "src1")),
    "h_swish_grad": (h_swish_grad, ("src0", "src1")),
    "gelu_grad": (gelu_grad, ("src0", "src1")),
    "elu_grad": (elu_grad, ("src0", "src1")),
    "softplus_grad": (softplus_grad, ("src0", "src1")),
    "hard_shrink_grad": (hard_shrink_grad, ("src0", "src1")),
    "softshrink_grad": (softshrink_grad, ("src0", "src1")),
    "smoothl1lossgrad": (smoothl1lossgrad, ("dy", "x1", "x2")),
    "sigmoidcrossentropywithlogitsgrad": (sigmoidcrossentropywithlogitsgrad,
                                          ("Input0", "Input1")),
    "swish_grad": (swish_grad, ("src0", "src1")),
    "l_relu": (l_relu, ("src",)),
}
