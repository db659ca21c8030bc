"""A fused bias + GELU-gradient kernel, declared as the operator library declares its own.

Forward: y = gelu(x + b), with the bias b already broadcast to every element. Backward,
fused into one pass: dst = dy * gelu'(x + b). One kernel reads dy, x and b once and writes
dst once, where the unfused pair (an add, then gelu_grad) reads and writes x + b as well.

Load it with ``dspsim run --kernels examples/kernels/bias_gelu_grad.py fp_bias_gelu_grad_s
--length 2^20``, ``Chip("ft78ne", kernels="examples/kernels/bias_gelu_grad.py")`` or
``kernels: [bias_gelu_grad.py]`` in a program file.
"""
import numpy as np

from dspsim.kernels import Operator
from dspsim.kernels.smooth_grads import GELU_GRAD  # the library's gelu_grad: math and mix

#: max |gelu''(h)|, at h = 0: 2 / sqrt(2 pi) for the exact GELU, 0.798 for the tanh form
GELU_SECOND_DERIVATIVE_MAX = 0.8


def bias_gelu_grad(dy, x, b):
    """In the call's dtype: h = x + b rounds once, then the library's gelu_grad."""
    return GELU_GRAD.compute(dy, x + b)


def bias_gelu_grad_reference(dy, x, b):
    """The same formula in float64."""
    return GELU_GRAD.reference(dy, x + b)


def bias_gelu_grad_bound(eps, subnormal, dy, x, b):
    """gelu_grad's own bound at h = x + b, plus what rounding h to the dtype costs: |h|
    moves by up to eps/2 * |h|, so gelu'(h) by up to max|gelu''| times that, times |dy|."""
    h = x + b
    rounding_h = np.abs(dy) * GELU_SECOND_DERIVATIVE_MAX * eps * np.abs(h)
    return GELU_GRAD.error_bound(eps, subnormal, dy, h) + rounding_h


def sample(rng, length):
    """dy and x as the library samples them; a bias of typical magnitude."""
    return {"src0": rng.standard_normal(length) * 3.0, "src1": rng.standard_normal(length) * 3.0,
            "src2": rng.standard_normal(length) * 0.5}


BIAS_GELU_GRAD = Operator(
    stem="bias_gelu_grad",
    summary="fused bias + GELU gradient: dst = dy * gelu'(x + b)",
    formula="dst = src0 * gelu'(src1 + src2)   (tanh-approximated GELU)",
    args=("src0", "src1", "src2", "dst", "length"),
    inputs=("src0", "src1", "src2"), output="dst", params=(),
    # gelu_grad's iteration, plus a third load (the bias) and the add that forms x + b
    mix={**GELU_GRAD.mix, "load": GELU_GRAD.mix["load"] + 1, "add": GELU_GRAD.mix["add"] + 1},
    mix_note="gelu_grad's exp, divide and ten multiplies, plus one load and one add",
    compute=bias_gelu_grad, reference=bias_gelu_grad_reference,
    error_bound=bias_gelu_grad_bound, sample=sample,
    tolerance_ulps=GELU_GRAD.tolerance_ulps, linear_in="src0",
    notes="as gelu_grad, plus the rounding of x + b (error_bound)",
)

OPERATORS = (BIAS_GELU_GRAD,)
