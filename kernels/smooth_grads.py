"""Activation gradients of smooth activations: sigmoid, tanh, gelu, elu, softplus and swish
(exp, tanh and divides, with error bounds where a dtype-faithful evaluation cannot stay
within its ULP tolerance; see :mod:`dspsim.kernels.activation_grads`)."""
from __future__ import annotations

import math

import numpy as np

from dspsim.kernels.grad_common import GRAD_ARGS, GRAD_INPUTS, grad_args, sigmoid64
from dspsim.kernels.numerics import clamp, const, fma, sigmoid_pair
from dspsim.kernels.operator import Operator, Param


# --------------------------------------------------------------------------- sigmoid_grad
# dst = src0 * y * (1 - y), src1 = y = sigmoid(x), the forward OUTPUT
def _sigmoid_grad(dy, y):
    # The two factors y and 1 - y, the smaller first: min(y, 1 - y) has magnitude at most 1
    # inside [0, 1], and outside it max(y, 1 - y) is at least 1, so dy * min never
    # overflows where the result is finite (y = 1.5 with a large dy would: dy * y first).
    complement = const(y, 1) - y
    return (dy * np.minimum(y, complement)) * np.maximum(y, complement)


def _sigmoid_grad_ref(dy, y):
    return dy * y * (1.0 - y)


def _sigmoid_grad_bound(eps, subnormal, dy, y):
    # Three roundings (1-y, and two products): within 2 ULP for every y in [0, 1]. A y
    # outside [0, 1] (never a sigmoid output) can make dy*min(y, 1-y) underflow to a
    # subnormal, whose absolute rounding error the larger factor then magnifies.
    larger = np.maximum(np.abs(y), np.abs(1 - y))
    return 2 * eps * np.abs(dy * y * (1 - y)) + subnormal * (1 + larger)


def _sample_sigmoid_grad(rng, length):
    return {"src0": rng.standard_normal(length) * 3.0, "src1": rng.uniform(0.0, 1.0, length)}


SIGMOID_GRAD = Operator(
    stem="sigmoid_grad",
    summary="Sigmoid gradient (src1 is the forward output y)",
    formula="dst = src0 * y * (1 - y)   (src1 = y = sigmoid(x))",
    args=GRAD_ARGS, inputs=GRAD_INPUTS, output="dst", params=(),
    # 1-y (sub), min and max of y and 1-y (the order of the products), two multiplies
    mix={"load": 2, "sub": 1, "min": 1, "max": 1, "mul": 2, "store": 1},
    mix_note="y is given, so no exp: a subtract, a min and a max that order the two "
             "multiplies so that no finite result overflows on the way",
    compute=_sigmoid_grad, reference=_sigmoid_grad_ref, sample=_sample_sigmoid_grad,
    error_bound=_sigmoid_grad_bound,
    notes="within 2 ULP for y in [0, 1]; y outside it may underflow the first product "
          "(error_bound)",
)


# --------------------------------------------------------------------------- tanh_grad
# dst = src0 * (1 - y^2), src1 = y = tanh(x), the forward OUTPUT
def _tanh_grad(dy, y):
    # 1 - y^2 = (1 - |y|) (1 + |y|): 1 - |y| is exact for |y| in [0.5, 2], so |y| close to
    # 1 does not cancel, and 1 + |y| >= 1 is the second factor, so dy * (1 - |y|) never
    # overflows where the result is finite (1 - y*y alone overflows for |y| > 256 in fp16,
    # and dy = 0 then gives NaN instead of 0).
    magnitude = np.abs(y)
    one = const(y, 1)
    return (dy * (one - magnitude)) * (one + magnitude)


def _tanh_grad_ref(dy, y):
    return dy * (1.0 - y * y)


def _tanh_grad_bound(eps, subnormal, dy, y):
    # Within 2 ULP for every y in [-1, 1]. Outside it (never a tanh output),
    # dy * (1 - |y|) can underflow to a subnormal whose absolute rounding error the
    # factor 1 + |y| then magnifies.
    return 2 * eps * np.abs(dy * (1 - y * y)) + subnormal * (2 + np.abs(y))


def _sample_tanh_grad(rng, length):
    return {"src0": rng.standard_normal(length) * 3.0, "src1": rng.uniform(-1.0, 1.0, length)}


