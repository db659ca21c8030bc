"""Every operator x dtype x storage version on both chips against tests/reference.py.

Inputs mix typical values with large and tiny magnitudes, signed zeros, NaN, infinities and
each operator's boundaries (0, +-3, 6, +-lambd, +-beta, d = +-beta), with their neighbours
in the dtype. The check is the operator's documented tolerance (kernels/check.py): 2 ULP
(fp16/bf16) or 1e-5 relative / 1e-6 absolute (fp32), widened only where the operator
writes down why; the tests below also show that such a bound is needed only where it says.
"""
from __future__ import annotations

import math
import zlib

import ml_dtypes
import numpy as np
import pytest
from reference import REFERENCES

import dspsim
from dspsim import kernels
from dspsim.kernels.check import compare, tolerance_for, ulp_distance
from dspsim.sim.chip.load import load_config, packaged_chips

CHIPS = ("ft78ne", "mt7004", "mt7016")
LENGTH_TYPICAL = 1200

#: parameter sets exercised per operator (the first is the C examples' or the default)
PARAMS = {
    "l_relu_grad": [{"alpha": 0.01}, {"alpha": 0.2}],
    "elu_grad": [{"alpha": 1.0}, {"alpha": 0.5}],
    "hard_shrink_grad": [{"lambd": 0.5}, {"lambd": 0.3}, {"lambd": 0.0}],
    "softshrink_grad": [{"lambd": 0.5}, {"lambd": 0.3}, {"lambd": 0.0}],
    "smoothl1lossgrad": [{"beta": 1.0}, {"beta": 0.3}, {"beta": 0.0}],
    "swish_grad": [{"beta": 1.0}, {"beta": 1.7}],
    "l_relu": [{"negative_slope": 0.01}, {"negative_slope": 0.2}],
}

#: inputs that are a forward OUTPUT (or a label) with a bounded domain: (low, high)
DOMAINS = {
    ("sigmoid_grad", "src1"): (0.0, 1.0),
    ("tanh_grad", "src1"): (-1.0, 1.0),
    ("sigmoidcrossentropywithlogitsgrad", "Input1"): (0.0, 1.0),
}


def _cases():
    for chip in CHIPS:
        for dtype in load_config(packaged_chips()[chip]).dtypes:
            for storage in ("s", "p"):
                for stem in kernels.OPERATORS:
                    yield pytest.param(chip, dtype, storage, stem,
                                       id=f"{chip}-{kernels.DTYPES[dtype].prefix}_{stem}_{storage}")


# --------------------------------------------------------------------------- inputs
def _neighbours(values, dtype: np.dtype) -> np.ndarray:
    """Each value in the dtype with the next representable values on either side."""
    v = np.asarray(values, dtype=np.float64).astype(dtype)
    up = np.nextafter(v, dtype.type(np.inf))
    down = np.nextafter(v, dtype.type(-np.inf))
    return np.concatenate([v, up, down])


def _specials(dtype: np.dtype) -> np.ndarray:
    finfo = ml_dtypes.finfo(dtype)
    sub = float(finfo.smallest_subnormal)
    return np.array([0.0, -0.0, np.nan, np.inf, -np.inf, sub, -sub, float(finfo.tiny),
                     -float(finfo.tiny) * 3, 1.0, -1.0], dtype=np.float64).astype(dtype)


def _large(rng, n: int, dtype: np.dtype) -> np.ndarray:
    top = 4.0 if dtype == np.float16 else 30.0  # decades: fp16 reaches 6.5e4, fp32 3.4e38
    magnitude = 10.0 ** rng.uniform(1.0, top, n)
    return (magnitude * rng.choice([-1.0, 1.0], n)).astype(dtype)


def _boundaries(stem: str, params: dict, dtype: np.dtype) -> np.ndarray:
    """The x values where the operator's formula changes, with their neighbours."""
    lambd = params.get("lambd", 0.5)
    beta = params.get("beta", 1.0)
    points = {"relu6_grad": [0.0, 6.0], "h_sigmoid_grad": [-3.0, 3.0],
              "h_swish_grad": [-3.0, 3.0, -1.5], "gelu_grad": [0.0, -0.7518],
              "hard_shrink_grad": [lambd, -lambd], "softshrink_grad": [lambd, -lambd],
              "swish_grad": [0.0, -1.2785 / beta if beta else 0.0]}
    return _neighbours(points.get(stem, [0.0]), dtype)


