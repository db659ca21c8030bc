"""Calibration recovers chips perturbed on purpose from measurements the simulator makes.

The measurements come from the packaged chips with a few keys changed (overrides by key
path); the fit starts from the unchanged chip and must find the changed values again,
within tolerances stated per test. Small lengths keep every fit to a few seconds.
"""
import math

import pytest

from dspsim.calibration import calibrate, calls, synthetic_measurements, write_measurements
from dspsim.calibration.fitted_yaml import fitted_chip_text
from dspsim.sim.chip.load import config_from_dict, parse_chip_yaml
from dspsim.sim.chip.overrides import get_value

SHARED = calls(["fp_relu_grad_s", "fp_gelu_grad_s"], [2048, 8192, 32768],
               [0x1, 0xF])
PRIVATE = calls(["fp_gelu_grad_p"], [2048], [None])


def measured(tmp_path, chip, overrides, rows, noise=0.0, seed=3):
    path = tmp_path / "measured.csv"
    write_measurements(path, synthetic_measurements(chip, rows, overrides, noise=noise,
                                                    seed=seed),
                       header="synthetic: made by the simulator")
    return path


def by_key(result):
    return {k.key: k for k in result.keys}


def test_recovers_three_keys_without_noise_and_flags_a_key_no_row_feels(tmp_path):
    truth = {"memory.ddr.efficiency": 0.6, "dma.setup_cycles": 300.0,
             "call.launch_cycles": 420.0}
    path = measured(tmp_path, "ft78ne", truth, SHARED + PRIVATE)
    result = calibrate("ft78ne", path, [*truth, "memory.shared_sram.bandwidth_gbps"])
    keys = by_key(result)
    # tolerance: every perturbed key within 2% of the value the measurements were made with
    for key, value in truth.items():
        assert keys[key].pinned, keys[key].reason
        assert keys[key].written
        assert keys[key].fitted == pytest.approx(value, rel=0.02), key
    # every row is in DDR: nothing pins the shared SRAM's bandwidth, so it is left alone
    sram = keys["memory.shared_sram.bandwidth_gbps"]
    assert not sram.pinned and "no row is sensitive" in sram.reason
    assert not sram.written and sram.fitted == sram.original == 64.0
    assert "memory.shared_sram.bandwidth_gbps" not in result.values
    # the rows: far off before, within 0.5% after (cycles are whole numbers)
    assert result.mean_error_before > 0.1
    assert result.max_error_after < 0.005
    assert len(result.rows) == len(SHARED + PRIVATE)


def test_recovers_with_noise_within_stated_tolerances(tmp_path):
    truth = {"memory.ddr.peak_bandwidth_gbps": 19.2, "dma.setup_cycles": 240.0}
    rows = calls(["fp_relu_grad_s", "hp_gelu_grad_s"], [4096, 16384, 65536], [0x1, 0x3, 0xF])
    path = measured(tmp_path, "mt7004", truth, rows, noise=0.02, seed=11)
    result = calibrate("mt7004", path, list(truth))
    keys = by_key(result)
    # 2% multiplicative noise on 18 rows: the DDR bandwidth (which bounds most rows)
    # within 2%, the setup cycles (a smaller share of each call) within 15%
    assert keys["memory.ddr.peak_bandwidth_gbps"].fitted == pytest.approx(19.2, rel=0.02)
    assert keys["dma.setup_cycles"].fitted == pytest.approx(240.0, rel=0.15)
    assert all(k.pinned for k in result.keys)
    # the rows fit to about the noise, and much better than before
    assert result.mean_error_after < 0.03 < result.mean_error_before
    # each key's standard error is reported and covers the noise-sized miss
    for key, value in truth.items():
        miss = abs(math.log(keys[key].fitted / value))
        assert keys[key].std_error > 0 and miss < 4 * keys[key].std_error + 0.01


def test_collinear_keys_are_flagged(tmp_path):
    """Launch and barrier cycles both add a fixed amount to every call: the rows determine
    their sum only."""
    truth = {"call.launch_cycles": 450.0}
    path = measured(tmp_path, "mt7004", truth, calls(["fp_relu_grad_s"], [4096, 16384],
                                                     [0x1, 0xF]))
    result = calibrate("mt7004", path, ["call.launch_cycles", "call.barrier_cycles"])
    keys = by_key(result)
    for key, other in (("call.launch_cycles", "call.barrier_cycles"),
                       ("call.barrier_cycles", "call.launch_cycles")):
        assert not keys[key].pinned
        assert "collinear" in keys[key].reason and other in keys[key].reason
    # the sum is what the rows see, and it is found
    total = keys["call.launch_cycles"].fitted + keys["call.barrier_cycles"].fitted
    assert total == pytest.approx(450.0 + 200.0, rel=0.03)


