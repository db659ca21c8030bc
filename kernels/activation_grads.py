"""Activation-gradient operators: dst = f'(src1) * src0 for an activation f.

``src0`` is the incoming gradient ``dy``; ``src1`` is the activation's forward input ``x``
(or its output ``y`` where the formula says so). Each operator's instruction mix sits next
to its math: it is what one vector iteration issues, loads and stores included.

Every ``compute`` works in the call's dtype: numpy rounds each operation to it (see
:mod:`dspsim.kernels.numerics` for the fused multiply-add and register constants). Each
``reference`` is the same formula in float64. Where a dtype-faithful evaluation cannot
stay within ``tolerance_ulps`` of the correctly rounded result, the operator's
``error_bound`` says how far it may be and why (``eps`` is the dtype's ULP at 1.0,
``subnormal`` its smallest subnormal).
"""
from __future__ import annotations

from dspsim.kernels.grad_common import GRAD_ARGS, GRAD_INPUTS  # noqa: F401
from dspsim.kernels.piecewise_grads import (
                                            H_SIGMOID_GRAD,
                                            H_SWISH_GRAD,
                                            HARD_SHRINK_GRAD,
                                            L_RELU_GRAD,
                                            RELU6_GRAD,
                                            RELU_GRAD,
                                            SOFTSHRINK_GRAD,
)
from dspsim.kernels.smooth_grads import (
                                            ELU_GRAD,
                                            GELU_GRAD,
                                            SIGMOID_GRAD,
                                            SOFTPLUS_GRAD,
                                            SWISH_GRAD,
                                            TANH_GRAD,
)

OPERATORS = (RELU_GRAD, RELU6_GRAD, L_RELU_GRAD, SIGMOID_GRAD, TANH_GRAD, H_SIGMOID_GRAD,
             H_SWISH_GRAD, GELU_GRAD, ELU_GRAD, SOFTPLUS_GRAD, HARD_SHRINK_GRAD,
             SOFTSHRINK_GRAD, SWISH_GRAD)
