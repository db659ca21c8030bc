"""Hostile input to program files, calibration and the aclnn runtime.

Each is answered by a DspSimError (the command: exit status 2 and one line) or, for the
aclnn facade, by an error status with nothing changed; never a traceback, a hang or a
silently wrong result.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from terminal import dspsim_cli, one_line_error

from dspsim import aclnn
from dspsim.aclnn import ACLNN_ERR_PARAM_INVALID, ACLNN_SUCCESS
from dspsim.calibration.determination import determination
from dspsim.calibration.measurements import load_measurements
from dspsim.chip import Chip
from dspsim.programs.file import ProgramFileError
from dspsim.programs.loader import load_program
from dspsim.sim.errors import DspSimError

PROGRAM = """\
chip: ft78ne
parameters: {n: 256, mask: 0xff}
buffers:
  dy: {length: $n, init: {random: {seed: 1}}}
  x:  {length: $n, init: INIT}
  dx: {length: $n}
streams:
  main:
    - call: fp_relu_grad_s
      args: [dy, x, dx, $n, $mask]
"""


def program(tmp_path, init="{random: {seed: 2}}", text=None):
    path = tmp_path / "p.yaml"
    path.write_text(text if text is not None else PROGRAM.replace("INIT", init))
    return str(path)


# --------------------------------------------------------------------------- program files
@pytest.mark.parametrize("low, high", [("-.inf", ".inf"), ("-1.0e308", "1.0e308"),
                                       (".nan", "1"), ("-1.0e39", "1")])
def test_random_bounds_beyond_range_are_refused(tmp_path, low, high):
    path = program(tmp_path, f"{{random: {{seed: 2, low: {low}, high: {high}}}}}")
    with pytest.raises(ProgramFileError, match=r"buffers\.x\.init\.random"):
        load_program(path)


def test_npy_values_beyond_the_dtype_are_refused(tmp_path):
    np.save(tmp_path / "big.npy", np.full(256, 1e300))
    with pytest.raises(ProgramFileError, match=r"1e\+300, beyond the largest fp32"):
        load_program(program(tmp_path, "{npy: big.npy}"))


def test_npy_nan_and_infinities_are_data(tmp_path):
    data = np.linspace(-1, 1, 256)
    data[:3] = [np.nan, np.inf, -np.inf]
    np.save(tmp_path / "x.npy", data)
    result = load_program(program(tmp_path, "{npy: x.npy}")).run()
    assert result.calls[0].result.length == 256


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_npy_that_is_not_a_regular_file_is_refused_without_waiting(tmp_path, kind):
    target = tmp_path / "x.npy"
    if kind == "fifo":
        os.mkfifo(target)  # reading it would wait forever for a writer
    else:
        os.symlink("/dev/zero", target)
    proc = dspsim_cli("program", program(tmp_path, "{npy: x.npy}"), timeout=60)
    assert "not a regular file" in one_line_error(proc)


def test_corrupt_npy_says_how_to_fix(tmp_path):
    np.save(tmp_path / "x.npy", np.ones(256))
    data = (tmp_path / "x.npy").read_bytes()
    (tmp_path / "x.npy").write_bytes(data[:-100])  # truncated
    with pytest.raises(ProgramFileError, match="numpy.save"):
        load_program(program(tmp_path, "{npy: x.npy}"))


def test_yaml_error_is_one_line(tmp_path):
    text = PROGRAM.replace("INIT", "{random: {seed: 2}}").replace("dy: {", "? [a]\n  : {")
    proc = dspsim_cli("program", program(tmp_path, text=text), timeout=60)
    assert "not valid YAML" in one_line_error(proc)


def test_whole_number_floats_are_lengths_and_masks(tmp_path):
    path = program(tmp_path)
    for n, mask in ((256.0, 255.0), (2.56e2, 0xff)):
        result = load_program(path, {"n": n, "mask": mask}).run(numerics=False)
        assert result.calls[0].result.length == 256


def test_absurd_length_parameter_is_a_short_message(tmp_path):
    with pytest.raises(ProgramFileError, match=r"whole number from 0 to 2\^63, got 1e\+300") \
            as info:
        load_program(program(tmp_path), {"n": 1e300})
    assert len(str(info.value)) < 400


def test_exponent_without_a_dot_gets_a_hint(tmp_path):
    path = program(tmp_path, text=PROGRAM.replace("INIT", "{random: {seed: 2}}")
                   .replace("n: 256", "n: 1e300"))
    with pytest.raises(ProgramFileError, match=r"YAML reads it as text, write 1\.0+e\+300"):
        load_program(path)


# --------------------------------------------------------------------------- calibration
HEADER = "operator,length,core_mask,cycles\n"
ROWS = "fp_relu_grad_s,2048,0x1,5384.3\nfp_gelu_grad_s,2048,0xff,4812.5\n"


@pytest.mark.parametrize("cycles", ["1e300", "1e-300", "0.5"])
def test_cycles_outside_any_call_are_refused(tmp_path, cycles):
    path = tmp_path / "m.csv"
    path.write_text(HEADER + f"fp_relu_grad_s,2048,0x1,{cycles}\n" + ROWS)
    with pytest.raises(DspSimError, match=r"line 2: cycles .* outside 1 to 1e\+18"):
        load_measurements(str(path))


def test_measurements_from_a_pipe_are_refused(tmp_path):
    os.mkfifo(tmp_path / "m.csv")
    with pytest.raises(DspSimError, match="not a regular file"):
        load_measurements(str(tmp_path / "m.csv"))


def test_loose_determination_beyond_float_range_is_reported():
    jacobian = np.array([[0.02], [0.03], [0.02]])
    found = determination(jacobian, np.array([1000.0, -1000.0, 500.0]), ["k"])
    assert found.std_error[0] > 700
    assert "beyond 1e300" in found.reasons[0]


def test_fitted_chip_on_a_full_disk_is_one_error_and_no_file(tmp_path):
    script = textwrap.dedent(f"""
        import resource
        resource.setrlimit(resource.RLIMIT_FSIZE, (512, 512))
        from dspsim.atomic import write_atomically
        from dspsim.sim.errors import DspSimError
        try:
            write_atomically(b"x: 1\\n" * 1000, {str(tmp_path / "fitted.yaml")!r}, "file")
        except DspSimError as exc:
            print("refused:", exc)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert "refused: cannot write" in proc.stdout and "File too large" in proc.stdout, \
        proc.stdout + proc.stderr
    assert os.listdir(tmp_path) == []  # neither the file nor a temporary one


