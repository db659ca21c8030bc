"""An aclnn-style facade: the Ascend two-phase calls, run on a simulated chip.

The operator library's reference pages describe ``aclnnSwishBackward`` and
``aclnnLeakyRelu`` / ``aclnnInplaceLeakyRelu`` as two-phase calls: ``...GetWorkspaceSize``
checks the tensors and builds an executor, then the execute call enqueues it on a stream.
Here numpy arrays play the tensors (the output tensor is written in place), a
:class:`~dspsim.aclrt.Stream` binds a chip and a core mask, and synchronising runs what was
enqueued as one program (:mod:`dspsim.aclrt`: streams, events, synchronisation). Each
kernel is the matching shared-storage kernel (``{fp|hp|bf}_swish_grad_s``,
``{fp|hp|bf}_l_relu_s``), so a kernel alone costs exactly the cycles, and writes the trace,
that the DSP-style call does::

    stream = Stream("mt7004", core_mask=0xF)
    status, workspace_size, executor = aclnnSwishBackwardGetWorkspaceSize(
        grad_output, x, None, grad_input)          # beta None means 1.0
    status = aclnnSwishBackward(None, workspace_size, executor, stream)   # enqueued
    status = aclrtSynchronizeStream(stream)        # runs; grad_input now holds the result
    stream.last_result.cycles                      # the RunResult of the kernel

C out-parameters become return values: ``...GetWorkspaceSize`` returns
``(status, workspace_size, executor)``. Status codes are CANN's; when one is not
``ACLNN_SUCCESS``, :func:`aclGetRecentErrMsg` says why. CANN checks the device's dtypes
when the executor is built; here the device is the stream's chip, so a dtype the chip
lacks is reported by the execute call. The runtime's names (``Stream``,
``aclrtCreateEvent``, ``aclrtRecordEvent``, ``aclrtStreamWaitEvent``,
``aclrtSynchronizeStream``, ``aclrtDestroyStream``, ``aclrtResetDevice``) are available
here too. Threads may share a chip, each with its own streams (see ``docs/threads.md``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np

from dspsim import kernels
from dspsim.aclrt import (  # noqa: F401 - re-exported
    ACL_SUCCESS,
    ACLNN_ERR_PARAM_INVALID,
    ACLNN_ERR_PARAM_NULLPTR,
    ACLNN_SUCCESS,
    Event,
    Stream,
    aclGetRecentErrMsg,
    aclrtCreateEvent,
    aclrtDestroyStream,
    aclrtRecordEvent,
    aclrtResetDevice,
    aclrtStreamWaitEvent,
    aclrtSynchronizeStream,
    fail,
)
from dspsim.result import RunResult
from dspsim.sim.errors import DspSimError

#: numpy element types of the tensors, by the library's dtype names
TENSOR_DTYPES = {np.dtype(np.float32): "fp32", np.dtype(np.float16): "fp16",
                 np.dtype(ml_dtypes.bfloat16): "bf16"}

@dataclass
class Executor:
    """An operator call checked by ``...GetWorkspaceSize``, ready to run once on a stream."""

    stem: str  # the kernel's operator, e.g. swish_grad
    dtype: str  # fp32, fp16 or bf16
    inputs: tuple[np.ndarray, ...]  # in the kernel's input order; read when it runs
    output: np.ndarray  # written in place when it runs
    params: dict[str, float]
    in_place: bool = False
    workspace_size: int = 0  # the kernels need no workspace
    result: RunResult | None = None
    ran: bool = field(default=False)

    @property
    def c_name(self) -> str:
        """The shared-storage kernel this executor runs, e.g. hp_swish_grad_s."""
        return kernels.c_name(kernels.OPERATORS[self.stem], self.dtype, "shared")


# --------------------------------------------------------------------------- checks
class _Invalid(Exception):
    """A tensor or scalar check failed: carries the CANN status and the message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _tensor(name: str, value: Any) -> np.ndarray:
    if value is None:
        raise _Invalid(ACLNN_ERR_PARAM_NULLPTR, f"{name} is null; pass a numpy array")
    if not isinstance(value, np.ndarray):
        raise _Invalid(ACLNN_ERR_PARAM_INVALID,
                       f"{name} must be a numpy array (the tensor), got {type(value).__name__}")
    if value.dtype not in TENSOR_DTYPES:
        raise _Invalid(ACLNN_ERR_PARAM_INVALID,
                       f"{name} has dtype {value.dtype}; supported: float32, float16, bfloat16")
    return value


