"""Hostile input to the launcher, the aclnn facade, chip files and the run command.

Each is answered by a DspSimError (the command: exit status 2 and one line), and leaves
simulated memory as it was.
"""
import copy
import os

import ml_dtypes
import numpy as np
import pytest
import yaml
from terminal import dspsim_cli, dspsim_in_terminal

import dspsim
from dspsim import aclnn
from dspsim.aclnn import ACLNN_ERR_PARAM_INVALID, ACLNN_SUCCESS
from dspsim.sim.chip.load import config_from_dict, load_config, packaged_chips

SENTINEL = 42.0
#: where simulate() puts a 64-element call on FT78NE: the reference pages' addresses
PLACED = (0xA0000000, 0xA1000000, 0xA2000000, 0xB0000000)


@pytest.fixture
def guarded():
    """An FT78NE whose placement addresses hold a sentinel that a failing call must keep."""
    chip = dspsim.Chip("ft78ne")
    for address in PLACED:
        chip.write(address, np.full(64, SENTINEL, np.float32))
    return chip


def untouched(chip) -> bool:
    return all(np.all(chip.read(a, 64, np.float32) == SENTINEL) for a in PLACED)


ONES = np.ones(64)
BAD_SIMULATE_CALLS = {
    "unknown parameter": (("fp_relu_grad_s", ONES, ONES), {"bogus": 1.0}),
    "parameter not a number": (("fp_l_relu_grad_s", ONES, ONES), {"alpha": "x"}),
    "NaN parameter": (("fp_l_relu_grad_s", ONES, ONES), {"alpha": float("nan")}),
    "integer parameter too large for a float": (("fp_l_relu_grad_s", ONES, ONES),
                                                {"alpha": 10 ** 400}),
    "subnormal parameter": (("fp_l_relu_grad_s", ONES, ONES), {"alpha": 1e-40}),
    "core_mask 0": (("fp_relu_grad_s", ONES, ONES), {"core_mask": 0}),
    "bogus fidelity": (("fp_relu_grad_s", ONES, ONES), {"fidelity": "bogus"}),
    "complex input": (("fp_relu_grad_s", ONES + 1j, ONES), {}),
    "object input": (("fp_relu_grad_s", np.array([None] * 64), ONES), {}),
    "ragged input": (("fp_relu_grad_s", [[1.0, 2.0], [3.0]], ONES), {}),
    "string input": (("fp_relu_grad_s", np.array(["a"] * 64), ONES), {}),
    "huge integers": (("fp_relu_grad_s", [2 ** 80] * 64, ONES), {}),
    "inputs of two lengths": (("fp_relu_grad_s", ONES, np.ones(65)), {}),
    "too few inputs": (("fp_relu_grad_s", ONES), {}),
    "core_mask on a private call": (("fp_relu_grad_p", ONES, ONES), {"core_mask": 1}),
}


@pytest.mark.parametrize("case", sorted(BAD_SIMULATE_CALLS))
def test_simulate_checks_everything_before_writing(guarded, case):
    args, kwargs = BAD_SIMULATE_CALLS[case]
    with pytest.raises(dspsim.DspSimError):
        dspsim.simulate(*args, chip=guarded, **kwargs)
    assert untouched(guarded)


def test_simulate_on_a_fresh_chip_writes_nothing_when_it_fails():
    chip = dspsim.Chip("ft78ne")
    with pytest.raises(dspsim.ArgumentError):
        dspsim.simulate("fp_relu_grad_s", ONES, ONES, chip=chip, core_mask=0x100)
    for address in PLACED:
        with pytest.raises(dspsim.AddressError, match="never written"):
            chip.read(address, 1, "fp32")


# --------------------------------------------------------------------------- parameters
@pytest.mark.parametrize("name, params, message", [
    ("hp_swish_grad_s", {"beta": 1e5}, "beta=100000 overflows fp16"),
    ("hp_l_relu_grad_s", {"alpha": 1e-6}, "alpha=1e-06 is subnormal in fp16"),
    ("hp_l_relu_grad_s", {"alpha": 1e-9}, "alpha=1e-09 flushes to 0 in fp16"),
    ("fp_elu_grad_s", {"alpha": 1e39}, "overflows fp32"),
    ("hp_smoothl1lossgrad_s", {"beta": 7e4}, "overflows fp16"),
    ("fp_l_relu_s", {"negative_slope": 10 ** 400}, "must be a finite number"),
])
def test_parameters_must_survive_the_calls_dtype(name, params, message):
    arrays = [np.ones(16)] * (3 if "smoothl1" in name else 1 if "l_relu_s" in name else 2)
    with pytest.raises(dspsim.ArgumentError, match=message) as error:
        dspsim.simulate(name, *arrays, chip="mt7004", **params)
    assert "holds magnitudes" in str(error.value) or "finite" in str(error.value)