# --------------------------------------------------------------------------- aclnn
def leaky_relu(x, out, stream, slope=0.1) -> int:
    status, size, executor = aclnn.aclnnLeakyReluGetWorkspaceSize(x, slope, out)
    assert status == ACLNN_SUCCESS
    return aclnn.aclnnLeakyRelu(None, size, executor, stream)


def expected(x, slope=0.1):
    return np.where(x > 0, x, slope * x).astype(np.float32)


def test_view_of_an_output_reads_what_was_written():
    stream = aclnn.Stream(Chip("mt7004"))
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    a, b = np.zeros(64, np.float32), np.zeros((8, 8), np.float32)
    assert leaky_relu(x, a, stream) == ACLNN_SUCCESS
    assert leaky_relu(a.reshape(8, 8), b, stream) == ACLNN_SUCCESS  # a view of a
    assert aclnn.aclrtSynchronizeStream(stream) == ACLNN_SUCCESS
    np.testing.assert_allclose(b.reshape(-1), expected(expected(x)), rtol=1e-6)


def test_partially_overlapping_views_are_refused_and_change_nothing():
    stream = aclnn.Stream(Chip("mt7004"))
    base = np.linspace(-1, 1, 128, dtype=np.float32)
    before = base.copy()
    assert leaky_relu(base[:64], base[32:96], stream) == ACLNN_ERR_PARAM_INVALID
    assert "shares memory" in aclnn.aclGetRecentErrMsg()
    assert aclnn.aclrtSynchronizeStream(stream) == ACLNN_SUCCESS
    np.testing.assert_array_equal(base, before)


def test_outputs_overlapping_across_streams_are_refused():
    chip = Chip("mt7004")
    first, second = aclnn.Stream(chip, 0x3), aclnn.Stream(chip, 0xC)
    out, x = np.zeros(128, np.float32), np.ones(64, np.float32)
    assert leaky_relu(x, out[:64], first) == ACLNN_SUCCESS
    assert leaky_relu(x, out[32:96], second) == ACLNN_ERR_PARAM_INVALID
    assert aclnn.aclrtSynchronizeStream(first) == ACLNN_SUCCESS
    np.testing.assert_array_equal(out[64:], 0)


def test_output_whose_elements_share_memory_is_refused():
    stream = aclnn.Stream(Chip("mt7004"))
    cell = np.zeros(1, np.float32)
    out = np.lib.stride_tricks.as_strided(cell, (64,), (0,))
    assert leaky_relu(np.ones(64, np.float32), out, stream) == ACLNN_ERR_PARAM_INVALID
    assert "elements share memory" in aclnn.aclGetRecentErrMsg()
    assert cell[0] == 0


def test_broadcast_input_and_reversed_views_are_fine():
    stream = aclnn.Stream(Chip("mt7004"))
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    out = np.zeros(64, np.float32)[::-1]
    ones = np.broadcast_to(np.float32(-2), (64,))
    other = np.zeros(64, np.float32)
    assert leaky_relu(x[::-1], out, stream) == ACLNN_SUCCESS
    assert leaky_relu(ones, other, stream) == ACLNN_SUCCESS
    assert aclnn.aclrtSynchronizeStream(stream) == ACLNN_SUCCESS
    np.testing.assert_allclose(out, expected(x[::-1]), rtol=1e-6)
    np.testing.assert_allclose(other, -0.2, rtol=1e-6)


