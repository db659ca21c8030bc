"""The worked example kernel: its numerics hold in every dtype, and fusing pays."""
from pathlib import Path

import numpy as np
import pytest

import dspsim
from dspsim.kernels.check import compare

HERE = Path(__file__).resolve().parent
KERNEL_FILE = HERE / "bias_gelu_grad.py"


@pytest.mark.parametrize("chip_name,prefix", [("ft78ne", "fp"), ("mt7004", "fp"),
                                              ("mt7004", "hp")])
def test_numerics_within_the_declared_bound(chip_name, prefix):
    chip = dspsim.Chip(chip_name, kernels=KERNEL_FILE)
    cname = chip.resolve(f"{prefix}_bias_gelu_grad_s")
    rng = np.random.default_rng(7)
    n = 4096
    inputs = cname.operator.random_inputs(rng, n)
    # the edges too: large |x + b|, cancellation near gelu' = 0 at h = -0.75, infinities
    inputs["src1"][:6] = [50.0, -50.0, -0.75, 1e4, np.inf, -np.inf]
    inputs["src2"][:6] = [0.0, 0.0, 0.0, -1e4, 0.0, 0.0]
    dtype = cname.dtype.numpy
    arrays = [inputs[name].astype(dtype) for name in cname.operator.inputs]
    addresses = [0x80000000 + k * 0x100000 for k in range(4)]
    for address, array in zip(addresses[:-1], arrays, strict=True):  # the last: the output
        chip.write(address, array)
    chip.call(cname.name, *addresses, n)
    got = chip.read(addresses[3], n, dtype)
    wide = [a.astype(np.float64) for a in arrays]
    check = compare(got, cname.operator.reference(*wide),
                    cname.dtype, cname.operator.tolerance(cname.dtype, wide, {}))
    assert check.ok, check


def test_fusing_saves_the_round_trip_of_x_plus_b():
    """One fused pass moves 4 operands; an add followed by gelu_grad moves 3 + 3: at a
    DDR-bound length the fused call must take fewer cycles than the pair."""
    chip = dspsim.Chip("ft78ne", kernels=KERNEL_FILE)
    n = 1 << 20
    a, b, c, d = (0x80000000 + k * (n * 4) for k in range(4))
    for address in (a, b, c):
        chip.zero(address, n, "fp32")
    fused = chip.call("fp_bias_gelu_grad_s", a, b, c, d, n, numerics=False)
    # the unfused pair: x + b (a library-free stand-in: gelu_grad with the same traffic as
    # an add is relu_grad's 2-in 1-out), then gelu_grad
    add = chip.call("fp_relu_grad_s", b, c, d, n, numerics=False)
    chip.zero(d, n, "fp32")
    grad = chip.call("fp_gelu_grad_s", a, d, b, n, numerics=False)
    assert fused.bound == "DDR"
    assert fused.ddr_bytes == 4 * n * 4
    assert fused.cycles < add.cycles + grad.cycles


def test_declared_mix_is_gelu_grad_plus_a_load_and_an_add():
    chip = dspsim.Chip("ft78ne", kernels=KERNEL_FILE)
    ours = chip.resolve("fp_bias_gelu_grad_s").operator.mix
    library = chip.resolve("fp_gelu_grad_s").operator.mix
    difference = {k: ours.get(k, 0) - library.get(k, 0) for k in set(ours) | set(library)}
    assert {k: v for k, v in difference.items() if v} == {"load": 1, "add": 1}