def test_zero_and_thresholds_of_any_size_are_fine():
    out, _ = dspsim.simulate("hp_l_relu_grad_s", -np.ones(4), -np.ones(4), chip="mt7004",
                             alpha=0.0)
    assert np.all(out == 0)
    # lambd is compared against, never multiplied: 1e5 is exact as a threshold in fp16
    out, _ = dspsim.simulate("hp_hard_shrink_grad_s", np.ones(3), [1.0, 6e4, np.inf],
                             chip="mt7004", lambd=1e5)
    assert list(out) == [0.0, 0.0, 1.0]


# --------------------------------------------------------------------------- aclnn
def test_a_stream_selecting_no_core_is_refused():
    with pytest.raises(dspsim.ArgumentError, match="selects no core"):
        aclnn.Stream("mt7004", core_mask=0)


def test_an_execute_that_fails_touches_neither_memory_nor_the_output():
    stream = aclnn.Stream("mt7004", core_mask=0xF)
    stream.core_mask = 0x100  # changed after the stream was made
    grad, x = np.ones(64, np.float32), np.ones(64, np.float32)
    out = np.full(64, SENTINEL, np.float32)
    status, size, executor = aclnn.aclnnSwishBackwardGetWorkspaceSize(grad, x, None, out)
    assert status == ACLNN_SUCCESS
    assert aclnn.aclnnSwishBackward(None, size, executor, stream) == ACLNN_ERR_PARAM_INVALID
    assert "selects no core" in aclnn.aclGetRecentErrMsg()
    assert np.all(out == SENTINEL)
    with pytest.raises(dspsim.AddressError, match="never written"):
        stream.chip.read(0xA0000000, 1, "fp32")


@pytest.mark.parametrize("beta, dtype, message", [
    (10 ** 400, np.float32, "too large for a float"),
    (1e5, np.float16, "overflows fp16"),
    (1e300, ml_dtypes.bfloat16, "overflows bf16"),
])
def test_workspace_size_returns_a_status_for_scalars_out_of_range(beta, dtype, message):
    tensors = [np.ones(8, dtype) for _ in range(3)]
    status, size, executor = aclnn.aclnnSwishBackwardGetWorkspaceSize(*tensors[:2], beta,
                                                                      tensors[2])
    assert status == ACLNN_ERR_PARAM_INVALID and executor is None
    assert message in aclnn.aclGetRecentErrMsg()


def test_execute_with_things_that_are_not_executors_or_streams():
    assert aclnn.aclnnLeakyRelu(None, 0, "executor", aclnn.Stream("ft78ne")) == \
        ACLNN_ERR_PARAM_INVALID
    x = np.ones(4, np.float32)
    _, size, executor = aclnn.aclnnLeakyReluGetWorkspaceSize(x, 0.1, np.ones(4, np.float32))
    assert aclnn.aclnnLeakyRelu(None, size, executor, "stream") == ACLNN_ERR_PARAM_INVALID


# --------------------------------------------------------------------------- chip files
with open(packaged_chips()["ft78ne"], encoding="utf-8") as _handle:
    RAW = yaml.safe_load(_handle)


def _chip_file(tmp_path, text: str | bytes, name="chip.yaml"):
    path = tmp_path / name
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    return str(path)