def _same_layout(named: dict[str, np.ndarray]) -> str:
    """The common dtype name of the tensors; they must agree in shape and dtype."""
    (first_name, first), *others = named.items()
    for name, tensor in others:
        if tensor.dtype != first.dtype:
            raise _Invalid(ACLNN_ERR_PARAM_INVALID, f"{name} has dtype {tensor.dtype} but "
                           f"{first_name} has {first.dtype}; all tensors must share one dtype")
        if tensor.shape != first.shape:
            raise _Invalid(ACLNN_ERR_PARAM_INVALID, f"{name} has shape {tensor.shape} but "
                           f"{first_name} has {first.shape}; all tensors must share one shape")
    return TENSOR_DTYPES[first.dtype]


def _writable(name: str, tensor: np.ndarray) -> None:
    if not tensor.flags.writeable:
        raise _Invalid(ACLNN_ERR_PARAM_INVALID, f"{name} is read-only; the result is written "
                       f"into it, so pass a writable array")


def _scalar(name: str, value: Any) -> float:
    """An aclScalar: a Python or numpy number (bool and integers convert to float)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if not isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
        raise _Invalid(ACLNN_ERR_PARAM_INVALID,
                       f"{name}={value!r} must be a number (float, int or bool)")
    try:
        return float(value)
    except OverflowError:
        raise _Invalid(ACLNN_ERR_PARAM_INVALID, f"{name} is an integer of "
                       f"{len(str(abs(int(value))))} digits, too large for a float") from None


def _param(stem: str, name: str, value: float, dtype: str) -> dict[str, float]:
    """Validate a parameter as the kernel will (finite, within its range and the dtype's)."""
    param = next(p for p in kernels.OPERATORS[stem].params if p.name == name)
    try:
        return {name: param.validate(stem, value, kernels.DTYPES[dtype])}
    except DspSimError as exc:
        raise _Invalid(ACLNN_ERR_PARAM_INVALID, str(exc)) from None


def _build(check) -> tuple[int, int, Executor | None]:
    try:
        executor = check()
    except _Invalid as exc:
        return fail(exc.status, str(exc)), 0, None
    return ACLNN_SUCCESS, executor.workspace_size, executor


# --------------------------------------------------------------------------- execution
def _run(workspace, workspace_size: int, executor: Executor | None, stream: Stream | None,
         api: str) -> int:
    if executor is None:
        return fail(ACLNN_ERR_PARAM_NULLPTR, f"{api}: executor is null; call "
                     f"{api}GetWorkspaceSize first")
    if stream is None:
        return fail(ACLNN_ERR_PARAM_NULLPTR, f"{api}: stream is null; create a Stream(chip)")
    if not isinstance(executor, Executor):
        return fail(ACLNN_ERR_PARAM_INVALID, f"{api}: executor is a {type(executor).__name__}; "
                     f"pass the executor that {api}GetWorkspaceSize returned")
    if not isinstance(stream, Stream):
        return fail(ACLNN_ERR_PARAM_INVALID, f"{api}: stream is a {type(stream).__name__}; "
                     f"create a Stream(chip)")
    size_ok = isinstance(workspace_size, (int, np.integer))
    if not size_ok or workspace_size < executor.workspace_size:
        return fail(ACLNN_ERR_PARAM_INVALID, f"{api}: workspaceSize={workspace_size!r}; pass "
                     f"the {executor.workspace_size} that {api}GetWorkspaceSize returned")
    if executor.ran:
        return fail(ACLNN_ERR_PARAM_INVALID, f"{api}: this executor has already run; an "
                     f"executor runs once, call {api}GetWorkspaceSize again")
    chip = stream.chip
    if executor.dtype not in chip.config.dtypes:
        return fail(ACLNN_ERR_PARAM_INVALID, f"{api}: {chip.name} does not support "
                     f"{executor.dtype} tensors; its dtypes are {', '.join(chip.config.dtypes)}")
    try:  # the tensors may have changed since the executor was built
        named = {f"input {i}": t for i, t in enumerate(executor.inputs)}
        _same_layout({"output": executor.output, **named})
        _writable("output", executor.output)
    except _Invalid as exc:
        return fail(exc.status, f"{api}: {exc}")
    try:
        cname = chip.resolve(executor.c_name)
        stream.enqueue(cname, executor.inputs, executor.output, executor.params,
                       in_place=executor.in_place,
                       on_result=lambda result: setattr(executor, "result", result))
    except DspSimError as exc:
        return fail(ACLNN_ERR_PARAM_INVALID, f"{api}: {exc}")
    executor.ran = True
    return ACLNN_SUCCESS


# --------------------------------------------------------------------------- SwishBackward
def aclnnSwishBackwardGetWorkspaceSize(gradOutput, self, betaOptional, gradInput
                                       ) -> tuple[int, int, Executor | None]:
    """Check a swish backward call: gradInput = gradOutput * swish'(self).

    ``betaOptional`` None means 1.0. Returns ``(status, workspace_size, executor)``.
    """
    def check() -> Executor:
        tensors = {"gradOutput": _tensor("gradOutput", gradOutput),
                   "self": _tensor("self", self),
                   "gradInput": _tensor("gradInput", gradInput)}
        dtype = _same_layout(tensors)
        _writable("gradInput", gradInput)
        beta = 1.0 if betaOptional is None else _scalar("betaOptional", betaOptional)
        return Executor("swish_grad", dtype, (gradOutput, self), gradInput,
                        _param("swish_grad", "beta", beta, dtype))
    return _build(check)


def aclnnSwishBackward(workspace, workspaceSize: int, executor: Executor | None,
                       stream: Stream | None) -> int:
    """Run a swish backward executor on ``stream``'s chip; returns the status."""
    return _run(workspace, workspaceSize, executor, stream, "aclnnSwishBackward")


# --------------------------------------------------------------------------- LeakyRelu
def aclnnLeakyReluGetWorkspaceSize(self, negativeSlope, out) -> tuple[int, int, Executor | None]:
    """Check a leaky ReLU call: out = self where self > 0, else negativeSlope * self.

    Returns ``(status, workspace_size, executor)``.
    """
    def check() -> Executor:
        tensors = {"self": _tensor("self", self), "out": _tensor("out", out)}
        dtype = _same_layout(tensors)
        _writable("out", out)
        slope = _negative_slope(negativeSlope, dtype)
        return Executor("l_relu", dtype, (self,), out, slope)
    return _build(check)


def aclnnLeakyRelu(workspace, workspaceSize: int, executor: Executor | None,
                   stream: Stream | None) -> int:
    """Run a leaky ReLU executor on ``stream``'s chip; returns the status."""
    return _run(workspace, workspaceSize, executor, stream, "aclnnLeakyRelu")


def aclnnInplaceLeakyReluGetWorkspaceSize(selfRef, negativeSlope
                                          ) -> tuple[int, int, Executor | None]:
    """Check an in-place leaky ReLU call: selfRef is both input and output.

    Returns ``(status, workspace_size, executor)``.
    """
    def check() -> Executor:
        dtype = _same_layout({"selfRef": _tensor("selfRef", selfRef)})
        _writable("selfRef", selfRef)
        slope = _negative_slope(negativeSlope, dtype)
        return Executor("l_relu", dtype, (selfRef,), selfRef, slope, in_place=True)
    return _build(check)


def aclnnInplaceLeakyRelu(workspace, workspaceSize: int, executor: Executor | None,
                          stream: Stream | None) -> int:
    """Run an in-place leaky ReLU executor on ``stream``'s chip; returns the status."""
    return _run(workspace, workspaceSize, executor, stream, "aclnnInplaceLeakyRelu")


def _negative_slope(value, dtype: str) -> dict[str, float]:
    # negativeSlope is a required aclScalar (unlike SwishBackward's betaOptional)
    if value is None:
        raise _Invalid(ACLNN_ERR_PARAM_NULLPTR, "negativeSlope is null; pass a number "
                       "(the DSP-style fp_l_relu_s defaults it to 0.01)")
    return _param("l_relu", "negative_slope", _scalar("negativeSlope", value), dtype)


__all__ = [
    "ACL_SUCCESS", "ACLNN_SUCCESS", "ACLNN_ERR_PARAM_NULLPTR", "ACLNN_ERR_PARAM_INVALID",
    "Stream", "Event", "Executor", "aclrtCreateEvent", "aclrtRecordEvent",
    "aclrtStreamWaitEvent", "aclrtSynchronizeStream", "aclrtDestroyStream", "aclrtResetDevice",
    "aclGetRecentErrMsg", "aclnnSwishBackwardGetWorkspaceSize", "aclnnSwishBackward",
    "aclnnLeakyReluGetWorkspaceSize", "aclnnLeakyRelu", "aclnnInplaceLeakyReluGetWorkspaceSize",
    "aclnnInplaceLeakyRelu",
]