def make_inputs(stem: str, params: dict, dtype: np.dtype, rng) -> list[np.ndarray]:
    """The operator's inputs (C order) in ``dtype``, all of one length."""
    op = kernels.OPERATORS[stem]
    blocks = {}
    for name in op.inputs:
        domain = DOMAINS.get((stem, name))
        if domain is not None:  # a sigmoid/tanh output or a label: stay in its domain
            low, high = domain
            typical = rng.uniform(low, high, LENGTH_TYPICAL).astype(dtype)
            edges = np.array([low, high, 0.0, -0.0, np.nan, np.inf, -np.inf]).astype(dtype)
            blocks[name] = [typical, edges, rng.uniform(low, high, 64).astype(dtype)]
        else:
            typical = (rng.standard_normal(LENGTH_TYPICAL) * 3.0).astype(dtype)
            blocks[name] = [typical, _specials(dtype), _large(rng, 64, dtype),
                            _boundaries(stem, params, dtype)]
    arrays = {name: np.concatenate(parts) for name, parts in blocks.items()}
    length = max(len(a) for a in arrays.values())
    for name, array in arrays.items():  # pad by resampling, then shuffle so that special
        extra = rng.choice(array, length - len(array))  # values meet every other input
        arrays[name] = rng.permutation(np.concatenate([array, extra]))
    if stem == "smoothl1lossgrad":
        _place_beta_pairs(arrays, params["beta"], dtype)
    return [arrays[name] for name in op.inputs]


def _place_beta_pairs(arrays: dict, beta: float, dtype: np.dtype) -> None:
    """Put exact d = x1 - x2 = +-beta, 0 (and neighbours) at the start of the inputs."""
    b = float(dtype.type(beta))  # beta's C type is the element type
    x2 = np.array([0.0, 1.0, -2.0, 0.5] * 3)
    d = np.repeat([b, -b, 0.0], 4)
    x1 = (x2 + d).astype(dtype)
    n = len(x1)
    arrays["x1"][:n], arrays["x2"][:n] = x1, x2.astype(dtype)
    near = _neighbours([b, -b], dtype)
    arrays["x1"][n:n + len(near)], arrays["x2"][n:n + len(near)] = near, dtype.type(0)


# --------------------------------------------------------------------------- the check
def assert_matches_reference(stem, params, dtype_name, inputs, out):
    op = kernels.OPERATORS[stem]
    dtype = kernels.DTYPES[dtype_name]
    reference_fn, names = REFERENCES[stem]
    assert names == op.inputs
    with np.errstate(all="ignore"):
        expected = reference_fn(*inputs, **params)
    check = compare(out, expected, dtype, op.tolerance(dtype, inputs, params))
    if not check.ok:
        i = check.first_failure
        got = [float(a[i]) for a in inputs]
        pytest.fail(f"{stem} {params} {dtype_name}: {check.failures} elements out of tolerance "
                    f"({check.rule}); first at inputs {got}: got {float(out[i])!r}, reference "
                    f"{float(expected[i])!r}; NaN mismatches {check.mismatched_nan}, inf "
                    f"mismatches {check.mismatched_inf}")


@pytest.mark.parametrize("chip_name, dtype_name, storage, stem", list(_cases()))
def test_operator_matches_independent_reference(chip_name, dtype_name, storage, stem):
    chip = dspsim.Chip(chip_name)
    dtype = kernels.DTYPES[dtype_name]
    name = f"{dtype.prefix}_{stem}_{storage}"
    rng = np.random.default_rng(zlib.crc32(name.encode()))  # reproducible per call name
    for params in PARAMS.get(stem, [{}]):
        inputs = make_inputs(stem, params, dtype.numpy, rng)
        out, result = dspsim.simulate(name, *inputs, chip=chip, **params)
        assert result.length == len(inputs[0]) and result.cycles > 0
        assert result.metadata["params"] == {k: float(v) for k, v in params.items()}
        assert_matches_reference(stem, params, dtype_name, inputs, out)