def _alias_bomb(levels=9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


HOSTILE_FILES = {
    "binary": (bytes(range(256)) * 8, "binary file"),
    "not UTF-8": ("name: \u00e9\n".encode("latin-1"), "not UTF-8"),
    "alias bomb": (_alias_bomb(), "once its aliases are expanded"),
    "deeply nested": ("[" * 100_000 + "]" * 100_000, "nested more than"),
    "recursive alias": ("a: &a [*a]\n", "contains it"),
    "duplicate key": (yaml.safe_dump(RAW) + "cores: 4\n", "duplicate key 'cores'"),
    "too large": ("# padding\n" * 200_000, "larger than"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_FILES))
def test_hostile_chip_files_fail_fast_with_a_config_error(tmp_path, case):
    content, message = HOSTILE_FILES[case]
    with pytest.raises(dspsim.ConfigError, match=message):
        load_config(_chip_file(tmp_path, content))


def test_a_directory_is_not_a_chip_file(tmp_path):
    (tmp_path / "dir.yaml").mkdir()
    with pytest.raises(dspsim.ConfigError, match="is a directory"):
        load_config(str(tmp_path / "dir.yaml"))


def test_aliases_of_modest_size_still_work(tmp_path):
    with open(packaged_chips()["ft78ne"], encoding="utf-8") as handle:
        text = handle.read()
    text = text.replace("add:    {unit: alu, occupancy_cycles: 1}",
                        "add:    &one_alu {unit: alu, occupancy_cycles: 1}")
    text = text.replace("sub:    {unit: alu, occupancy_cycles: 1}", "sub:    *one_alu")
    assert "*one_alu" in text
    config = load_config(_chip_file(tmp_path, text))
    assert config.vector.instructions["sub"] == config.vector.instructions["add"]


@pytest.mark.parametrize("path, value", [
    (("clock_mhz",), 1e300), (("clock_mhz",), 10 ** 400), (("clock_mhz",), 1e-300),
    (("memory", "ddr", "peak_bandwidth_gbps"), 10 ** 30), (("dma", "setup_cycles"), 1e20),
    (("vector", "units", "alu"), 10 ** 400),
])
def test_numbers_no_chip_has_are_config_errors(path, value):
    raw = copy.deepcopy(RAW)
    parent = raw
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    with pytest.raises(dspsim.ConfigError, match="must be 0 or of magnitude"):
        config_from_dict(raw, "<test>")


# --------------------------------------------------------------------------- the command
def _one_line_error(proc, *fragments):
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("args, fragments", [
    (("run", "fp_[red]x", "--length", "10"), ("unknown operator 'fp_[red]x'",)),
    (("run", "fp_relu_grad_s", "--length", "10", "--seed", "-1"), ("seed -1 must be >= 0",)),
    (("run", "fp_relu_grad_s", "--length", "2^30"), ("do not fit in ddr",)),
    (("run", "fp_relu_grad_s", "--length", "2^40"), ("do not fit in ddr",)),
    (("run", "fp_relu_grad_s", "--length", "2^99999999"), ("too large",)),
    (("run", "fp_l_relu_grad_s", "--length", "10", "--param", "alpha=1" + "0" * 400),
     ("must be a finite number",)),
    (("run", "fp_relu_grad_p", "--length", "10", "--core-mask", "0x1"),
     ("private-storage call",)),
    (("run", "fp_relu_grad_s", "--length", "10", "--chip", "/dev/null/x.yaml"),
     ("does not exist",)),
])
def test_the_run_command_answers_in_one_line(tmp_path, args, fragments):
    _one_line_error(dspsim_cli(*args, cwd=tmp_path), *fragments)
    assert list(tmp_path.iterdir()) == []  # nothing made


@pytest.mark.parametrize("case", ["binary", "alias bomb", "deeply nested"])
def test_the_run_command_refuses_hostile_chip_files(tmp_path, case):
    path = _chip_file(tmp_path, HOSTILE_FILES[case][0])
    _one_line_error(dspsim_cli("run", "fp_relu_grad_s", "--length", "10", "--chip", path),
                    HOSTILE_FILES[case][1])


def test_chip_text_with_markup_is_printed_as_written(tmp_path):
    raw = copy.deepcopy(RAW)
    raw["name"] = "[bold red]chip[/]"
    path = _chip_file(tmp_path, yaml.safe_dump(raw))
    proc = dspsim_cli("run", "fp_relu_grad_s", "--length", "100", "--chip", path, "--no-trace")
    assert proc.returncode == 0, proc.stderr
    assert "on [bold red]chip[/] (1000 MHz)" in proc.stdout
    status, text = dspsim_in_terminal("run", "fp_relu_grad_s", "--length", "100", "--chip",
                                      path, "--no-trace", columns=120)
    assert status == 0 and "on [bold red]chip[/] (1000 MHz)" in text
    status, text = dspsim_in_terminal("ops", "--chip", path, columns=200)
    assert status == 0 and "[bold red]chip[/] cycles/iter" in text
    status, text = dspsim_in_terminal("ops", "relu_grad", "--chip", path, columns=200)
    assert status == 0 and "on [bold red]chip[/]: fp_relu_grad_s" in text


def test_outputs_that_cannot_be_written_are_refused_before_running(tmp_path):
    _one_line_error(dspsim_cli("run", "fp_relu_grad_s", "--length", "10", "--trace", tmp_path),
                    "is a folder")
    _one_line_error(dspsim_cli("run", "fp_relu_grad_s", "--length", "10", "--trace",
                               "/dev/null"), "not a regular file")
    _one_line_error(dspsim_cli("run", "fp_relu_grad_s", "--length", "10", "--trace",
                               tmp_path / ("x" * 300 + ".json")), "cannot write the trace")
    (tmp_path / "file").write_text("x")
    _one_line_error(dspsim_cli("run", "fp_relu_grad_s", "--length", "10", "--save",
                               tmp_path / "file"), "not a folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


# --------------------------------------------------------------------------- fuzzing
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_values = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(1 << 80), max_value=1 << 80),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=4),
    st.just(np.float16(3)), st.just(10 ** 400), st.just(object()))
