"""Every C example of the operator library's reference pages (but fp_relu_grad_s), literally.

Same chips, addresses, lengths, masks and parameters as the pages write them; the inputs
are written where the example's pointers point, the call uses the C argument order, and
the output is read back from the example's output address.
"""
from __future__ import annotations

import numpy as np
import pytest
from reference import l_relu_grad, sigmoidcrossentropywithlogitsgrad, smoothl1lossgrad

import dspsim
from dspsim.kernels import DTYPES
from dspsim.kernels.check import compare

FP32 = DTYPES["fp32"]


def _check(out, expected):
    check = compare(out, expected, FP32, 2.0)
    assert check.ok, check


def test_mt7004_fp_l_relu_grad_p():
    """000: MT7004 private storage, length 139, alpha 0.01f."""
    chip = dspsim.Chip("mt7004")
    rng = np.random.default_rng(139)
    src0 = rng.standard_normal(139).astype(np.float32)
    src1 = rng.standard_normal(139).astype(np.float32)
    chip.write(0x10000000, src0)
    chip.write(0x10001000, src1)
    result = chip.fp_l_relu_grad_p(0x10000000, 0x10001000, 0x10002000, 139, 0.01)
    out = chip.read(0x10002000, 139, np.float32)
    _check(out, l_relu_grad(src0, src1, 0.01))
    assert result.metadata["cores"] == [0] and result.metadata["core_mask"] is None
    assert result.metadata["params"] == {"alpha": 0.01}
    assert sum(result.bytes_read.values()) == 0  # operands already in L2: no DMA


def test_mt7004_fp_smoothl1lossgrad_s():
    """002: MT7004 shared storage in DDR, length 1000, beta 1.0f, core_mask 0xff."""
    chip = dspsim.Chip("mt7004")
    rng = np.random.default_rng(1000)
    dy, x1, x2 = (rng.standard_normal(1000).astype(np.float32) for _ in range(3))
    chip.write(0xA0000000, dy)
    chip.write(0xA1000000, x1)
    chip.write(0xA2000000, x2)
    # fp_smoothl1lossgrad_s(dy, dx1, x1, x2, length, beta, core_mask): the output is second
    result = chip.fp_smoothl1lossgrad_s(0xA0000000, 0xB0000000, 0xA1000000, 0xA2000000, 1000,
                                        1.0, 0xFF)
    out = chip.read(0xB0000000, 1000, np.float32)
    _check(out, smoothl1lossgrad(dy, x1, x2, 1.0))
    assert result.metadata["operands"] == {"dy": "0xa0000000", "x1": "0xa1000000",
                                           "x2": "0xa2000000", "dx1": "0xb0000000"}
    # MT7004 has 4 cores: bits 4..7 of 0xff are ignored with a warning
    assert result.metadata["cores"] == [0, 1, 2, 3]
    assert len(result.per_core) == 4
    assert sum(core.elements for core in result.per_core) == 1000
    assert any("0xff" in w and "ignored" in w for w in result.warnings)
    # the inputs are untouched
    np.testing.assert_array_equal(chip.read(0xA1000000, 1000, np.float32), x1)


def test_mt7004_fp_smoothl1lossgrad_p():
    """002: MT7004 private storage in L2, length 1000, beta 1.0f."""
    chip = dspsim.Chip("mt7004")
    rng = np.random.default_rng(1001)
    dy, x1, x2 = (rng.standard_normal(1000).astype(np.float32) for _ in range(3))
    chip.write(0x10000000, dy)
    chip.write(0x10001000, x1)
    chip.write(0x10002000, x2)
    result = chip.fp_smoothl1lossgrad_p(0x10000000, 0x10003000, 0x10001000, 0x10002000, 1000,
                                        1.0)
    out = chip.read(0x10003000, 1000, np.float32)
    _check(out, smoothl1lossgrad(dy, x1, x2, 1.0))
    assert result.metadata["cores"] == [0] and not result.warnings


def test_ft78ne_fp_sigmoidcrossentropywithlogitsgrad_s():
    """003: FT78NE shared storage in DDR, length 1024, core_mask 0xff (all 8 cores)."""
    chip = dspsim.Chip("ft78ne")
    rng = np.random.default_rng(1024)
    logits = (rng.standard_normal(1024) * 4).astype(np.float32)
    labels = rng.uniform(0, 1, 1024).astype(np.float32)
    chip.write(0xA0000000, logits)
    chip.write(0xA0100000, labels)
    result = chip.fp_sigmoidcrossentropywithlogitsgrad_s(0xA0000000, 0xA0100000, 0xC0000000,
                                                         1024, 0xFF)
    out = chip.read(0xC0000000, 1024, np.float32)
    _check(out, sigmoidcrossentropywithlogitsgrad(logits, labels))
    assert result.metadata["cores"] == list(range(8)) and not result.warnings
    assert [core.elements for core in result.per_core] == [128] * 8


def test_ft78ne_fp_sigmoidcrossentropywithlogitsgrad_p():
    """003: FT78NE private storage in core 0's L2, length 1024."""
    chip = dspsim.Chip("ft78ne")
    rng = np.random.default_rng(1025)
    logits = (rng.standard_normal(1024) * 4).astype(np.float32)
    labels = rng.uniform(0, 1, 1024).astype(np.float32)
    chip.write(0x10810000, logits)
    chip.write(0x10820000, labels)
    result = chip.fp_sigmoidcrossentropywithlogitsgrad_p(0x10810000, 0x10820000, 0x10830000,
                                                         1024)
    out = chip.read(0x10830000, 1024, np.float32)
    _check(out, sigmoidcrossentropywithlogitsgrad(logits, labels))
    assert result.metadata["cores"] == [0]


@pytest.mark.parametrize("call", [
    lambda c: c.fp_smoothl1lossgrad_p(0xA0000000, 0xB0000000, 0xA1000000, 0xA2000000, 1000, 1.0),
    lambda c: c.fp_smoothl1lossgrad_s(0x10000000, 0x10003000, 0x10001000, 0x10002000, 1000, 1.0,
                                      0xF),
], ids=["p-with-ddr", "s-with-l2"])
def test_seed_addresses_in_the_wrong_storage_version_say_which_to_use(call):
    chip = dspsim.Chip("mt7004")
    for address in (0xA0000000, 0xA1000000, 0xA2000000):
        chip.write(address, np.ones(1000, np.float32))
    for address in (0x10000000, 0x10001000, 0x10002000):
        chip.write(address, np.ones(1000, np.float32))
    with pytest.raises(dspsim.AddressError, match=r"fp_smoothl1lossgrad_[sp]"):
        call(chip)
