"""Measurement files and fit requests that cannot be used: each a DspSimError naming the
line or the key; from the command line, exit status 2 and one line. And the command end
to end, as a user runs it."""
import json
import os
import subprocess
import sys

import pytest

from dspsim.calibration import MeasurementError, calibrate, load_measurements
from dspsim.calibration.fitted_yaml import edit_chip_text, format_number
from dspsim.calibration.measurements import MAX_FILE_BYTES
from dspsim.sim.errors import ArgumentError, ConfigError, DspSimError

GOOD = ("operator,length,core_mask,cycles\nfp_relu_grad_s,4096,0x1,9000\n"
        "fp_relu_grad_s,8192,0x3,9500\n")


def write(tmp_path, text, name="m.csv"):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


@pytest.mark.parametrize("text, expected", [
    ("", "empty"),
    ("# only a comment\n\n", "empty"),
    (b"\x00\x01binary\x00", "binary"),
    (b"operator,length,cycles\n\xff\xfe,1,2\n", "not UTF-8"),
    ("operator,length,core_mask,cycles\n", "no measured rows"),
    ("operator,length,cycles,colour\nfp_relu_grad_s,64,100,red\n",
     "line 1: unknown column 'colour'"),
    ("operator;length;cycles\nfp_relu_grad_s;64;100\n", "separate the columns with commas"),
    ("operator,length\nfp_relu_grad_s,64\n", "missing column 'cycles'"),
    ("operator,length,cycles,length\nfp_relu_grad_s,64,1,2\n", "appears twice"),
    ("operator,length,cycles\nfp_relu_gard_s,64,100\n",
     "line 2: unknown operator 'fp_relu_gard_s'; did you mean fp_relu_grad_s"),
    ("operator,length,cycles\nfp_relu_grad_s,64,0\n", "line 2: cycles 0 must be > 0"),
    ("operator,length,cycles\nfp_relu_grad_s,64,-5\n", "line 2: cycles -5 must be > 0"),
    ("operator,length,cycles\nfp_relu_grad_s,64,fast\n", "line 2: cycles 'fast' is not a number"),
    ("operator,length,cycles\nfp_relu_grad_s,64,nan\n", "line 2: cycles 'nan' is not a number"),
    ("operator,length,cycles\nfp_relu_grad_s,6.5,100\n", "line 2: length '6.5'"),
    ("operator,length,cycles\nfp_relu_grad_s,0,100\n", "line 2: length 0 must be > 0"),
    ("operator,length,cycles\n\nfp_relu_grad_s,64\n", "line 3: 2 cells where the header has 3"),
    ("operator,length,cycles,core_mask\nfp_relu_grad_s,64,100,0\n",
     "line 2: core_mask 0 selects no core"),
    ("operator,length,cycles,core_mask\nfp_relu_grad_p,64,100,0x3\n", "runs on one core"),
    ("operator,length,cycles,region\nfp_relu_grad_s,64,100,l2\n", "use fp_relu_grad_p"),
    ("operator,length,cycles,region\nfp_relu_grad_p,64,100,ddr\n", "use fp_relu_grad_s"),
    ("operator,length,cycles,region\nfp_relu_grad_s,64,100,flash\n",
     "region 'flash' is not one of"),
    ("operator,length,cycles,dtype\nfp_relu_grad_s,64,100,fp16\n", "dtype fp16 disagrees"),
    ("operator,length,cycles,alpha\nfp_relu_grad_s,64,100,0.1\n", "has no parameter 'alpha'"),
    ("operator,length,cycles,params\nfp_l_relu_grad_s,64,100,alpha\n", "write NAME=VALUE"),
])
def test_bad_measurement_files(tmp_path, text, expected):
    with pytest.raises(MeasurementError, match=None) as caught:
        load_measurements(write(tmp_path, text))
    assert expected in str(caught.value)
    assert str(tmp_path) in str(caught.value)