# --------------------------------------------------------------------------- the bounds
#: per bounded operator: fp16 inputs away from the regions its error_bound names, where
#: tolerance_ulps alone must hold (so the bound is the documented exception, not the rule)
BENIGN = {
    "gelu_grad": lambda rng, n: {"src1": rng.uniform(-0.4, 8.0, n)},
    "swish_grad": lambda rng, n: {"src1": rng.uniform(-0.5, 12.0, n)},
    "elu_grad": lambda rng, n: {"src1": rng.uniform(-9.0, 4.0, n)},
    "softplus_grad": lambda rng, n: {"src1": rng.uniform(-9.0, 9.0, n)},
    "sigmoid_grad": lambda rng, n: {"src1": rng.uniform(0.0, 1.0, n)},
    "sigmoidcrossentropywithlogitsgrad":
        lambda rng, n: {"Input0": rng.uniform(-9.0, 0.0, n), "Input1": np.zeros(n)},
    "smoothl1lossgrad": lambda rng, n: {"x1": rng.standard_normal(n), "x2": rng.standard_normal(n)},
}


@pytest.mark.parametrize("stem", sorted(BENIGN))
def test_error_bound_is_only_needed_where_documented(stem):
    op = kernels.OPERATORS[stem]
    dtype = kernels.DTYPES["fp16"]
    rng = np.random.default_rng(7)
    n = 20000
    chosen = BENIGN[stem](rng, n)
    inputs = [np.asarray(chosen.get(name, rng.standard_normal(n) * 3)).astype(np.float16)
              for name in op.inputs]
    params = PARAMS.get(stem, [{}])[0]
    with np.errstate(all="ignore"):
        out = op.compute(*inputs, **params)
        expected = REFERENCES[stem][0](*inputs, **params)
    assert compare(out, expected, dtype, tolerance_for(dtype, op.tolerance_ulps)).ok


def _fp16_grid():
    """Every finite fp16 value."""
    values = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    return values[np.isfinite(values)]


#: operators whose src1 is a forward output: their 2 ULP hold over the output's range,
#: their error bound covers values no forward pass produces
OUTPUT_DOMAIN = {"sigmoid_grad": (0.0, 1.0), "tanh_grad": (-1.0, 1.0)}


@pytest.mark.parametrize("stem", ["relu_grad", "relu6_grad", "l_relu_grad", "h_sigmoid_grad",
                                  "h_swish_grad", "hard_shrink_grad", "softshrink_grad",
                                  "sigmoid_grad", "tanh_grad", "l_relu"])
def test_fp16_operators_hold_2_ulp_for_every_x(stem):
    """2 ULP over every finite fp16 x (every y of the forward output's range), with no
    error bound needed there."""
    op = kernels.OPERATORS[stem]
    assert op.tolerance_ulps == 2
    assert (op.error_bound is None) == (stem not in OUTPUT_DOMAIN)
    rng = np.random.default_rng(3)
    x = _fp16_grid()
    if stem in OUTPUT_DOMAIN:
        low, high = OUTPUT_DOMAIN[stem]
        x = x[(x >= low) & (x <= high)]
    dy = (rng.standard_normal(x.size) * 3).astype(np.float16)
    inputs = [x] if len(op.inputs) == 1 else [dy, x]
    params = PARAMS.get(stem, [{}])[0]
    with np.errstate(all="ignore"):
        out = op.compute(*inputs, **params)
        expected = REFERENCES[stem][0](*inputs, **params)
    assert int(ulp_distance(out, expected, kernels.DTYPES["fp16"]).max()) <= 2


def test_sigmoid_cross_entropy_cancellation_needs_its_bound():
    """Labels equal to sigmoid(x) up to rounding: the result is tiny, the error is not."""
    op = kernels.OPERATORS["sigmoidcrossentropywithlogitsgrad"]
    dtype = kernels.DTYPES["fp16"]
    x = np.linspace(-4, 4, 4001).astype(np.float16)
    label = (1 / (1 + np.exp(-x.astype(np.float64))) + 1e-4).astype(np.float16)
    with np.errstate(all="ignore"):
        out = op.compute(x, label)
    expected = REFERENCES["sigmoidcrossentropywithlogitsgrad"][0](x, label)
    assert not compare(out, expected, dtype, tolerance_for(dtype, op.tolerance_ulps)).ok
    assert compare(out, expected, dtype, op.tolerance(dtype, [x, label], {})).ok


