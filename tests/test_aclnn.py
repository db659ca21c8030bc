"""The aclnn facade: two-phase calls, CANN status codes, and the same run as the _s kernel."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from reference import l_relu, swish_grad

import dspsim
from dspsim import aclnn
from dspsim.aclnn import ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR, ACLNN_SUCCESS, Stream


def _tensors(shape=(8, 125), dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(shape) * 3).astype(dtype) for _ in range(2)]


def _swish(grad_output, x, beta, grad_input, stream):
    status, size, executor = aclnn.aclnnSwishBackwardGetWorkspaceSize(grad_output, x, beta,
                                                                      grad_input)
    assert status == ACLNN_SUCCESS, aclnn.aclGetRecentErrMsg()
    status = aclnn.aclnnSwishBackward(None, size, executor, stream)
    if status == ACLNN_SUCCESS:  # the execute call enqueues; synchronising runs it
        status = aclnn.aclrtSynchronizeStream(stream)
    return status, executor


# --------------------------------------------------------------------------- SwishBackward
@pytest.mark.parametrize("chip, dtype", [("ft78ne", np.float32), ("mt7004", np.float32),
                                         ("mt7004", np.float16)])
def test_swish_backward_is_the_s_kernel(chip, dtype):
    grad_output, x = _tensors(dtype=dtype)
    grad_input = np.zeros_like(x)
    stream = Stream(chip, core_mask=0x3)
    status, executor = _swish(grad_output, x, 1.5, grad_input, stream)
    assert status == ACLNN_SUCCESS
    prefix = "fp" if dtype == np.float32 else "hp"
    assert executor.c_name == f"{prefix}_swish_grad_s"

    expected, result = dspsim.simulate(f"{prefix}_swish_grad_s", grad_output, x, chip=chip,
                                       core_mask=0x3, beta=1.5)
    np.testing.assert_array_equal(grad_input, expected.reshape(x.shape))
    run = stream.last_result
    assert run is executor.result and stream.results == [run]
    assert run.cycles == result.cycles and run.metadata["cores"] == [0, 1]
    assert run.trace() == result.trace()


def test_swish_backward_beta_none_means_one():
    grad_output, x = _tensors()
    by_default, explicit = np.empty_like(x), np.empty_like(x)
    stream = Stream("ft78ne")
    assert _swish(grad_output, x, None, by_default, stream)[0] == ACLNN_SUCCESS
    assert _swish(grad_output, x, 1.0, explicit, stream)[0] == ACLNN_SUCCESS
    np.testing.assert_array_equal(by_default, explicit)
    np.testing.assert_allclose(by_default, swish_grad(grad_output, x, 1.0), rtol=1e-5,
                               atol=1e-6)
    assert stream.results[0].metadata["params"] == {"beta": 1.0}


@pytest.mark.parametrize("beta", [2, True, np.float64(0.5), np.array(0.25)])
def test_swish_backward_beta_scalar_types(beta):
    grad_output, x = _tensors(shape=(64,))
    grad_input = np.empty_like(x)
    assert _swish(grad_output, x, beta, grad_input, Stream("mt7004"))[0] == ACLNN_SUCCESS
    np.testing.assert_allclose(grad_input, swish_grad(grad_output, x, float(beta)), rtol=1e-5,
                               atol=1e-6)


def test_output_may_be_a_strided_view():
    grad_output, x = _tensors(shape=(10, 10))
    storage = np.zeros((10, 20), np.float32)
    grad_input = storage[:, ::2]
    assert _swish(grad_output, x, None, grad_input, Stream("mt7004"))[0] == ACLNN_SUCCESS
    np.testing.assert_allclose(grad_input, swish_grad(grad_output, x), rtol=1e-5, atol=1e-6)
    assert not storage[:, 1::2].any()


# --------------------------------------------------------------------------- LeakyRelu
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_leaky_relu_out_of_place(dtype):
    x, _ = _tensors(shape=(3, 333), dtype=dtype)
    out = np.empty_like(x)
    stream = Stream("mt7004", core_mask=0xF)
    status, size, executor = aclnn.aclnnLeakyReluGetWorkspaceSize(x, 0.2, out)
    assert (status, size) == (ACLNN_SUCCESS, 0)
    before = x.copy()
    assert aclnn.aclnnLeakyRelu(None, size, executor, stream) == ACLNN_SUCCESS
    assert aclnn.aclrtSynchronizeStream(stream) == ACLNN_SUCCESS
    np.testing.assert_array_equal(x, before)
    expected = np.where(x > 0, x, dtype(0.2) * x)
    np.testing.assert_array_equal(out, expected)
    name = "fp_l_relu_s" if dtype == np.float32 else "hp_l_relu_s"
    _, result = dspsim.simulate(name, x, chip="mt7004", core_mask=0xF, negative_slope=0.2)
    assert stream.last_result.cycles == result.cycles


def test_inplace_leaky_relu_runs_the_kernel_in_place():
    x, _ = _tensors(shape=(1000,))
    original = x.copy()
    stream = Stream("ft78ne", core_mask=0xFF)
    status, size, executor = aclnn.aclnnInplaceLeakyReluGetWorkspaceSize(x, 0.01)
    assert status == ACLNN_SUCCESS
    assert aclnn.aclnnInplaceLeakyRelu(None, size, executor, stream) == ACLNN_SUCCESS
    np.testing.assert_array_equal(x, original)  # enqueued, not run
    assert aclnn.aclrtSynchronizeStream(stream) == ACLNN_SUCCESS
    np.testing.assert_allclose(x, l_relu(original, 0.01), rtol=1e-6)
    operands = stream.last_result.metadata["operands"]
    assert operands["src"] == operands["dst"]  # dst == src on the chip
    out_of_place, result = dspsim.simulate("fp_l_relu_s", original, chip="ft78ne",
                                           core_mask=0xFF, negative_slope=0.01)
    np.testing.assert_array_equal(x, out_of_place)
    assert stream.last_result.cycles == result.cycles


@pytest.mark.parametrize("slope", [0, 1, -2, False])
def test_leaky_relu_integer_and_bool_slopes(slope):
    x = np.array([-2.0, 3.0], np.float32)
    out = np.empty_like(x)
    status, size, executor = aclnn.aclnnLeakyReluGetWorkspaceSize(x, slope, out)
    assert status == ACLNN_SUCCESS
    stream = Stream("ft78ne")
    assert aclnn.aclnnLeakyRelu(None, size, executor, stream) == ACLNN_SUCCESS
    assert aclnn.aclrtSynchronizeStream(stream) == ACLNN_SUCCESS
    np.testing.assert_array_equal(out, [-2.0 * float(slope), 3.0])


def test_empty_tensors_succeed():
    x = np.zeros((0, 4), np.float32)
    out = np.zeros_like(x)
    status, size, executor = aclnn.aclnnLeakyReluGetWorkspaceSize(x, 0.1, out)
    assert status == ACLNN_SUCCESS
    stream = Stream("ft78ne")
    assert aclnn.aclnnLeakyRelu(None, size, executor, stream) == ACLNN_SUCCESS
    assert aclnn.aclrtSynchronizeStream(stream) == ACLNN_SUCCESS


# --------------------------------------------------------------------------- status codes
def _bad_swish_calls():
    a, b = _tensors(shape=(16,))
    out = np.empty_like(a)
    readonly = np.empty_like(a)
    readonly.flags.writeable = False
    return [
        ("gradOutput null", (None, b, None, out), ACLNN_ERR_PARAM_NULLPTR, "gradOutput"),
        ("self null", (a, None, None, out), ACLNN_ERR_PARAM_NULLPTR, "self"),
        ("gradInput null", (a, b, None, None), ACLNN_ERR_PARAM_NULLPTR, "gradInput"),
        ("shape mismatch", (a, b[:8], None, out), ACLNN_ERR_PARAM_INVALID, "shape"),
        ("output shape", (a, b, None, out.reshape(4, 4)), ACLNN_ERR_PARAM_INVALID, "shape"),
        ("dtype mismatch", (a, b.astype(np.float16), None, out), ACLNN_ERR_PARAM_INVALID,
         "dtype"),
        ("float64", (a.astype(np.float64), b.astype(np.float64), None, out.astype(np.float64)),
         ACLNN_ERR_PARAM_INVALID, "float64"),
        ("not an array", (list(a), b, None, out), ACLNN_ERR_PARAM_INVALID, "numpy array"),
        ("read-only output", (a, b, None, readonly), ACLNN_ERR_PARAM_INVALID, "read-only"),
        ("NaN beta", (a, b, float("nan"), out), ACLNN_ERR_PARAM_INVALID, "beta"),
        ("infinite beta", (a, b, float("inf"), out), ACLNN_ERR_PARAM_INVALID, "beta"),
        ("negative beta", (a, b, -1.0, out), ACLNN_ERR_PARAM_INVALID, "beta"),
        ("beta string", (a, b, "1.0", out), ACLNN_ERR_PARAM_INVALID, "betaOptional"),
    ]


@pytest.mark.parametrize("case", _bad_swish_calls(), ids=lambda c: c[0])
def test_swish_backward_rejects(case):
    _, args, code, word = case
    assert aclnn.aclnnSwishBackwardGetWorkspaceSize(*args) == (code, 0, None)
    assert word in aclnn.aclGetRecentErrMsg()


def test_leaky_relu_rejects():
    x = np.ones(4, np.float32)
    assert aclnn.aclnnLeakyReluGetWorkspaceSize(x, None, x.copy())[0] == ACLNN_ERR_PARAM_NULLPTR
    assert "negativeSlope" in aclnn.aclGetRecentErrMsg()
    assert aclnn.aclnnLeakyReluGetWorkspaceSize(None, 0.1, x)[0] == ACLNN_ERR_PARAM_NULLPTR
    assert aclnn.aclnnLeakyReluGetWorkspaceSize(x, 0.1, None)[0] == ACLNN_ERR_PARAM_NULLPTR
    assert aclnn.aclnnLeakyReluGetWorkspaceSize(x, 0.1, np.ones(5, np.float32))[0] \
        == ACLNN_ERR_PARAM_INVALID
    assert aclnn.aclnnLeakyReluGetWorkspaceSize(x, float("nan"), x.copy())[0] \
        == ACLNN_ERR_PARAM_INVALID
    assert aclnn.aclnnInplaceLeakyReluGetWorkspaceSize(None, 0.1)[0] == ACLNN_ERR_PARAM_NULLPTR
    assert aclnn.aclnnInplaceLeakyReluGetWorkspaceSize(x.astype(np.int32), 0.1)[0] \
        == ACLNN_ERR_PARAM_INVALID


@pytest.mark.parametrize("chip, dtype", [("ft78ne", np.float16), ("ft78ne", ml_dtypes.bfloat16),
                                         ("mt7004", ml_dtypes.bfloat16)])
def test_a_dtype_the_chip_lacks_is_invalid(chip, dtype):
    x = np.ones(32, dtype)
    out = np.zeros_like(x)
    status, size, executor = aclnn.aclnnLeakyReluGetWorkspaceSize(x, 0.1, out)
    assert status == ACLNN_SUCCESS  # the tensors are fine; the chip is the stream's
    stream = Stream(chip)
    assert aclnn.aclnnLeakyRelu(None, size, executor, stream) == ACLNN_ERR_PARAM_INVALID
    assert "does not support" in aclnn.aclGetRecentErrMsg()
    assert stream.results == [] and not out.any()


def test_execute_rejects_null_executor_or_stream_and_reuse():
    grad_output, x = _tensors(shape=(32,))
    grad_input = np.empty_like(x)
    stream = Stream("ft78ne")
    status, size, executor = aclnn.aclnnSwishBackwardGetWorkspaceSize(grad_output, x, None,
                                                                      grad_input)
    assert aclnn.aclnnSwishBackward(None, size, None, stream) == ACLNN_ERR_PARAM_NULLPTR
    assert aclnn.aclnnSwishBackward(None, size, executor, None) == ACLNN_ERR_PARAM_NULLPTR
    assert aclnn.aclnnSwishBackward(None, -1, executor, stream) == ACLNN_ERR_PARAM_INVALID
    assert aclnn.aclnnSwishBackward(None, size, executor, stream) == ACLNN_SUCCESS
    assert aclnn.aclnnSwishBackward(None, size, executor, stream) == ACLNN_ERR_PARAM_INVALID
    assert "already run" in aclnn.aclGetRecentErrMsg()
    assert aclnn.aclrtSynchronizeStream(stream) == ACLNN_SUCCESS
    assert len(stream.results) == 1


def test_stream_binds_chip_and_mask():
    chip = dspsim.Chip("mt7004")
    stream = Stream(chip, core_mask=0xFF)
    assert stream.chip is chip and stream.last_result is None
    x = np.linspace(-1, 1, 4096, dtype=np.float32)
    status, size, executor = aclnn.aclnnInplaceLeakyReluGetWorkspaceSize(x, 0.5)
    assert aclnn.aclnnInplaceLeakyRelu(None, size, executor, stream) == ACLNN_SUCCESS
    assert aclnn.aclrtSynchronizeStream(stream) == ACLNN_SUCCESS
    result = stream.last_result
    assert result.metadata["core_mask"] == 0xFF and result.metadata["cores"] == [0, 1, 2, 3]
    assert any("core_mask" in w for w in result.warnings)  # bits above 4 cores ignored


# --------------------------------------------------------------------------- streams, events
def _leaky(x, out, slope, stream):
    status, size, executor = aclnn.aclnnLeakyReluGetWorkspaceSize(x, slope, out)
    assert status == ACLNN_SUCCESS, aclnn.aclGetRecentErrMsg()
    assert aclnn.aclnnLeakyRelu(None, size, executor, stream) == ACLNN_SUCCESS


def test_execute_enqueues_and_synchronize_runs_a_chain_through_one_buffer():
    chip = dspsim.Chip("mt7004")
    stream = Stream(chip, core_mask=0xF)
    x, _ = _tensors(shape=(4, 1000))
    hidden, out = np.zeros_like(x), np.zeros_like(x)
    _leaky(x, hidden, 0.5, stream)
    _leaky(hidden, out, 0.25, stream)  # reads what the first kernel writes
    assert not hidden.any() and not out.any()  # nothing has run
    assert aclnn.aclrtSynchronizeStream(stream) == ACLNN_SUCCESS
    np.testing.assert_allclose(hidden, l_relu(x, 0.5), rtol=1e-6)
    np.testing.assert_allclose(out, l_relu(l_relu(x, 0.5), 0.25), rtol=1e-6)
    first, second = stream.results
    program = stream.program_result
    assert [c.result for c in program.calls] == [first, second]
    assert program.calls[1].start_cycle >= program.calls[0].end_cycle  # stream order
    assert aclnn.aclrtSynchronizeStream(stream) == ACLNN_SUCCESS  # nothing left: no-op


def test_events_order_two_streams_and_disjoint_masks_overlap():
    chip = dspsim.Chip("mt7004")
    left, right = Stream(chip, core_mask=0x3), Stream(chip, core_mask=0xC)
    x, y = _tensors(shape=(20000,))
    a, b, c = np.zeros_like(x), np.zeros_like(x), np.zeros_like(x)
    _leaky(x, a, 0.5, left)
    _leaky(y, b, 0.5, right)  # independent of the left stream: runs beside it
    status, event = aclnn.aclrtCreateEvent()
    assert status == ACLNN_SUCCESS
    assert aclnn.aclrtRecordEvent(event, left) == ACLNN_SUCCESS
    assert aclnn.aclrtStreamWaitEvent(right, event) == ACLNN_SUCCESS
    _leaky(a, c, 0.5, right)  # reads the left stream's output: ordered by the event
    assert aclnn.aclrtSynchronizeStream(right) == ACLNN_SUCCESS
    np.testing.assert_allclose(c, l_relu(l_relu(x, 0.5), 0.5), rtol=1e-6)
    calls = right.program_result.calls
    assert calls[1].start_cycle < calls[0].end_cycle  # disjoint masks overlap
    assert calls[2].start_cycle >= calls[0].end_cycle  # the wait held the third call
    assert left.results == [calls[0].result] and right.results == [calls[1].result,
                                                                    calls[2].result]


def test_a_race_fails_synchronize_and_changes_no_tensor():
    chip = dspsim.Chip("mt7004")
    left, right = Stream(chip, core_mask=0x3), Stream(chip, core_mask=0xC)
    x, _ = _tensors(shape=(5000,))
    a, c = np.zeros_like(x), np.zeros_like(x)
    _leaky(x, a, 0.5, left)
    _leaky(a, c, 0.5, right)  # reads a while the left stream writes it, with no event
    assert aclnn.aclrtSynchronizeStream(left) == ACLNN_ERR_PARAM_INVALID
    message = aclnn.aclGetRecentErrMsg()
    assert "race" in message.lower() and "l_relu" in message
    assert not a.any() and not c.any() and not left.results


def test_a_wait_on_an_event_never_recorded_fails_synchronize():
    chip = dspsim.Chip("mt7004")
    stream = Stream(chip)
    _, event = aclnn.aclrtCreateEvent()
    assert aclnn.aclrtStreamWaitEvent(stream, event) == ACLNN_SUCCESS
    x, _ = _tensors(shape=(64,))
    out = np.zeros_like(x)
    _leaky(x, out, 0.5, stream)
    assert aclnn.aclrtSynchronizeStream(stream) == ACLNN_ERR_PARAM_INVALID
    assert "never recorded" in aclnn.aclGetRecentErrMsg() or "record" in \
        aclnn.aclGetRecentErrMsg()
    assert not out.any()


@pytest.mark.parametrize("call", ["record", "wait", "sync"])
def test_runtime_calls_refuse_null_and_foreign_arguments(call):
    stream = Stream("mt7004")
    _, event = aclnn.aclrtCreateEvent()
    if call == "record":
        assert aclnn.aclrtRecordEvent(None, stream) == ACLNN_ERR_PARAM_NULLPTR
        assert aclnn.aclrtRecordEvent(event, "s") == ACLNN_ERR_PARAM_INVALID
    elif call == "wait":
        assert aclnn.aclrtStreamWaitEvent(stream, object()) == ACLNN_ERR_PARAM_INVALID
        assert aclnn.aclrtStreamWaitEvent(None, event) == ACLNN_ERR_PARAM_NULLPTR
    else:
        assert aclnn.aclrtSynchronizeStream(None) == ACLNN_ERR_PARAM_NULLPTR
    assert aclnn.aclGetRecentErrMsg()


def test_a_wait_on_an_event_of_work_already_run_holds_nothing():
    chip = dspsim.Chip("mt7004")
    first, second = Stream(chip, core_mask=0x3), Stream(chip, core_mask=0xC)
    x, _ = _tensors(shape=(256,))
    a, b = np.zeros_like(x), np.zeros_like(x)
    _leaky(x, a, 0.5, first)
    _, event = aclnn.aclrtCreateEvent()
    assert aclnn.aclrtRecordEvent(event, first) == ACLNN_SUCCESS
    assert aclnn.aclrtSynchronizeStream(first) == ACLNN_SUCCESS
    assert aclnn.aclrtStreamWaitEvent(second, event) == ACLNN_SUCCESS
    _leaky(a, b, 0.5, second)
    assert aclnn.aclrtSynchronizeStream(second) == ACLNN_SUCCESS
    np.testing.assert_allclose(b, l_relu(l_relu(x, 0.5), 0.5), rtol=1e-6)