def test_huge_file(tmp_path):
    path = write(tmp_path, "operator,length,cycles\n" + "fp_relu_grad_s,64,100\n" *
                 (MAX_FILE_BYTES // 20))
    with pytest.raises(MeasurementError, match="larger than"):
        load_measurements(path)


def test_what_a_file_may_hold(tmp_path):
    text = ("# synthetic\nOp, Length, Mask, Cycles, Region, dtype, params, negative_slope\n"
            "relu_grad,2^12,0xff,9000,shared_sram,fp32,,\n"
            "gelu_grad,1024,,700,l2,,,\n"
            "fp_l_relu_s,0x400,3,800.5,ddr,,,0.2\n"
            "fp_l_relu_grad_s,1024,1,800,,,alpha=0.3,\n")
    rows = load_measurements(write(tmp_path, text))
    assert [r.operator for r in rows] == ["fp_relu_grad_s", "fp_gelu_grad_p", "fp_l_relu_s",
                                          "fp_l_relu_grad_s"]
    assert [r.line for r in rows] == [3, 4, 5, 6]
    assert rows[0].length == 4096 and rows[0].core_mask == 0xFF
    assert rows[0].region == "shared_sram" and rows[1].region == "l2"
    assert rows[2].params == (("negative_slope", 0.2),) and rows[3].params == (("alpha", 0.3),)
    assert rows[2].cycles == 800.5


@pytest.mark.parametrize("text, keys, expected", [
    ("operator,length,cycles\nhp_relu_grad_s,64,100\nfp_relu_grad_s,64,100\n", ["clock_mhz"],
     "line 2: FT78NE cannot run hp_relu_grad_s"),
    ("operator,length,cycles,core_mask\nfp_relu_grad_s,64,100,0x100\n", ["clock_mhz"],
     "line 2: FT78NE cannot run fp_relu_grad_s n=64 mask=0x100"),
    ("operator,length,cycles,region\nfp_relu_grad_s,4194304,100,shared_sram\n", ["clock_mhz"],
     "line 2: FT78NE cannot run"),
    ("operator,length,cycles\nfp_relu_grad_p,1048576,100\n", ["clock_mhz"],
     "line 2: FT78NE cannot run fp_relu_grad_p"),
    (GOOD, ["dma.setup_cycles", "call.launch_cycles", "clock_mhz"], "2 measured rows for 3 keys"),
])
def test_rows_the_chip_cannot_run_and_too_few_rows(tmp_path, text, keys, expected):
    with pytest.raises(DspSimError) as caught:
        calibrate("ft78ne", write(tmp_path, text), keys)
    assert expected in str(caught.value)


@pytest.mark.parametrize("keys, bounds, error, expected", [
    (["name"], None, ConfigError, "holds 'FT78NE', not a number"),
    (["dtypes"], None, ConfigError, "not a number"),
    (["memory.ddr.bandwidth"], None, ConfigError, "no 'bandwidth' under 'memory.ddr'"),
    (["vector.units.sfu"], None, ConfigError, "no 'sfu'"),
    (["vector.instructions.fma"], None, ConfigError, "not a number"),
    (["dma.setup_cycles", "dma.setup_cycles"], None, ArgumentError, "given twice"),
    ([], None, ArgumentError, "names no key"),
    (["a..b"], None, ArgumentError, "not a dotted path"),
    (["dma.setup_cycles"], {"call.launch_cycles": (1, 2)}, ArgumentError, "not a key being fitted"),
    (["dma.setup_cycles"], {"dma.setup_cycles": (5, 1)}, ArgumentError, "0 < LO < HI"),
    (["memory.ddr.efficiency"], {"memory.ddr.efficiency": (0.5, 2)}, ArgumentError,
     "the chip cannot have 2 there"),
])
def test_keys_that_cannot_be_fitted(tmp_path, keys, bounds, error, expected):
    with pytest.raises(error) as caught:
        calibrate("ft78ne", write(tmp_path, GOOD), keys, bounds)
    assert expected in str(caught.value)


def test_format_number_reads_back():
    import yaml
    for value in (1e-5, 0.65000123, 123456789.0, 12.0, 3.25e20):
        text = format_number(value)
        assert isinstance(yaml.safe_load(text), (int, float))
        assert yaml.safe_load(text) == pytest.approx(value, rel=1e-6)


def test_an_edit_that_would_change_a_shared_value_is_refused():
    from dspsim.calibration.fitted_yaml import _check
    for key in ("a", "b"):
        with pytest.raises(ConfigError, match="anchor, alias"):
            edit_chip_text("a: &x 5\nb: *x\n", "t", {key: "6"}, {key: "fitted"})
    with pytest.raises(ConfigError, match="alias or merge"):
        _check("t", "a: 5\nb: 5\n", "a: 6\nb: 6\n", {"a": "6"})


def test_crlf_files_keep_their_line_ends():
    text = "a: 5   # old\r\nb: 2\r\n"
    edited = edit_chip_text(text, "t", {"a": "7"}, {"a": "new"})
    assert edited == "a: 7   # new; before: old\r\nb: 2\r\n"


def run_cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "dspsim", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300)


def test_cli_end_to_end(tmp_path):
    from dspsim.calibration import calls, synthetic_measurements, write_measurements
    rows = calls(["fp_relu_grad_s"], [4096, 16384], [0x1, 0xF])
    write_measurements(tmp_path / "measured.csv",
                       synthetic_measurements("mt7004", rows, {"dma.setup_cycles": 260}))
    done = run_cli("calibrate", "--chip", "mt7004", "--measured", "measured.csv", "--fit",
                   "dma.setup_cycles", "--bounds", "dma.setup_cycles=50:600", "--out",
                   "fits/fitted.yaml", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    (key,) = data["keys"]
    assert key["key"] == "dma.setup_cycles" and key["pinned"]
    assert key["fitted"] == pytest.approx(260, rel=0.02)
    assert (key["lower"], key["upper"]) == (pytest.approx(50), pytest.approx(600))
    assert len(data["rows"]) == 4 and data["max_error_after"] < 0.005
    assert data["out"] == "fits/fitted.yaml" and data["plot"] == "fits/fitted.png"
    assert (tmp_path / "fits" / "fitted.png").read_bytes()[:4] == b"\x89PNG"
    fitted = (tmp_path / "fits" / "fitted.yaml").read_text()
    assert "fitted to measured.csv" in fitted
    # the fitted chip runs
    again = run_cli("run", "fp_relu_grad_s", "--chip", "fits/fitted.yaml", "--length", "4096",
                    "--no-trace", "--json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    # the text report
    text = run_cli("calibrate", "--chip", "mt7004", "--measured", "measured.csv", "--fit",
                   "dma.setup_cycles", "--no-plot", cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert "fitted keys" in text.stdout and "mean |error|" in text.stdout
    assert not os.path.exists(tmp_path / "calibration.png")


@pytest.mark.parametrize("args, expected", [
    (["--fit", "name"], "not a number"),
    (["--fit", "dma.setup_cycles", "--bounds", "dma.setup_cycles=5"], "expected KEY=LO:HI"),
    (["--fit", "dma.setup_cycles", "--out", "."], "is a folder"),
])
def test_cli_errors_are_one_line_and_status_2(tmp_path, args, expected):
    write(tmp_path, GOOD, "measured.csv")
    done = run_cli("calibrate", "--chip", "ft78ne", "--measured", "measured.csv", *args,
                   cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and expected in done.stderr
    assert not list(tmp_path.glob("*.png"))


def test_cli_bad_file_names_the_line(tmp_path):
    write(tmp_path, "operator,length,cycles\nfp_relu_grad_s,64,100\nfp_nope_s,64,1\n",
          "measured.csv")
    done = run_cli("calibrate", "--chip", "ft78ne", "--measured", "measured.csv", "--fit",
                   "dma.setup_cycles", cwd=tmp_path)
    assert done.returncode == 2 and "line 3: unknown operator 'fp_nope_s'" in done.stderr
    assert done.stderr.count("\n") == 1