def test_gelu_grad_limits_at_infinity_and_nan():
    chip = dspsim.Chip("mt7004")
    x = np.array([np.inf, -np.inf, np.nan, 1e4, -1e4], dtype=np.float16)
    dy = np.full(x.size, 2.0, dtype=np.float16)
    out, _ = dspsim.simulate("hp_gelu_grad_s", dy, x, chip=chip)
    np.testing.assert_array_equal(out[[0, 3]], [2.0, 2.0])
    np.testing.assert_array_equal(out[[1, 4]], [0.0, 0.0])
    assert np.isnan(out[2])


def test_infinite_gradient_times_underflowed_derivative_is_nan():
    """dy = inf where sigmoid(x) is 0 in fp16: inf * 0 is NaN, which the check accepts there."""
    op = kernels.OPERATORS["softplus_grad"]
    dtype = kernels.DTYPES["fp16"]
    dy = np.array([np.inf, np.inf], dtype=np.float16)
    x = np.array([-200.0, 1.0], dtype=np.float16)
    with np.errstate(invalid="ignore"):
        out = op.compute(dy, x)
    assert np.isnan(out[0]) and out[1] == np.inf
    tolerance = op.tolerance(dtype, [dy, x], {})
    assert list(tolerance.indeterminate) == [True, False]
    assert compare(out, REFERENCES["softplus_grad"][0](dy, x), dtype, tolerance).ok


# --------------------------------------------------------------------------- exact boundaries
def _run(name, *inputs, chip="mt7004", **params):
    out, _ = dspsim.simulate(name, *inputs, chip=chip, **params)
    return out


def test_relu6_and_hard_sigmoid_boundaries_are_strict():
    x = np.array([0.0, -0.0, 6.0, 1e-30, 5.9999995, -3.0, 3.0, -2.9999998, 2.9999998],
                 dtype=np.float32)
    dy = np.full(x.size, 6.0, dtype=np.float32)
    np.testing.assert_array_equal(_run("fp_relu6_grad_p", dy, x),
                                  [0, 0, 0, 6, 6, 0, 6, 0, 6])
    np.testing.assert_array_equal(_run("fp_h_sigmoid_grad_p", dy, x),
                                  [1, 1, 0, 1, 0, 0, 0, 1, 1])


def test_h_swish_grad_closed_middle_interval():
    x = np.array([-3.0, 3.0, -3.0000002, 3.0000002, -1.5], dtype=np.float32)
    dy = np.full(x.size, 2.0, dtype=np.float32)
    np.testing.assert_array_equal(_run("fp_h_swish_grad_s", dy, x), [-1.0, 3.0, 0.0, 2.0, 0.0])


@pytest.mark.parametrize("prefix", ["fp", "hp"])
@pytest.mark.parametrize("stem", ["hard_shrink_grad", "softshrink_grad"])
def test_shrink_boundary_is_exact_for_unrepresentable_lambd(prefix, stem):
    dtype = np.float32 if prefix == "fp" else np.float16
    lambd = 0.3  # not representable in either dtype
    at = dtype(lambd)
    x = np.array([at, -at, np.nextafter(at, dtype(1)), np.nextafter(at, dtype(0)), 0.0],
                 dtype=dtype)
    dy = np.ones(x.size, dtype=dtype)
    expected = (np.abs(x.astype(np.float64)) > lambd).astype(dtype)
    np.testing.assert_array_equal(_run(f"{prefix}_{stem}_s", dy, x, lambd=lambd), expected)


def test_shrink_with_lambd_zero_passes_every_nonzero_x():
    x = np.array([0.0, -0.0, 1e-45, -1e-45, 2.0], dtype=np.float32)
    out = _run("fp_hard_shrink_grad_p", np.ones(5, np.float32), x, lambd=0.0)
    np.testing.assert_array_equal(out, [0, 0, 1, 1, 1])


@pytest.mark.parametrize("beta", [1.0, 0.5, 2.0])
def test_smoothl1lossgrad_at_d_equal_plus_minus_beta(beta):
    x2 = np.array([0.0, 1.0, 0.0, 1.0, 0.0, 0.0], dtype=np.float32)
    d = np.array([beta, beta, -beta, -beta, beta / 2, 3 * beta], dtype=np.float32)
    dy = np.full(6, 4.0, dtype=np.float32)
    out = _run("fp_smoothl1lossgrad_s", dy, x2 + d, x2, beta=beta)
    np.testing.assert_array_equal(out, [4.0, 4.0, -4.0, -4.0, 2.0, 4.0])


