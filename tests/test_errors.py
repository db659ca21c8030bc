"""Every bad input gets a clear error naming the value and the fix, and memory is untouched."""
from pathlib import Path

import numpy as np
import pytest

import dspsim
from dspsim import AddressError, ArgumentError, ConfigError, DTypeError

SRC0, SRC1, DST = 0xA0000000, 0xA1000000, 0xB0000000


@pytest.fixture
def chip():
    c = dspsim.Chip("ft78ne")
    c.write(SRC0, np.linspace(-1, 1, 4096, dtype=np.float32))
    c.write(SRC1, np.linspace(1, -1, 4096, dtype=np.float32))
    c.write(DST, np.full(4096, 42, np.float32))  # a sentinel that must survive bad calls
    return c


def untouched(chip):
    return np.all(chip.read(DST, 4096, np.float32) == 42)


def test_unknown_operator_suggests_closest_names(chip):
    with pytest.raises(ArgumentError, match="unknown operator 'fp_relu_grd_s'.*fp_relu_grad_s"):
        chip.fp_relu_grd_s(SRC0, SRC1, DST, 16, 1)


def test_hp_on_ft78ne_names_the_chips_dtypes(chip):
    with pytest.raises(DTypeError, match="FT78NE does not support fp16; its dtypes are fp32"):
        chip.hp_relu_grad_s(SRC0, SRC1, DST, 16, 1)
    assert untouched(chip)


def test_negative_length(chip):
    with pytest.raises(ArgumentError, match=r"length=-5 must be >= 0"):
        chip.fp_relu_grad_s(SRC0, SRC1, DST, -5, 1)


@pytest.mark.parametrize("mask", [0, 0x100, 0xF00])
def test_core_mask_selecting_no_core(chip, mask):
    with pytest.raises(ArgumentError, match="selects no core of FT78NE.*0xff"):
        chip.fp_relu_grad_s(SRC0, SRC1, DST, 16, mask)
    assert untouched(chip)


def test_core_mask_bits_above_core_count_warn(mt7004):
    mt7004.write(SRC0, np.ones(64, np.float32))
    mt7004.write(SRC1, np.ones(64, np.float32))
    result = mt7004.fp_relu_grad_s(SRC0, SRC1, DST, 64, 0xff)
    assert result.cores == (0, 1, 2, 3)
    assert len(result.warnings) == 1 and "0xff" in result.warnings[0]
    assert "ignored" in result.warnings[0]


def test_private_call_given_ddr_addresses_says_use_shared(chip):
    with pytest.raises(AddressError, match="src0 at 0xa0000000 is in ddr.*use fp_relu_grad_s"):
        chip.fp_relu_grad_p(SRC0, SRC1, DST, 16)
    assert untouched(chip)


def test_shared_call_given_l2_addresses_says_use_private(chip):
    chip.write(0x10810000, np.ones(16, np.float32))
    with pytest.raises(AddressError, match="private L2.*use fp_relu_grad_p"):
        chip.fp_relu_grad_s(0x10810000, SRC1, DST, 16, 1)


def test_private_operands_split_across_two_cores(chip):
    chip.write(0x10810000, np.ones(16, np.float32))
    chip.write(0x11810000, np.ones(16, np.float32))
    with pytest.raises(AddressError, match="split across cores"):
        chip.fp_relu_grad_p(0x10810000, 0x11810000, 0x10820000, 16)


def test_dst_partially_overlapping_a_source(chip):
    with pytest.raises(AddressError, match="partially overlaps src1"):
        chip.fp_relu_grad_s(SRC0, SRC1, SRC1 + 16, 1024, 0xff)
    assert np.all(chip.read(SRC1, 4096, np.float32) == np.linspace(1, -1, 4096, dtype=np.float32))


def test_operand_running_past_region_end(chip):
    chip.write(0xFFFFFF00, np.ones(64, np.float32))
    with pytest.raises(AddressError, match="past the end of ddr"):
        chip.fp_relu_grad_s(0xFFFFFF00, SRC1, DST, 128, 1)
    assert untouched(chip)


def test_inputs_never_written(chip):
    with pytest.raises(AddressError, match="never written"):
        chip.fp_relu_grad_s(0xA2000000, SRC1, DST, 16, 1)
    assert untouched(chip)


def test_argument_count_and_types(chip):
    with pytest.raises(ArgumentError, match="takes 5 arguments"):
        chip.fp_relu_grad_s(SRC0, SRC1, DST, 16, 1, 2)
    with pytest.raises(ArgumentError, match="missing argument length"):
        chip.fp_relu_grad_s(SRC0, SRC1, DST)
    with pytest.raises(ArgumentError, match="length=16.5 must be an integer"):
        chip.fp_relu_grad_s(SRC0, SRC1, DST, 16.5, 1)
    with pytest.raises(ArgumentError, match="must be an address"):
        chip.fp_relu_grad_s("src0", SRC1, DST, 16, 1)
    with pytest.raises(ArgumentError, match="no argument 'mask'"):
        chip.fp_relu_grad_s(SRC0, SRC1, DST, 16, mask=1)


def test_config_file_with_errors(tmp_path):
    from dspsim.sim.chip.load import packaged_chips
    path = tmp_path / "chip.yaml"
    text = Path(packaged_chips()["ft78ne"]).read_text()
    path.write_text(text.replace("cores: 8 ", "cores: 0 "))
    with pytest.raises(ConfigError, match=r"chip.yaml: cores: must be > 0, got 0"):
        dspsim.Chip(str(path))
    path.write_text("name: X\ncores: 4\n")
    with pytest.raises(ConfigError, match=r"chip.yaml: clock_mhz: missing key"):
        dspsim.Chip(str(path))


def test_every_error_is_a_dspsim_error():
    for cls in (AddressError, ArgumentError, ConfigError, DTypeError, dspsim.CapacityError):
        assert issubclass(cls, dspsim.DspSimError)


def test_private_operands_too_large_for_l2_is_a_capacity_error():
    with pytest.raises(dspsim.CapacityError, match="do not fit.*fp_relu_grad_s"):
        dspsim.simulate("fp_relu_grad_p", np.ones(100_000), np.ones(100_000), chip="ft78ne")
