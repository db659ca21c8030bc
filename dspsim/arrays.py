"""Operators on numpy arrays: :func:`simulate` places them, calls, and reads the result back.

The arrays are checked (numbers only, one length, convertible to the call's dtype) and the
call is checked and timed before a single byte is written to the chip's memory.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dspsim import kernels
from dspsim.chip import Chip
from dspsim.placement import c_arguments, place_operands
from dspsim.result import RunResult
from dspsim.sim.engine.machine import check_fidelity
from dspsim.sim.errors import ArgumentError, DTypeError

#: numpy dtype kinds that hold real numbers: bool, signed and unsigned integers, floats
_REAL_KINDS = "biuf"


def _is_real(dtype: np.dtype) -> bool:
    return dtype.kind in _REAL_KINDS or any(dtype == d.numpy for d in kernels.DTYPES.values())


def as_inputs(cname: kernels.CName, arrays: Sequence) -> list[np.ndarray]:
    """The operator's input arrays, flattened and converted to the call's dtype.

    A clear error for the wrong number of arrays, lists of unequal lengths, complex
    numbers, Python objects, strings, or arrays of different lengths.
    """
    op, name = cname.operator, cname.name
    if len(arrays) != len(op.inputs):
        raise ArgumentError(f"{name} takes {len(op.inputs)} input arrays "
                            f"({', '.join(op.inputs)}), got {len(arrays)}")
    converted = []
    for operand, value in zip(op.inputs, arrays, strict=True):
        try:
            array = np.asarray(value)
        except (ValueError, TypeError) as exc:  # ragged nested lists, among others
            raise ArgumentError(f"{name}: input {operand} is not an array of numbers "
                                f"({str(exc).splitlines()[0]}); pass a flat list or a numpy "
                                f"array") from None
        if array.dtype.kind == "c":
            raise DTypeError(f"{name}: input {operand} is complex ({array.dtype}); the "
                             f"operators take real numbers, pass the real part explicitly "
                             f"(numpy.real) if that is what you mean")
        if not _is_real(array.dtype):
            what = "Python objects (such as None or integers too large for 64 bits)" \
                if array.dtype.kind == "O" else f"values of dtype {array.dtype}"
            raise DTypeError(f"{name}: input {operand} holds {what}; pass real numbers "
                             f"(floats, integers or booleans)")
        with np.errstate(over="ignore", invalid="ignore"):  # as a C cast: inf beyond range
            converted.append(array.reshape(-1).astype(cname.dtype.numpy))
    lengths = [len(a) for a in converted]
    if len(set(lengths)) > 1:
        raise ArgumentError(f"{name}: input arrays differ in length: " + ", ".join(
            f"{o} {n}" for o, n in zip(op.inputs, lengths, strict=True)))
    return converted


def simulate(name: str, *arrays, chip: Chip | str = "ft78ne", core_mask: int | None = None,
             core: int | None = None, fidelity: str = "fast", tile_bytes: int | None = None,
             **params) -> tuple[np.ndarray, RunResult]:
    """Run an operator on numpy arrays: place them in simulated memory, call, read back.

    ``arrays`` are the operator's inputs in C order (e.g. ``dy, x`` for relu_grad); they are
    converted to the call's dtype; ``params`` are the operator's parameters (``alpha=0.1``);
    ``tile_bytes`` fixes a shared-storage call's tile size. Returns ``(result array,
    RunResult)``. Every argument is checked before anything is written to the chip's memory.
    """
    chip = chip if isinstance(chip, Chip) else Chip(chip)
    cname = chip.resolve(name)
    op = cname.operator
    check_fidelity(fidelity)
    inputs = as_inputs(cname, arrays)
    length = len(inputs[0])
    addresses = place_operands(chip.config, cname, length)
    args = c_arguments(op, addresses, length, params)
    if cname.storage == "shared":
        kwargs = {"core_mask": core_mask}
    elif core_mask is not None:
        raise ArgumentError(f"{name} is a private-storage call and takes no core_mask; pass "
                            f"core= to choose the executing core")
    else:
        kwargs = {}
    prepared = chip.prepare(name, *args, core=core, fidelity=fidelity, tile_bytes=tile_bytes,
                            **kwargs)
    for operand, array in zip(prepared.inputs, inputs, strict=True):
        chip.write(operand.span.address, array, core=core)
    result = prepared.finish()
    out = chip.read(addresses[op.output], length, cname.dtype.numpy, core=core)
    return out, result