@pytest.mark.parametrize("name", ["fp_smoothl1lossgrad_s", "hp_smoothl1lossgrad_p"])
def test_smoothl1lossgrad_beta_zero_is_pure_l1(name):
    dtype = np.float32 if name.startswith("fp") else np.float16
    x1 = np.array([1.0, -1.0, 0.5, 0.25, 3.0, np.nan], dtype=dtype)
    x2 = np.array([0.0, 0.0, 0.5, 0.5, 2.0, 0.0], dtype=dtype)
    dy = np.array([3.0, 3.0, 3.0, -3.0, 1e-3, 1.0], dtype=dtype)
    out = _run(name, dy, x1, x2, beta=0.0)
    np.testing.assert_array_equal(out[:5], np.sign(x1[:5] - x2[:5]) * dy[:5])
    assert np.isnan(out[5])


# --------------------------------------------------------------------------- parameters
PARAMETRISED = sorted({(stem, p.name) for stem, op in kernels.OPERATORS.items()
                       for p in op.params})


@pytest.mark.parametrize("stem, param", PARAMETRISED)
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_parameters_are_errors(stem, param, bad):
    chip = dspsim.Chip("mt7004")
    inputs = [np.ones(16, np.float32)] * len(kernels.OPERATORS[stem].inputs)
    with pytest.raises(dspsim.ArgumentError, match=param):
        dspsim.simulate(f"fp_{stem}_s", *inputs, chip=chip, **{param: bad})


@pytest.mark.parametrize("stem, param", [("hard_shrink_grad", "lambd"),
                                         ("softshrink_grad", "lambd"),
                                         ("smoothl1lossgrad", "beta"), ("swish_grad", "beta")])
def test_negative_lambd_and_beta_are_errors(stem, param):
    chip = dspsim.Chip("ft78ne")
    inputs = [np.ones(16, np.float32)] * len(kernels.OPERATORS[stem].inputs)
    with pytest.raises(dspsim.ArgumentError, match=f"{param}=-0.5 must be >= 0"):
        dspsim.simulate(f"fp_{stem}_p", *inputs, chip=chip, **{param: -0.5})


def test_a_rejected_parameter_writes_nothing():
    chip = dspsim.Chip("ft78ne")
    chip.write(0xA0000000, np.ones(64, np.float32))
    chip.write(0xA1000000, np.ones(64, np.float32))
    with pytest.raises(dspsim.ArgumentError):
        chip.fp_hard_shrink_grad_s(0xA0000000, 0xA1000000, 0xB0000000, 64, -1.0, 0xff)
    with pytest.raises(dspsim.DspSimError, match="never written|not been written|unwritten"):
        chip.read(0xB0000000, 64, np.float32)


@pytest.mark.parametrize("stem, param, default", [
    ("swish_grad", "beta", 1.0), ("l_relu", "negative_slope", 0.01),
    ("l_relu_grad", "alpha", 0.01), ("elu_grad", "alpha", 1.0),
    ("hard_shrink_grad", "lambd", 0.5), ("softshrink_grad", "lambd", 0.5),
    ("smoothl1lossgrad", "beta", 1.0)])
def test_parameter_defaults(stem, param, default):
    op = kernels.OPERATORS[stem]
    rng = np.random.default_rng(5)
    inputs = [(rng.standard_normal(256) * 3).astype(np.float32) for _ in op.inputs]
    implicit, result = dspsim.simulate(f"fp_{stem}_s", *inputs, chip="ft78ne")
    explicit, _ = dspsim.simulate(f"fp_{stem}_s", *inputs, chip="ft78ne", **{param: default})
    assert result.metadata["params"] == {param: default}
    np.testing.assert_array_equal(implicit, explicit)


def test_swish_grad_default_beta_is_plain_swish():
    x = np.array([-2.0, 0.0, 1.0, 4.0], dtype=np.float32)
    dy = np.ones(4, np.float32)
    s = 1 / (1 + np.exp(-x.astype(np.float64)))
    np.testing.assert_allclose(_run("fp_swish_grad_p", dy, x), s + x * s * (1 - s), rtol=1e-6)


