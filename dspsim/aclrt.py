"""The ACL runtime side of the aclnn facade: streams, events and synchronisation.

As on an Ascend device, an execute call (``aclnnSwishBackward(..., stream)``) only
enqueues its kernel on the stream; :func:`aclrtSynchronizeStream` runs everything
enqueued on the chip so far, as one :class:`~dspsim.programs.Program` on one timeline:
calls on one stream in order, calls on other streams concurrently where their core masks
allow, ordered across streams by events (:func:`aclrtRecordEvent`,
:func:`aclrtStreamWaitEvent`). Streams that share events must share a :class:`Chip`.

Tensors are numpy arrays. Each distinct tensor gets its own buffer in the chip's DDR for
the program (the same memory passed to two calls, as one array or as two views of it, is
the same buffer, so the second reads what the first wrote; views that overlap only in
part are refused, as are outputs whose elements share memory); arrays that no earlier
call writes are copied in when the program runs, and every output is copied back once
it has run. A program that fails (a race, a
wait that can never end, operands that do not fit) runs nothing and changes no tensor;
every stream whose kernels it held reports the failure when it is next synchronised.

Threads may share a chip, each with its own streams: enqueueing is guarded by the chip's
runtime lock and a synchronisation runs while holding the chip's lock, so a thread that
synchronises waits for any run already holding its kernels. The work enqueued since the
last synchronisation lives on the chip object, so a chip and its tensors are freed with it;
:func:`aclrtDestroyStream` and :func:`aclrtResetDevice` end a stream's or a chip's work.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from dspsim.aclrt_work import BUFFER_ALIGNMENT, PendingWork, runtime_of  # noqa: F401 - re-exported
from dspsim.chip import Chip
from dspsim.placement import c_arguments
from dspsim.programs import Program, ProgramResult
from dspsim.programs.program import Initial
from dspsim.result import RunResult
from dspsim.sim.errors import ArgumentError, DspSimError
from dspsim.tensor_memory import self_overlapping, tensor_key

ACL_SUCCESS = ACLNN_SUCCESS = 0
ACLNN_ERR_PARAM_NULLPTR = 161001
ACLNN_ERR_PARAM_INVALID = 161002

_errors = threading.local()


def aclGetRecentErrMsg() -> str:
    """The message of the most recent failed call on this thread ("" if none)."""
    return getattr(_errors, "message", "")


def fail(status: int, message: str) -> int:
    """Remember ``message`` for :func:`aclGetRecentErrMsg` and return ``status``."""
    _errors.message = message
    return status


class Stream:
    """An in-order queue of kernels on a simulated chip, with the core mask they use.

    Kernels run when the stream is synchronised; each run's
    :class:`~dspsim.result.RunResult` is then in ``results`` (the latest is
    ``last_result``) and the whole program's result in ``program_result``.
    """

    def __init__(self, chip: Chip | str = "mt7004", core_mask: int | None = None) -> None:
        self.chip = chip if isinstance(chip, Chip) else Chip(chip)
        cores = self.chip.config.cores
        if core_mask is not None and (isinstance(core_mask, bool)
                                      or not isinstance(core_mask, (int, np.integer))
                                      or int(core_mask) < 0
                                      or not int(core_mask) & ((1 << cores) - 1)):
            raise ArgumentError(f"Stream: core_mask={core_mask!r} selects no core of "
                                f"{self.chip.name}, which has {cores} cores (all cores: "
                                f"{(1 << cores) - 1:#x}, or None)")
        self.core_mask = core_mask
        self.results: list[RunResult] = []
        self.program_result: ProgramResult | None = None
        self.destroyed = False
        #: why work of this stream that another stream's synchronisation ran failed
        self.failure: str | None = None

    def __repr__(self) -> str:
        mask = "all cores" if self.core_mask is None else f"core_mask={self.core_mask:#x}"
        return f"Stream({self.chip.name}, {mask})"

    @property
    def last_result(self) -> RunResult | None:
        return self.results[-1] if self.results else None

    def enqueue(self, cname, inputs: tuple[np.ndarray, ...], output: np.ndarray,
                params: dict[str, float], in_place: bool = False,
                on_result: Callable[[RunResult], None] | None = None) -> None:
        """Check a kernel on these tensors and append it to the stream (nothing runs).

        ``on_result`` receives the kernel's RunResult once it has run. Raises a
        DspSimError, with nothing enqueued, if the call is invalid.
        """
        if self.destroyed:
            raise ArgumentError(f"{cname.name}: the stream was destroyed "
                                f"(aclrtDestroyStream); create a new Stream(chip)")
        op = cname.operator
        tensors = dict(zip(op.inputs, inputs, strict=True))
        if not in_place:
            tensors[op.output] = output
        if self_overlapping(output):
            raise ArgumentError(f"{cname.name}: the output tensor's elements share memory (a "
                                f"broadcast or as_strided view); pass an array whose elements "
                                f"are distinct, e.g. np.empty(shape, dtype)")
        runtime = runtime_of(self.chip)
        with runtime.lock:
            self._enqueue(runtime.pending, cname, tensors, inputs, output, params, in_place,
                          on_result)

    def _enqueue(self, pending: PendingWork, cname, tensors, inputs, output, params, in_place,
                 on_result) -> None:
        op = cname.operator
        known = dict(pending.buffers)
        try:
            addresses = pending.addresses(cname, tensors)
            if in_place:
                addresses[op.output] = addresses[op.inputs[0]]
            length = int(output.size)
            args = c_arguments(op, addresses, length, params)
            extra = {} if self.core_mask is None else {"core_mask": self.core_mask}
            call = pending.program_stream(self).enqueue(cname.name, *args, **extra)
        except DspSimError:
            pending.buffers = known  # an invalid call allocates nothing
            raise
        read = {tensor_key(a) for a in inputs}
        pending.host.update(read - pending.written)
        pending.written.add(tensor_key(output))
        pending.outputs.setdefault(tensor_key(output), []).append(output)
        pending.calls.append((self, call.index, on_result))


class Event:
    """An ACL event: recorded on one stream, waited for on others (``aclrtCreateEvent``)."""

    def __init__(self) -> None:
        # the program of the work it was last recorded or waited in, and its event there:
        # only the latest, so that an event kept for long holds no finished program
        self._program_event: tuple[Program, Any] | None = None
        self.recorded_on: Chip | None = None  # the chip of its latest record
        self.completed = False  # recorded in work that has run: waiting on it holds nothing

    def _in(self, program: Program):
        if self._program_event is None or self._program_event[0] is not program:
            self._program_event = (program, program.event())
        return self._program_event[1]


def aclrtCreateEvent() -> tuple[int, Event]:
    """A new event; returns ``(status, event)``."""
    return ACL_SUCCESS, Event()


def _check_stream(stream: Any, api: str) -> int | None:
    if stream is None:
        return fail(ACLNN_ERR_PARAM_NULLPTR, f"{api}: stream is null; create a Stream(chip)")
    if not isinstance(stream, Stream):
        return fail(ACLNN_ERR_PARAM_INVALID, f"{api}: stream is a {type(stream).__name__}; "
                    f"create a Stream(chip)")
    if stream.destroyed:
        return fail(ACLNN_ERR_PARAM_INVALID, f"{api}: the stream was destroyed "
                    f"(aclrtDestroyStream); create a new Stream(chip)")
    return None


def _check_event(event: Any, api: str) -> int | None:
    if event is None:
        return fail(ACLNN_ERR_PARAM_NULLPTR, f"{api}: event is null; create one with "
                    f"aclrtCreateEvent()")
    if not isinstance(event, Event):
        return fail(ACLNN_ERR_PARAM_INVALID, f"{api}: event is a {type(event).__name__}; "
                    f"create one with aclrtCreateEvent()")
    return None


def aclrtRecordEvent(event: Event, stream: Stream) -> int:
    """Record ``event`` on ``stream``: it completes once the work enqueued there so far has."""
    bad = _check_event(event, "aclrtRecordEvent") or _check_stream(stream, "aclrtRecordEvent")
    if bad:
        return bad
    runtime = runtime_of(stream.chip)
    with runtime.lock:
        pending = runtime.pending
        if event in pending.recorded:
            return fail(ACLNN_ERR_PARAM_INVALID, "aclrtRecordEvent: this event is already "
                        "recorded in the work enqueued since the last synchronisation; create "
                        "another with aclrtCreateEvent(), or synchronise first")
        try:
            pending.program_stream(stream).record(event._in(pending.program))
        except DspSimError as exc:
            return fail(ACLNN_ERR_PARAM_INVALID, f"aclrtRecordEvent: {exc}")
        event.recorded_on = stream.chip
        event.completed = False
        pending.recorded.append(event)
    return ACL_SUCCESS


def aclrtStreamWaitEvent(stream: Stream, event: Event) -> int:
    """Hold the work enqueued on ``stream`` from now on until ``event`` completes."""
    bad = (_check_stream(stream, "aclrtStreamWaitEvent")
           or _check_event(event, "aclrtStreamWaitEvent"))
    if bad:
        return bad
    runtime = runtime_of(stream.chip)
    with runtime.lock:
        pending = runtime.pending
        if event.completed and event not in pending.recorded:
            return ACL_SUCCESS  # it completed when earlier work ran
        if event.recorded_on is not None and event.recorded_on is not stream.chip:
            return fail(ACLNN_ERR_PARAM_INVALID, f"aclrtStreamWaitEvent: the event is recorded "
                        f"on a stream of another Chip object ({event.recorded_on.name}) than "
                        f"this stream's ({stream.chip.name}); streams that share events must "
                        f"share one Chip: create them with the same Chip, or synchronise the "
                        f"other first")
        pending.program_stream(stream).wait(event._in(pending.program))
    return ACL_SUCCESS


def aclrtSynchronizeStream(stream: Stream) -> int:
    """Run everything enqueued on ``stream``'s chip (every stream of it) and wait for it.

    Outputs are copied into their tensors and each stream's ``results`` grows by its
    kernels' RunResults. On failure (a race, a wait on an event never recorded, a cycle
    of waits) nothing runs, no tensor changes, the enqueued work is dropped, and the
    status says why (:func:`aclGetRecentErrMsg`); the other streams whose kernels were in
    that work report it at their next synchronisation. A thread synchronising while
    another thread's synchronisation runs its kernels waits for that run to end.
    """
    bad = _check_stream(stream, "aclrtSynchronizeStream")
    if bad:
        return bad
    with stream.chip.lock:  # one run at a time on the chip's memory
        status = _run_pending(stream)
    if status == ACL_SUCCESS and stream.failure is not None:
        message, stream.failure = stream.failure, None
        return fail(ACLNN_ERR_PARAM_INVALID, message)
    return status


def _run_pending(stream: Stream) -> int:
    chip = stream.chip
    pending = runtime_of(chip).take()
    if not pending.calls:
        return ACL_SUCCESS
    sources = [(array, address) for key, (array, address) in pending.buffers.items()
               if key in pending.host]

    def copy_in() -> None:
        for array, address in sources:
            chip.write(address, np.ascontiguousarray(array).reshape(-1))

    spans = tuple(chip.memory.resolve(address, array.nbytes) for array, address in sources
                  if array.nbytes)
    try:
        result = pending.program.run(numerics=True, initial=Initial(spans, copy_in))
    except DspSimError as exc:
        for owner, _, _ in pending.calls:
            if owner is not stream:
                owner.failure = (f"aclrtSynchronizeStream: this stream's kernels did not run: "
                                 f"{exc}")
        return fail(ACLNN_ERR_PARAM_INVALID, f"aclrtSynchronizeStream: {exc}")
    for key, arrays in pending.outputs.items():
        address = pending.buffers[key][1]
        values = chip.read(address, int(arrays[0].size), arrays[0].dtype)
        for array in arrays:
            array[...] = values.reshape(array.shape)
    for event in pending.recorded:
        event.completed = True
    records = {record.index: record for record in result.calls}
    for owner, index, on_result in pending.calls:
        owner.results.append(records[index].result)
        owner.program_result = result
        if on_result is not None:
            on_result(records[index].result)
    return ACL_SUCCESS


def aclrtDestroyStream(stream: Stream) -> int:
    """Destroy ``stream``: the work enqueued on its chip runs first (as
    :func:`aclrtSynchronizeStream`), then the stream refuses further use."""
    status = aclrtSynchronizeStream(stream)
    if not isinstance(stream, Stream) or stream.destroyed:
        return status
    stream.destroyed = True
    return status


def aclrtResetDevice(chip: Chip) -> int:
    """Drop every kernel, record and wait enqueued on ``chip`` and not yet run: no tensor
    changes, and the chip's streams start afresh (the runtime's device reset)."""
    if not isinstance(chip, Chip):
        return fail(ACLNN_ERR_PARAM_INVALID, f"aclrtResetDevice: {chip!r} is not a Chip; pass "
                    f"the chip of the streams, e.g. stream.chip")
    with chip.lock:
        dropped = runtime_of(chip).take()
    for event in dropped.recorded:
        event.recorded_on, event.completed = None, False
    return ACL_SUCCESS
