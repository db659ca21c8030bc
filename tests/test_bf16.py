"""dtype support comes from the chip config only.

A copy of configs/mt7004.yaml with bf16 added to ``dtypes`` runs every ``bf_`` call (numpy
via ml_dtypes) without any code change; the packaged chips, which lack bf16, refuse it
with a DTypeError that names the chip's dtypes.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import yaml
from reference import REFERENCES
from test_operators import PARAMS, assert_matches_reference, make_inputs

import dspsim
from dspsim import kernels
from dspsim.sim.chip.load import packaged_chips

BF16 = np.dtype(ml_dtypes.bfloat16)


@pytest.fixture(scope="module")
def bf16_chip_path(tmp_path_factory):
    with open(packaged_chips()["mt7004"], encoding="utf-8") as stream:
        description = yaml.safe_load(stream)
    assert "bf16" not in description["dtypes"]
    description["dtypes"] = list(description["dtypes"]) + ["bf16"]
    description["name"] = "MT7004-BF16"
    path = tmp_path_factory.mktemp("chips") / "mt7004_bf16.yaml"
    path.write_text(yaml.safe_dump(description), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("storage", ["s", "p"])
@pytest.mark.parametrize("stem", sorted(kernels.OPERATORS))
def test_bf16_calls_run_from_config_alone(bf16_chip_path, stem, storage):
    chip = dspsim.Chip(bf16_chip_path)
    name = f"bf_{stem}_{storage}"
    assert name in chip.operator_names()
    rng = np.random.default_rng(sum(map(ord, name)))
    for params in PARAMS.get(stem, [{}]):
        inputs = make_inputs(stem, params, BF16, rng)
        out, result = dspsim.simulate(name, *inputs, chip=chip, **params)
        assert out.dtype == BF16
        assert result.metadata["dtype"] == "bf16"
        assert_matches_reference(stem, params, "bf16", inputs, out)


def test_bf16_uses_the_lanes_of_its_width(bf16_chip_path):
    chip = dspsim.Chip(bf16_chip_path)
    x = np.linspace(-4, 4, 4096).astype(BF16)
    _, bf = dspsim.simulate("bf_gelu_grad_p", x, x, chip=chip)
    _, hp = dspsim.simulate("hp_gelu_grad_p", x.astype(np.float16), x.astype(np.float16), chip=chip)
    _, fp = dspsim.simulate("fp_gelu_grad_p", x.astype(np.float32), x.astype(np.float32), chip=chip)
    assert bf.cycles == hp.cycles < fp.cycles  # 16-bit lanes: twice fp32's per iteration


@pytest.mark.parametrize("chip_name", ["ft78ne", "mt7004"])
def test_a_dtype_the_chip_lacks_is_a_clear_error(chip_name):
    chip = dspsim.Chip(chip_name)
    x = np.ones(8, BF16)
    with pytest.raises(dspsim.DTypeError) as error:
        dspsim.simulate("bf_swish_grad_s", x, x, chip=chip)
    message = str(error.value)
    assert "does not support bf16" in message
    for dtype in chip.config.dtypes:
        assert dtype in message
    assert "fp_swish_grad_s" in message  # says what to call instead
    assert not any(n.startswith("bf_") for n in chip.operator_names())


def test_fp16_is_refused_on_ft78ne_with_the_fp32_alternative():
    with pytest.raises(dspsim.DTypeError, match=r"fp_smoothl1lossgrad_p"):
        dspsim.Chip("ft78ne").resolve("hp_smoothl1lossgrad_p")


def test_reference_table_covers_every_operator():
    assert set(REFERENCES) == set(kernels.OPERATORS)