def test_fitted_chip_file_keeps_the_text_and_says_where_values_came_from(tmp_path):
    truth = {"dma.setup_cycles": 260.0}
    path = measured(tmp_path, "mt7004", truth, calls(["fp_relu_grad_s"], [4096, 16384],
                                                     [0x1, 0x3]))
    result = calibrate("mt7004", path, list(truth))
    text = fitted_chip_text(result)
    old_lines, new_lines = result.chip_text.split("\n"), text.split("\n")
    assert len(old_lines) == len(new_lines)
    changed = [(a, b) for a, b in zip(old_lines, new_lines, strict=True) if a != b]
    assert len(changed) == 1
    before, after = changed[0]
    assert before.startswith("  setup_cycles: 150") and "# assumed" in before
    assert after.startswith("  setup_cycles: 2")
    assert "fitted to measured.csv" in after and "rms error" in after and "was 150" in after
    assert after.endswith("before: assumed")
    raw = parse_chip_yaml(text, "fitted")
    assert get_value(raw, "dma.setup_cycles") == pytest.approx(260.0, rel=0.02)
    config_from_dict(raw, "fitted")


def test_whole_number_keys_are_fitted_as_whole_numbers(tmp_path):
    """Burst size moves short transfers in steps, so the fit is not expected to land on
    the exact value; it must stay a whole number within the bounds and improve the rows."""
    truth = {"dma.burst_bytes": 512}
    rows = calls(["fp_relu_grad_s"], [1000, 4096, 12345], [0x1, 0x3, 0xF])
    path = measured(tmp_path, "mt7004", truth, rows)
    result = calibrate("mt7004", path, ["dma.burst_bytes"], {"dma.burst_bytes": (64, 2048)})
    (key,) = result.keys
    assert key.whole and key.fitted == int(key.fitted) and 64 <= key.fitted <= 2048
    assert key.lower == pytest.approx(64) and key.upper == pytest.approx(2048)
    assert result.max_error_after < result.max_error_before
    text = fitted_chip_text(result)
    assert get_value(parse_chip_yaml(text, "x"), "dma.burst_bytes") == key.fitted
    assert isinstance(get_value(parse_chip_yaml(text, "x"), "dma.burst_bytes"), int)


def test_a_key_the_rows_bound_from_one_side_keeps_its_fitted_value(tmp_path):
    """Three DMA engines per core where the chip file says two: with three or more, the
    cores are bound elsewhere, so the rows say "at least three" and no more."""
    truth = {"dma.engines_per_core": 3}
    rows = calls(["fp_relu_grad_s", "fp_l_relu_s"], [4096, 65536], [0x1, 0x3, 0xF])
    path = measured(tmp_path, "mt7004", truth, rows)
    result = calibrate("mt7004", path, list(truth), {"dma.engines_per_core": (1, 8)})
    (key,) = result.keys
    assert key.fitted >= 3 and key.written and not key.pinned
    assert "bound the key from one side" in key.reason
    assert result.max_error_after < 1e-3 < result.max_error_before


def test_operands_in_shared_sram_calibrate_its_bandwidth(tmp_path):
    """Rows whose operands are in shared SRAM feel its bandwidth; the DDR rows do not."""
    from dataclasses import replace
    rows = calls(["fp_relu_grad_s"], [8192, 32768], [0x1, 0xF])
    rows = rows + [replace(r, region="shared_sram") for r in rows]
    truth = {"memory.shared_sram.bandwidth_gbps": 20.0}
    path = measured(tmp_path, "mt7004", truth, rows)
    assert "shared_sram" in path.read_text()
    result = calibrate("mt7004", path, list(truth))
    (key,) = result.keys
    assert key.pinned and key.fitted == pytest.approx(20.0, rel=0.02)
    sram_rows = [r for r in result.rows if r.measurement.region == "shared_sram"]
    ddr_rows = [r for r in result.rows if r.measurement.region == "ddr"]
    assert all(abs(r.error_before) > 0.05 for r in sram_rows)
    assert all(r.error_before == 0 and r.error_after == 0 for r in ddr_rows)
