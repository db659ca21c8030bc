"""Numerics at the edges: finite results stay finite, whatever y the caller passes."""
import ml_dtypes
import numpy as np
import pytest

import dspsim
from dspsim import kernels
from dspsim.kernels.check import compare


def test_the_reported_tanh_grad_cases():
    out, _ = dspsim.simulate("hp_tanh_grad_s", [-0.0440063], [937.5], chip="mt7004")
    expected = np.float16(-0.0440063 * (1 - 937.5 ** 2))  # dy rounded first, as the call does
    assert np.isfinite(out[0]) and abs(float(out[0]) - 38677.4) < 40
    assert abs(float(out[0]) - float(expected)) <= 2 * float(np.spacing(expected))
    out, _ = dspsim.simulate("fp_tanh_grad_s", [0.0], [np.float32(3.4028235e38)])
    assert out[0] == 0 and np.signbit(out[0])  # -0, as dy * (1 - y^2) is


def test_sigmoid_grad_does_not_overflow_on_the_way():
    # dy * y overflows fp16 for y = 1.5, dy = 60000; dy * y * (1 - y) = -45000 does not
    out, _ = dspsim.simulate("hp_sigmoid_grad_s", [60000.0], [1.5], chip="mt7004")
    assert out[0] == np.float16(-45000.0)


def _finite_values(dtype, rng, count):
    """Random finite values of ``dtype`` across its whole exponent range, both signs."""
    bits = {2: np.uint16, 4: np.uint32}[np.dtype(dtype).itemsize]
    raw = rng.integers(0, np.iinfo(bits).max, count, dtype=bits, endpoint=True)
    values = raw.view(dtype)
    with np.errstate(invalid="ignore"):  # NaN bit patterns
        return values[np.isfinite(values.astype(np.float64))]


@pytest.mark.parametrize("stem", ["sigmoid_grad", "tanh_grad"])
@pytest.mark.parametrize("dtype_name", ["fp32", "fp16", "bf16"])
def test_finite_results_stay_finite_and_within_tolerance(stem, dtype_name):
    dtype = kernels.DTYPES[dtype_name]
    op = kernels.OPERATORS[stem]
    rng = np.random.default_rng(11)
    y = _finite_values(dtype.numpy, rng, 400_000)
    dy = _finite_values(dtype.numpy, rng, y.size)[: y.size]
    y = y[: dy.size]
    with np.errstate(all="ignore"):
        out = op.compute(dy, y)
        reference = op.reference(dy.astype(np.float64), y.astype(np.float64))
    largest = float(ml_dtypes.finfo(dtype.numpy).max)
    finite = np.isfinite(reference) & (np.abs(reference) < largest)
    assert np.all(np.isfinite(out[finite].astype(np.float64)))
    check = compare(out, reference, dtype, op.tolerance(dtype, [dy, y], {}))
    assert check.ok, (check.failures, check.first_failure)