_arrays = st.one_of(
    st.builds(lambda n, kind: np.ones(n, dtype=kind), st.integers(0, 70),
              st.sampled_from([np.float32, np.float16, np.float64, np.int64, np.bool_,
                               np.complex64, ml_dtypes.bfloat16, object, "U2"])),
    st.lists(st.one_of(st.floats(), st.integers(-(1 << 70), 1 << 70)), max_size=70),
    st.lists(st.lists(st.floats(), max_size=3), max_size=4), _values)
_names = st.sampled_from(["fp_relu_grad_s", "fp_l_relu_grad_s", "fp_swish_grad_s",
                          "fp_smoothl1lossgrad_s", "fp_l_relu_s", "fp_relu_grad_p",
                          "hp_relu_grad_s", "fp_gelu_grad_p"]) | st.text(max_size=8)
_options = st.dictionaries(
    st.sampled_from(["core_mask", "core", "fidelity", "tile_bytes", "alpha", "beta", "lambd",
                     "negative_slope", "bogus"]),
    _values | st.sampled_from(["fast", "detailed", 0x3, 1 << 12]), max_size=3)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=_names, arrays=st.lists(_arrays, max_size=4), options=_options)
def test_simulate_fuzz_raises_only_dspsim_errors_and_keeps_memory(name, arrays, options):
    chip = dspsim.Chip("ft78ne")
    for address in PLACED:
        chip.write(address, np.full(64, SENTINEL, np.float32))
    try:
        dspsim.simulate(name, *arrays, chip=chip, **options)
    except dspsim.DspSimError:
        assert untouched(chip)


_tensors = st.one_of(
    st.builds(lambda n, kind: np.ones(n, dtype=kind), st.integers(0, 40),
              st.sampled_from([np.float32, np.float16, ml_dtypes.bfloat16, np.float64,
                               np.int32])),
    _values)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tensors=st.lists(_tensors, min_size=3, max_size=3), scalar=_values,
       mask=st.sampled_from([None, 0x1, 0xF, 0xFF]), size=_values | st.just(0))
def test_aclnn_fuzz_answers_with_status_codes(tensors, scalar, mask, size):
    stream = aclnn.Stream("mt7004", core_mask=mask)
    for get, run, count in (
            (aclnn.aclnnSwishBackwardGetWorkspaceSize, aclnn.aclnnSwishBackward, 3),
            (aclnn.aclnnLeakyReluGetWorkspaceSize, aclnn.aclnnLeakyRelu, 2),
            (aclnn.aclnnInplaceLeakyReluGetWorkspaceSize, aclnn.aclnnInplaceLeakyRelu, 1)):
        args = tensors[:count - 1] + [scalar] + tensors[count - 1:count] if count > 1 \
            else tensors[:1] + [scalar]
        if get is aclnn.aclnnSwishBackwardGetWorkspaceSize:
            args = [tensors[0], tensors[1], scalar, tensors[2]]
        status, workspace, executor = get(*args)
        assert isinstance(status, int)
        status = run(None, workspace if size == 0 else size, executor, stream)
        assert isinstance(status, int)


def test_a_chip_file_that_never_ends_is_refused_before_it_is_read(tmp_path):
    fifo = tmp_path / "chip.yaml"
    os.mkfifo(fifo)
    with pytest.raises(dspsim.DspSimError, match="not a regular file"):
        dspsim.Chip(str(fifo))  # reading it would wait for a writer forever