def test_event_shared_by_streams_of_two_chip_objects_is_refused_at_the_wait():
    first, second = aclnn.Stream(Chip("mt7004")), aclnn.Stream(Chip("mt7004"))
    _, event = aclnn.aclrtCreateEvent()
    out = np.zeros(64, np.float32)
    assert leaky_relu(np.ones(64, np.float32), out, first) == ACLNN_SUCCESS
    assert aclnn.aclrtRecordEvent(event, first) == ACLNN_SUCCESS
    assert aclnn.aclrtStreamWaitEvent(second, event) == ACLNN_ERR_PARAM_INVALID
    assert "another Chip object" in aclnn.aclGetRecentErrMsg()
    assert aclnn.aclrtSynchronizeStream(first) == ACLNN_SUCCESS
    # once the first chip has run it, the event is complete: waiting holds nothing
    assert aclnn.aclrtStreamWaitEvent(second, event) == ACLNN_SUCCESS


def test_event_recorded_twice_names_the_runtime_call():
    stream = aclnn.Stream(Chip("mt7004"))
    _, event = aclnn.aclrtCreateEvent()
    assert aclnn.aclrtRecordEvent(event, stream) == ACLNN_SUCCESS
    assert aclnn.aclrtRecordEvent(event, stream) == ACLNN_ERR_PARAM_INVALID
    assert "aclrtCreateEvent()" in aclnn.aclGetRecentErrMsg()
    assert aclnn.aclrtSynchronizeStream(stream) == ACLNN_SUCCESS


def test_zero_size_tensors_of_any_shape_run():
    stream = aclnn.Stream(Chip("mt7004"))
    for shape in ((0,), (0, 5)):
        out = np.zeros(shape, np.float32)
        assert leaky_relu(np.ones(shape, np.float32), out, stream) == ACLNN_SUCCESS
    assert aclnn.aclrtSynchronizeStream(stream) == ACLNN_SUCCESS
    assert aclnn.aclrtSynchronizeStream(stream) == ACLNN_SUCCESS  # twice: nothing to do


def test_npy_changed_after_loading_leaves_memory_as_it_was(tmp_path):
    np.save(tmp_path / "x.npy", np.ones(256))
    loaded = load_program(program(tmp_path, "{npy: x.npy}"))
    np.save(tmp_path / "x.npy", np.ones(255))  # replaced between loading and running
    first = loaded.buffers[0]  # dy, filled before x in file order
    with pytest.raises(ProgramFileError, match=r"buffers\.x\.init\.npy: .*255 values"):
        loaded.run()
    with pytest.raises(DspSimError):  # never written: reading it is an error
        loaded.chip.read(first.span.address, 1, np.float32)


@pytest.mark.parametrize("out", ["file", "", "/dev/null"])
def test_program_sweep_output_that_is_no_folder_is_refused_before_running(tmp_path, out):
    path = program(tmp_path)
    target = path if out == "file" else out
    proc = dspsim_cli("sweep", "--program", path, "--vary", "n=64", "--timing-only",
                      "--no-plots", "--out", target, cwd=tmp_path, timeout=60)
    assert "folder" in one_line_error(proc)
    assert sorted(os.listdir(tmp_path)) == ["p.yaml"]


def test_core_on_a_shared_storage_call_is_refused(tmp_path):
    text = PROGRAM.replace("INIT", "{random: {seed: 2}}") + "      core: 99\n"
    with pytest.raises(ProgramFileError, match=r"streams\.main\[0\]\.core: .*_p"):
        load_program(program(tmp_path, text=text))


@pytest.mark.parametrize("mask", [-1, -16])
def test_negative_stream_core_mask_is_refused(mask):
    with pytest.raises(DspSimError, match="selects no core"):
        aclnn.Stream(Chip("mt7004"), mask)


def test_temporary_of_a_writer_killed_mid_write_is_removed_by_the_next(tmp_path):
    from dspsim.atomic import write_atomically
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, timeout=60)
    left = tmp_path / f".trace-{int(dead.stdout)}-abc.tmp"
    left.write_text("half a fitted chip")  # what SIGKILL mid-write leaves
    (tmp_path / "fitted.yaml").write_text("old: 1\n")
    write_atomically(b"new: 2\n", tmp_path / "fitted.yaml", "file")
    assert sorted(os.listdir(tmp_path)) == ["fitted.yaml"]
    assert (tmp_path / "fitted.yaml").read_text() == "new: 2\n"


@pytest.mark.parametrize("extra", [["--chips", "mt7004"], ["--lengths", "64"],
                                   ["--ops", "relu_grad"], ["--param", "alpha=1"]])
def test_single_call_options_with_a_program_are_refused_not_ignored(tmp_path, extra):
    proc = dspsim_cli("sweep", "--program", program(tmp_path), "--vary", "n=64",
                      "--timing-only", "--no-plots", *extra, cwd=tmp_path, timeout=60)
    assert "cannot be combined with --program" in one_line_error(proc)
    assert sorted(os.listdir(tmp_path)) == ["p.yaml"]


@pytest.mark.parametrize("chip", ["ft78ne", None, 3])
def test_program_of_something_else_than_a_chip_is_refused(chip):
    from dspsim.programs import Program
    with pytest.raises(DspSimError, match="give a Chip"):
        Program(chip)
