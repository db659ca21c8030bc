"""Threads sharing one Chip: aclnn streams, programs and plain calls give right answers,
and abandoned runtime state does not keep a chip alive."""
from __future__ import annotations

import gc
import sys
import threading
import weakref

import numpy as np
import pytest
from reference import l_relu

import dspsim
from dspsim import aclnn
from dspsim.aclnn import ACLNN_ERR_PARAM_INVALID, ACLNN_SUCCESS, Stream

THREADS = 4
ROUNDS = 10


@pytest.fixture(autouse=True)
def _switch_often():
    """Switch threads every few bytecodes so that unguarded state is torn reliably."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(interval)


def _run_threads(work) -> list[BaseException]:
    failures: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def body(k: int) -> None:
        try:
            start.wait()
            work(k)
        except BaseException as exc:  # noqa: BLE001 - collected and reported by the test
            failures.append(exc)

    threads = [threading.Thread(target=body, args=(k,)) for k in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return failures


def test_aclnn_streams_on_threads_sharing_a_chip():
    chip = dspsim.Chip("mt7004")
    wrong: list[str] = []

    def work(k: int) -> None:
        stream = Stream(chip, core_mask=1 << k)
        rng = np.random.default_rng(k)
        for round_ in range(ROUNDS):
            x = rng.standard_normal(4096 + 64 * k).astype(np.float32)
            out = np.full_like(x, np.nan)
            status, size, executor = aclnn.aclnnLeakyReluGetWorkspaceSize(x, 0.1, out)
            assert status == ACLNN_SUCCESS, aclnn.aclGetRecentErrMsg()
            status = aclnn.aclnnLeakyRelu(None, size, executor, stream)
            assert status == ACLNN_SUCCESS, aclnn.aclGetRecentErrMsg()
            status = aclnn.aclrtSynchronizeStream(stream)
            assert status == ACLNN_SUCCESS, aclnn.aclGetRecentErrMsg()
            if not np.allclose(out, l_relu(x, 0.1), rtol=1e-6, atol=1e-7):
                wrong.append(f"thread {k} round {round_}")
            assert executor.result is not None and executor.result.metadata["cores"] == [k]

    failures = _run_threads(work)
    assert not failures, failures[:3]
    assert not wrong, f"{len(wrong)} of {THREADS * ROUNDS} calls returned a wrong out: {wrong}"


def test_program_built_from_threads_numbers_every_call():
    chip = dspsim.Chip("ft78ne")
    n = 1024
    src = np.arange(THREADS * ROUNDS * n, dtype=np.float32) - 7
    chip.write(0x80000000, src)
    prog = chip.program()
    streams = [prog.stream() for _ in range(THREADS)]

    def work(k: int) -> None:
        for round_ in range(ROUNDS):
            offset = (k * ROUNDS + round_) * n * 4
            streams[k].fp_l_relu_s(0x80000000 + offset, 0x90000000 + offset, n, 0.5,
                                   1 << k)

    assert not _run_threads(work)
    assert sorted(c.index for c in prog.calls) == list(range(THREADS * ROUNDS))
    prog.run()
    np.testing.assert_array_equal(chip.read(0x90000000, src.size, np.float32),
                                  l_relu(src, 0.5))


def test_plain_calls_on_threads_sharing_a_chip():
    chip = dspsim.Chip("ft78ne")
    n = 2048

    def work(k: int) -> None:
        rng = np.random.default_rng(k)
        src, dst = 0x80000000 + k * 0x100000, 0x90000000 + k * 0x100000
        for _ in range(ROUNDS):
            x = rng.standard_normal(n).astype(np.float32)
            chip.write(src, x)
            chip.fp_l_relu_s(src, dst, n, 0.25, 1 << (k % chip.config.cores))
            np.testing.assert_allclose(chip.read(dst, n, np.float32), l_relu(x, 0.25),
                                       rtol=1e-6)

    assert not _run_threads(work)


def test_a_failed_run_fails_every_stream_whose_work_it_held():
    chip = dspsim.Chip("mt7004")
    x = np.ones(1024, np.float32)
    out = np.empty_like(x)
    first, second = Stream(chip, core_mask=1), Stream(chip, core_mask=2)
    for stream in (first, second):  # both write `out` with no event between them: a race
        status, size, executor = aclnn.aclnnLeakyReluGetWorkspaceSize(x, 0.1, out)
        assert aclnn.aclnnLeakyRelu(None, size, executor, stream) == ACLNN_SUCCESS
    assert aclnn.aclrtSynchronizeStream(first) == ACLNN_ERR_PARAM_INVALID
    # the second stream's call was in the failed work: its synchronisation says so
    assert aclnn.aclrtSynchronizeStream(second) == ACLNN_ERR_PARAM_INVALID
    assert "did not run" in aclnn.aclGetRecentErrMsg()
    assert aclnn.aclrtSynchronizeStream(second) == ACLNN_SUCCESS  # reported once


def test_abandoned_streams_do_not_pin_their_chip():
    chip = dspsim.Chip("mt7004")
    x = np.ones(1 << 16, np.float32)
    out = np.empty_like(x)
    stream = Stream(chip, core_mask=1)
    status, size, executor = aclnn.aclnnLeakyReluGetWorkspaceSize(x, 0.1, out)
    assert aclnn.aclnnLeakyRelu(None, size, executor, stream) == ACLNN_SUCCESS
    chip_ref, out_ref = weakref.ref(chip), weakref.ref(x)
    del chip, stream, executor, x, out
    gc.collect()
    assert chip_ref() is None and out_ref() is None


def test_destroy_stream_and_reset_device():
    chip = dspsim.Chip("mt7004")
    x = np.ones(1024, np.float32)
    out = np.zeros_like(x)
    stream = Stream(chip, core_mask=1)
    status, size, executor = aclnn.aclnnLeakyReluGetWorkspaceSize(x, 0.1, out)
    assert aclnn.aclnnLeakyRelu(None, size, executor, stream) == ACLNN_SUCCESS
    assert aclnn.aclrtResetDevice(chip) == ACLNN_SUCCESS  # drops the work: nothing runs
    assert aclnn.aclrtSynchronizeStream(stream) == ACLNN_SUCCESS
    assert not out.any() and executor.result is None

    status, size, executor = aclnn.aclnnLeakyReluGetWorkspaceSize(x, 0.1, out)
    assert aclnn.aclnnLeakyRelu(None, size, executor, stream) == ACLNN_SUCCESS
    assert aclnn.aclrtDestroyStream(stream) == ACLNN_SUCCESS  # runs what it holds first
    np.testing.assert_array_equal(out, l_relu(x, 0.1))
    status, size, executor = aclnn.aclnnLeakyReluGetWorkspaceSize(x, 0.1, out)
    assert aclnn.aclnnLeakyRelu(None, size, executor, stream) == ACLNN_ERR_PARAM_INVALID
    assert "destroyed" in aclnn.aclGetRecentErrMsg()
    assert aclnn.aclrtDestroyStream(stream) == ACLNN_ERR_PARAM_INVALID