# --------------------------------------------------------------------------- in place
@pytest.mark.parametrize("name, address", [("fp_l_relu_s", 0xA0000000),
                                           ("hp_l_relu_p", 0x10000000)])
def test_l_relu_runs_in_place(name, address):
    chip = dspsim.Chip("mt7004")
    dtype = np.float32 if name.startswith("fp") else np.float16
    x = np.array([-2.0, -0.0, 0.0, 3.0, -np.inf, np.nan] * 50, dtype=dtype)
    chip.write(address, x)
    args = (address, address, x.size, 0.25) + ((0xF,) if name.endswith("_s") else ())
    chip.call(name, *args)
    out = chip.read(address, x.size, dtype)
    expected = np.where(x > 0, x, dtype(0.25) * x)
    np.testing.assert_array_equal(out, expected)
    assert np.signbit(out[1]) and not np.signbit(out[2])


# --------------------------------------------------------------------------- names and costs
SEED_SIGNATURES = [  # as the reference pages print them
    "void fp_l_relu_grad_s(float *src0, float *src1, float *dst, int length, float alpha, "
    "int core_mask)",
    "void fp_elu_grad_p(float *src0, float *src1, float *dst, int length, float alpha)",
    "void fp_hard_shrink_grad_s(float *src0, float *src1, float *dst, int length, float lambd, "
    "int core_mask)",
    "void fp_softshrink_grad_p(float *src0, float *src1, float *dst, int length, float lambd)",
    "void fp_gelu_grad_s(float *src0, float *src1, float *dst, int length, int core_mask)",
    "void fp_smoothl1lossgrad_s(float *dy, float *dx1, float *x1, float *x2, int length, "
    "float beta, int core_mask)",
    "void hp_smoothl1lossgrad_s(half *dy, half *dx1, half *x1, half *x2, int length, half beta, "
    "int core_mask)",
    "void hp_smoothl1lossgrad_p(half *dy, half *dx1, half *x1, half *x2, int length, half beta)",
    "void fp_sigmoidcrossentropywithlogitsgrad_s(float* Input0, float* Input1, float* output, "
    "int length, int core_mask)",
    "void hp_sigmoidcrossentropywithlogitsgrad_p(half* Input0, half* Input1, half* output, "
    "int length)",
]


@pytest.mark.parametrize("seed_signature", SEED_SIGNATURES)
def test_c_signatures_follow_the_seeds(seed_signature):
    name = seed_signature.split("(")[0].split()[-1]
    assert kernels.parse(name).signature() == seed_signature.replace("* ", " *")


def test_every_operator_is_offered_per_config_dtypes():
    for chip_name in CHIPS:
        chip = dspsim.Chip(chip_name)
        names = set(chip.operator_names())
        for stem in kernels.OPERATORS:
            for dtype in chip.config.dtypes:
                for suffix in ("s", "p"):
                    assert f"{kernels.DTYPES[dtype].prefix}_{stem}_{suffix}" in names
    with pytest.raises(dspsim.DTypeError, match="FT78NE does not support fp16"):
        dspsim.Chip("ft78ne").resolve("hp_gelu_grad_s")


def test_instruction_mixes_use_only_configured_instructions():
    for chip_name in CHIPS:
        known = set(dspsim.Chip(chip_name).config.vector.instructions)
        for op in kernels.OPERATORS.values():
            assert set(op.mix) <= known, (op.stem, set(op.mix) - known)
            assert op.mix_note, f"{op.stem} has no mix_note"
            loads = op.mix["load"]
            assert loads == len(op.inputs) and op.mix["store"] == 1


def test_transcendental_gradients_cost_more_than_relu_grad():
    from dspsim.sim.engine.vector import vector_cost
    for chip_name in CHIPS:
        config = dspsim.Chip(chip_name).config
        cost = {stem: vector_cost(config, "fp32", op.mix).iteration_cycles
                for stem, op in kernels.OPERATORS.items()}
        for stem in ("gelu_grad", "swish_grad", "softplus_grad", "elu_grad",
                     "sigmoidcrossentropywithlogitsgrad"):
            assert cost[stem] > cost["relu_grad"], (chip_name, stem, cost[stem])
        assert cost["gelu_grad"] >= max(cost.values())