TANH_GRAD = Operator(
    stem="tanh_grad",
    summary="Tanh gradient (src1 is the forward output y)",
    formula="dst = src0 * (1 - y^2)   (src1 = y = tanh(x))",
    args=GRAD_ARGS, inputs=GRAD_INPUTS, output="dst", params=(),
    # |y| (abs), 1 - |y| (sub), 1 + |y| (add), two multiplies
    mix={"load": 2, "abs": 1, "sub": 1, "add": 1, "mul": 2, "store": 1},
    mix_note="1 - y^2 as (1 - |y|)(1 + |y|): an abs, a subtract, an add and two multiplies",
    compute=_tanh_grad, reference=_tanh_grad_ref, sample=_sample_tanh_grad,
    error_bound=_tanh_grad_bound,
    notes="within 2 ULP for y in [-1, 1]; y outside it may underflow the first product "
          "(error_bound)",
)


# --------------------------------------------------------------------------- gelu_grad
# GELU with the tanh approximation: gelu(x) = 0.5 x (1 + tanh(z)), z = k (x + c x^3),
# k = sqrt(2/pi), c = 0.044715. With s = sigmoid(2z) = 0.5 (1 + tanh(z)):
#   gelu'(x) = s + 2 x s (1 - s) z'   with z' = k (1 + 3 c x^2)
#            = s * (1 + x (1 - s) * 2k (1 + 3 c x^2))
# The sigmoid form never computes 1 + tanh(z), which cancels for negative x; 1 - s comes
# from the stable sigmoid pair. x is clamped to [-11, 11] first: there 2|z| > 104, where
# exp(-2|z|) is 0 in every supported dtype, so the clamp changes no result and keeps x^3
# and x^2 from overflowing (fp16 overflows x^2 beyond 256): x = +inf gives dy, -inf 0.
GELU_K = math.sqrt(2 / math.pi)
GELU_C = 0.044715
GELU_CLAMP = 11.0


def _gelu_grad(dy, x):
    xc = clamp(x, -GELU_CLAMP, GELU_CLAMP)
    x2 = xc * xc
    twice_z = (const(x, 2 * GELU_K) * xc) * fma(const(x, GELU_C), x2, const(x, 1))
    s, s_complement = sigmoid_pair(twice_z)
    twice_dz = fma(const(x, 6 * GELU_C * GELU_K), x2, const(x, 2 * GELU_K))  # 2 z'
    bracket = fma(xc * s_complement, twice_dz, const(x, 1))
    return dy * (s * bracket)


def _gelu_terms64(x):
    """float64 pieces of gelu'(x): (s, 1 - s, 2z, second term 2 x s (1-s) z')."""
    xc = np.clip(x, -GELU_CLAMP, GELU_CLAMP)  # saturated in float64 as well (2|z| > 104)
    twice_z = 2 * GELU_K * xc * (1 + GELU_C * xc * xc)
    s, sc = sigmoid64(twice_z)
    second = s * xc * sc * 2 * GELU_K * (1 + 3 * GELU_C * xc * xc)
    return s, sc, twice_z, second


def _gelu_grad_ref(dy, x):
    s, _, _, second = _gelu_terms64(x)
    return dy * (s + second)


def _gelu_grad_bound(eps, subnormal, dy, x):
    # About ten roundings: 2z rounds (x^2, the fma, two multiplies, the constants k and c
    # rounded to the dtype) and exp(-2|z|) magnifies an absolute error of 2z by s(1-s):
    # a relative error of |2z|(1-s) in s, large for negative x. The bracket
    # 1 + x(1-s)2z' cancels near x = -0.75, where gelu' crosses zero, so its absolute
    # error is that of the terms, not of the result. Below x ~ -3.7 (fp16) s is subnormal:
    # an absolute error of a few subnormals, magnified by |dy| (1 + |2 x z'|).
    s, sc, twice_z, second = _gelu_terms64(x)
    terms = (1 + np.abs(twice_z) * sc) * np.abs(s) + (1 + np.abs(twice_z)) * np.abs(second)
    xc = np.clip(np.abs(x), 0, GELU_CLAMP)
    magnifier = 1 + xc * 2 * GELU_K * (1 + 3 * GELU_C * xc * xc)
    return np.abs(dy) * (4 * eps * terms + 3 * subnormal * magnifier) + subnormal


