"""The command line, run as a user runs it: in a subprocess."""
import json
import subprocess
import sys

from dspsim.traces.formats import load_trace, validate_trace


def dspsim_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "dspsim", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300)


def test_run_prints_report_and_writes_trace_to_default_folder(tmp_path):
    proc = dspsim_cli("run", "fp_relu_grad_s", "--chip", "ft78ne", "--length", "2^16",
                      "--core-mask", "0xff", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for fragment in ("cycles", "µs", "GB/s", "% of", "bounded by", "per core",
                     "numerics vs float64 reference: ok", "max abs error",
                     "trace written to traces/"):
        assert fragment in out, fragment
    traces = list((tmp_path / "traces").iterdir())
    assert [t.suffix for t in traces] == [".pftrace"]  # Perfetto's protobuf by default
    assert validate_trace(load_trace(traces[0])) == []


def test_run_is_reproducible_with_a_seed(tmp_path):
    a = dspsim_cli("run", "hp_relu_grad_s", "--chip", "mt7004", "--length", "5000", "--seed", "3",
                   "--trace", str(tmp_path / "a.json"))
    b = dspsim_cli("run", "hp_relu_grad_s", "--chip", "mt7004", "--length", "5000", "--seed", "3",
                   "--trace", str(tmp_path / "b.json"))
    assert a.returncode == b.returncode == 0
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


def test_run_warns_about_mask_bits_above_core_count(tmp_path):
    proc = dspsim_cli("run", "fp_relu_grad_s", "--chip", "mt7004", "--length", "1000",
                      "--core-mask", "0xff", "--no-trace", cwd=tmp_path)
    assert proc.returncode == 0
    assert "warning:" in proc.stdout and "ignored" in proc.stdout


def test_bad_input_exits_2_with_a_message():
    proc = dspsim_cli("run", "hp_relu_grad_s", "--chip", "ft78ne", "--length", "10")
    assert proc.returncode == 2
    assert "does not support fp16" in proc.stderr and "Traceback" not in proc.stderr
    proc = dspsim_cli("run", "fp_relu_grd_s", "--length", "10")
    assert proc.returncode == 2 and "did you mean fp_relu_grad_s" in proc.stderr
    proc = dspsim_cli("run", "fp_relu_grad_s", "--chip", "nosuchchip", "--length", "10")
    assert proc.returncode == 2 and "known chips" in proc.stderr


def test_chips_and_ops_list_what_exists():
    chips = dspsim_cli("chips")
    assert chips.returncode == 0 and "FT78NE" in chips.stdout and "MT7004" in chips.stdout
    ops = dspsim_cli("ops")
    assert ops.returncode == 0 and "relu_grad" in ops.stdout and "cycles" in ops.stdout


def test_run_at_detailed_fidelity(tmp_path):
    proc = dspsim_cli("run", "fp_relu_grad_s", "--length", "4096", "--fidelity", "detailed",
                      "--trace", str(tmp_path / "d.json"))
    assert proc.returncode == 0, proc.stderr
    assert "detailed fidelity" in proc.stdout
    assert json.loads((tmp_path / "d.json").read_text())["metadata"]["fidelity"] == "detailed"


def test_negative_length_is_refused_before_any_input_is_made():
    proc = dspsim_cli("run", "fp_relu_grad_s", "--length", "-5")
    assert proc.returncode == 2
    assert "length -5 must be >= 0" in proc.stderr and "Traceback" not in proc.stderr
