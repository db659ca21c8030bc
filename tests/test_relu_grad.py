"""The ReluGrad family: the seed's C example literally, numerics vs a float64 reference."""
import numpy as np
import pytest

import dspsim


def relu_grad_reference(dy, x):
    """dy where x > 0, else 0, in float64."""
    dy, x = np.asarray(dy, np.float64), np.asarray(x, np.float64)
    return np.where(x > 0, dy, 0.0)


def special_inputs(rng, n, dtype):
    dy = rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)
    x = rng.standard_normal(n)
    x[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 65000.0]
    dy[8:12] = [np.nan, np.inf, -np.inf, -0.0]
    return dy.astype(dtype), x.astype(dtype)


def test_seed_example_ft78ne_shared(ft78ne, rng):
    # FT78NE example from the reference page, literally
    src0 = 0xA0000000
    src1 = 0xA1000000
    dst = 0xB0000000
    length = 1024
    core_mask = 0xff
    dy, x = special_inputs(rng, length, np.float32)
    ft78ne.write(src0, dy)
    ft78ne.write(src1, x)
    result = ft78ne.fp_relu_grad_s(src0, src1, dst, length, core_mask)
    out = ft78ne.read(dst, length, np.float32)
    np.testing.assert_array_equal(out, relu_grad_reference(dy, x).astype(np.float32))
    assert result.cores == tuple(range(8)) and result.warnings == []
    assert sum(c.elements for c in result.per_core) == length
    assert result.cycles > 0 and result.bound


def test_seed_style_private_example_mt7004(mt7004, rng):
    src0, src1, dst, length = 0x10000000, 0x10001000, 0x10002000, 139
    dy, x = special_inputs(rng, length, np.float32)
    mt7004.write(src0, dy)
    mt7004.write(src1, x)
    result = mt7004.fp_relu_grad_p(src0, src1, dst, length)
    np.testing.assert_array_equal(mt7004.read(dst, length, np.float32),
                                  relu_grad_reference(dy, x).astype(np.float32))
    assert result.cores == (0,) and result.storage == "private"
    assert result.ddr_bytes == 0


@pytest.mark.parametrize("name,chip", [
    ("fp_relu_grad_s", "ft78ne"), ("fp_relu_grad_p", "ft78ne"),
    ("fp_relu_grad_s", "mt7004"), ("fp_relu_grad_p", "mt7004"),
    ("hp_relu_grad_s", "mt7004"), ("hp_relu_grad_p", "mt7004"),
])
def test_numerics_against_float64(name, chip, rng):
    dtype = np.float16 if name.startswith("hp") else np.float32
    dy, x = special_inputs(rng, 3000, dtype)
    out, result = dspsim.simulate(name, dy, x, chip=chip)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, relu_grad_reference(dy, x).astype(dtype))
    assert result.dtype == ("fp16" if dtype == np.float16 else "fp32")


def test_in_place_dst_equal_to_source(ft78ne, rng):
    dy, x = special_inputs(rng, 500, np.float32)
    ft78ne.write(0xA0000000, dy)
    ft78ne.write(0xA1000000, x)
    ft78ne.fp_relu_grad_s(0xA0000000, 0xA1000000, 0xA0000000, 500, 0x3)
    np.testing.assert_array_equal(ft78ne.read(0xA0000000, 500, np.float32),
                                  relu_grad_reference(dy, x).astype(np.float32))


def test_keyword_arguments_and_default_core_mask(ft78ne, rng):
    dy, x = special_inputs(rng, 100, np.float32)
    ft78ne.write(0xA0000000, dy)
    ft78ne.write(0xA1000000, x)
    result = ft78ne.fp_relu_grad_s(src0=0xA0000000, src1=0xA1000000, dst=0xB0000000, length=100)
    assert result.core_mask == 0xff


def test_private_call_on_another_cores_l2(ft78ne, rng):
    dy, x = special_inputs(rng, 64, np.float32)
    base = 0x10800000 + 3 * 0x01000000
    ft78ne.write(base, dy)
    ft78ne.write(base + 0x1000, x)
    result = ft78ne.fp_relu_grad_p(base, base + 0x1000, base + 0x2000, 64)
    assert result.cores == (3,)
    # the same bytes through the local alias, naming the core explicitly
    again = ft78ne.fp_relu_grad_p(0x00800000, 0x00801000, 0x00803000, 64, core=3)
    assert again.cores == (3,)
    np.testing.assert_array_equal(ft78ne.read(base + 0x3000, 64, np.float32),
                                  relu_grad_reference(dy, x).astype(np.float32))


def test_length_zero_is_a_no_op(ft78ne):
    result = ft78ne.fp_relu_grad_s(0xA0000000, 0xA1000000, 0xB0000000, 0, 0xff)
    assert result.cycles == 0 and result.ddr_bytes == 0


def test_timing_only_call_leaves_destination_unwritten(ft78ne, rng):
    dy, x = special_inputs(rng, 256, np.float32)
    ft78ne.write(0xA0000000, dy)
    ft78ne.write(0xA1000000, x)
    timed = ft78ne.call("fp_relu_grad_s", 0xA0000000, 0xA1000000, 0xB0000000, 256, 0xf,
                        numerics=False)
    with pytest.raises(dspsim.AddressError, match="never written"):
        ft78ne.read(0xB0000000, 256, np.float32)
    full = ft78ne.fp_relu_grad_s(0xA0000000, 0xA1000000, 0xB0000000, 256, 0xf)
    assert timed.cycles == full.cycles