GELU_GRAD = Operator(
    stem="gelu_grad",
    summary="GELU gradient (tanh approximation)",
    formula="dst = src0 * d/dx[0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))]   (src1 = x)",
    args=GRAD_ARGS, inputs=GRAD_INPUTS, output="dst", params=(),
    # clamp (max, min); x^2, 2k*x, *(1 + c x^2), x(1-s), s*bracket, *dy, and the sigmoid's
    # e*(1/(1+e)) (7 mul); 1 + c x^2, 2z', bracket (3 fma); stable sigmoid: abs, negate
    # (sub), exp, 1 + e (add), 1/(1+e) (div), compare, two selects
    mix={"load": 2, "max": 1, "min": 1, "mul": 7, "fma": 3, "abs": 1, "sub": 1, "exp": 1,
         "add": 1, "div": 1, "cmp": 1, "select": 2, "store": 1},
    mix_note="an exp and a divide for the sigmoid, "
             "plus ten multiplies: the dearest gradient",
    compute=_gelu_grad, reference=_gelu_grad_ref, error_bound=_gelu_grad_bound,
    tolerance_ulps=4,  # ~10 dependent roundings: up to 4 ULP even where nothing cancels
    notes="up to 4 ULP; near the zero at x = -0.75 and for negative x, error_bound",
    linear_in="src0",
)


# --------------------------------------------------------------------------- elu_grad
# dst = src0 where x > 0, else src0 * alpha * exp(x)
def _elu_grad(dy, x, alpha):
    # alpha * exp(x) first: it is at most |alpha| for x <= 0, so the product with dy only
    # overflows where the result does
    negative_side = dy * (const(dy, alpha) * np.exp(x))
    return np.where(x > 0, dy, negative_side)


def _elu_grad_ref(dy, x, alpha):
    return np.where(x > 0, dy, dy * alpha * np.exp(np.minimum(x, 0.0)))


def _elu_grad_bound(eps, subnormal, dy, x, alpha):
    # alpha * exp(x) is subnormal where it falls below the dtype's smallest normal (for
    # alpha = 1 in fp16: x < -9.7); its absolute rounding error (and that of exp(x), which
    # alpha may scale up) is then magnified by |dy|.
    result = np.where(x > 0, dy, dy * alpha * np.exp(np.minimum(x, 0.0)))
    return 2 * eps * np.abs(result) + subnormal * (np.abs(dy) * (abs(alpha) + 1) + 1)


ELU_GRAD = Operator(
    stem="elu_grad",
    summary="ELU gradient",
    formula="dst = src0 where src1 > 0, else src0 * alpha * exp(src1)   (src1 = x)",
    args=grad_args("alpha"), inputs=GRAD_INPUTS, output="dst",
    params=(Param("alpha", default=1.0, doc="scale of the negative side (C type float)"),),
    # exp(x) on every lane (exp), * alpha, * dy (2 mul), compare x > 0, select
    mix={"load": 2, "exp": 1, "mul": 2, "cmp": 1, "select": 1, "store": 1},
    mix_note="one exp for the negative side",
    compute=_elu_grad, reference=_elu_grad_ref, error_bound=_elu_grad_bound,
    notes="within 2 ULP unless alpha * exp(x) is subnormal (error_bound)",
    linear_in="src0",
)


# --------------------------------------------------------------------------- softplus_grad
# dst = src0 * sigmoid(x); softplus(x) = log(1 + exp(x)) has sigmoid(x) as its derivative.
# Stable split: with e = exp(-|x|), sigmoid(x) = 1/(1+e) for x > 0, e/(1+e) otherwise.
def _softplus_grad(dy, x):
    e = np.exp(-np.abs(x))
    numerator = np.where(x > 0, dy, dy * e)
    return numerator / (const(x, 1) + e)


def _softplus_grad_ref(dy, x):
    s, _ = sigmoid64(x)
    return dy * s


def _softplus_grad_bound(eps, subnormal, dy, x):
    # exp(-|x|) is subnormal for |x| beyond the dtype's smallest normal (fp16: 9.7): its
    # absolute rounding error is magnified by |dy| for negative x.
    return 2 * eps * np.abs(_softplus_grad_ref(dy, x)) + subnormal * (np.abs(dy) + 1)


SOFTPLUS_GRAD = Operator(
    stem="softplus_grad",
    summary="Softplus gradient",
    formula="dst = src0 * sigmoid(src1)   (src1 = x; stable split at x = 0)",
    args=GRAD_ARGS, inputs=GRAD_INPUTS, output="dst", params=(),
    # |x| (abs), negate (sub), exp, 1 + e (add), dy*e (mul), compare, select, divide
    mix={"load": 2, "abs": 1, "sub": 1, "exp": 1, "add": 1, "mul": 1, "cmp": 1, "select": 1,
         "div": 1, "store": 1},
    mix_note="a stable sigmoid: an exp plus a divide",
    compute=_softplus_grad, reference=_softplus_grad_ref, error_bound=_softplus_grad_bound,
    notes="within 2 ULP unless exp(-|x|) is subnormal (error_bound)",
    linear_in="src0",
)


# --------------------------------------------------------------------------- swish_grad
# swish(x) = x * sigmoid(beta x); with s = sigmoid(beta x):
#   swish'(x) = s + beta x s (1 - s) = s * (1 + beta x (1 - s))
# beta x is clamped to [-104, 104]: beyond, exp(-|beta x|) is 0 in every supported dtype,
# so the clamp changes no result but keeps beta x (1 - s) from becoming inf * 0 when
# beta x overflows (x = inf, or a large fp16 x times beta > 1).
SWISH_CLAMP = 104.0


def _swish_grad(dy, x, beta):
    bx = clamp(const(x, beta) * x, -SWISH_CLAMP, SWISH_CLAMP)
    s, s_complement = sigmoid_pair(bx)
    return dy * (s * fma(bx, s_complement, const(x, 1)))


def _swish_terms64(x, beta):
    """float64 pieces of swish'(x): (s, 1 - s, beta x, second term beta x s (1 - s))."""
    with np.errstate(invalid="ignore"):
        bx = np.clip(beta * x, -SWISH_CLAMP, SWISH_CLAMP)  # saturated in float64 too
    s, sc = sigmoid64(bx)
    return s, sc, bx, bx * s * sc


def _swish_grad_ref(dy, x, beta=1.0):
    s, _, _, second = _swish_terms64(x, beta)
    return dy * (s + second)


def _swish_grad_bound(eps, subnormal, dy, x, beta=1.0):
    # Like gelu_grad: beta*x rounds (and beta itself, in fp16), exp(-|beta x|) turns that
    # into a relative error |beta x|(1-s) of s; the bracket 1 + beta x (1-s) cancels near
    # beta x = -1.28, where swish' crosses zero; s is subnormal for beta x below the
    # dtype's smallest normal exponent.
    s, sc, bx, second = _swish_terms64(x, beta)
    terms = (1 + np.abs(bx) * sc) * np.abs(s) + (1 + np.abs(bx)) * np.abs(second)
    return np.abs(dy) * (4 * eps * terms + 3 * subnormal * (1 + np.abs(bx))) + subnormal


SWISH_GRAD = Operator(
    stem="swish_grad",
    summary="Swish gradient (aclnnSwishBackward)",
    formula="s = sigmoid(beta x): dst = src0 * (s + beta x s (1 - s))   (src1 = x)",
    args=grad_args("beta"), inputs=GRAD_INPUTS, output="dst",
    params=(Param("beta", default=1.0, minimum=0.0,
                  doc="slope inside the sigmoid; 1.0 when absent (C type float)"),),
    # beta*x, e*(1/(1+e)), s*bracket, *dy (4 mul); bracket 1 + bx(1-s) (fma); clamp (max,
    # min); stable sigmoid: abs, negate (sub), exp, add, div, compare, two selects
    mix={"load": 2, "mul": 4, "fma": 1, "max": 1, "min": 1, "abs": 1, "sub": 1, "exp": 1,
         "add": 1, "div": 1, "cmp": 1, "select": 2, "store": 1},
    mix_note="a stable sigmoid (an exp and a divide) plus a few multiplies",
    compute=_swish_grad, reference=_swish_grad_ref, error_bound=_swish_grad_bound,
    # six dependent roundings: up to 4 ULP even where nothing cancels (fp16 x = 0.04263,
    # dy = 3.781, beta = 1 is 4 ULP from the correctly rounded result)
    tolerance_ulps=4,
    notes="up to 4 ULP; near the zero at beta x = -1.28 and for negative beta x, error_bound",
    linear_in="src0",
)
