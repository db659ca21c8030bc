"""Checking an operator call's arguments against the operator and the chip.

:func:`bind_call` turns C-ordered arguments into a :class:`BoundCall`: operands resolved
in the memory map, parameters validated in the call's dtype, the core mask turned into
cores. It reads and writes nothing; every problem is a DspSimError naming the value.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dspsim import kernels
from dspsim.sim.chip.load import ChipConfig
from dspsim.sim.engine.job import Operand
from dspsim.sim.errors import AddressError, ArgumentError
from dspsim.sim.memory import Memory, Span


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


@dataclass(frozen=True)
class BoundCall:
    """A call whose arguments have been checked: ready to compute and simulate."""

    cname: kernels.CName
    length: int
    inputs: tuple[Operand, ...]
    output: Operand
    params: dict[str, float]
    cores: tuple[int, ...]
    core_mask: int | None
    warnings: tuple[str, ...]


def bind_call(cname: kernels.CName, memory: Memory, args: tuple, kwargs: dict, *,
              core: int | None = None, require_written: bool = True) -> BoundCall:
    """Check a call of ``cname`` against the operator and the chip of ``memory``.

    ``require_written=False`` leaves out the check that the inputs hold data, for a
    caller that writes them once the call is known to be valid.
    """
    name = cname.name
    op = cname.operator
    names = cname.args
    if len(args) > len(names):
        raise ArgumentError(f"{name} takes {len(names)} arguments ({', '.join(names)}), "
                            f"got {len(args)}: {cname.signature()}")
    values = dict(zip(names[:len(args)], args, strict=True))  # the rest come by keyword
    for key, value in kwargs.items():
        if key not in names:
            raise ArgumentError(f"{name} has no argument {key!r}; its arguments are "
                                f"{', '.join(names)}")
        if key in values:
            raise ArgumentError(f"{name}: {key} given twice")
        values[key] = value
    optional = {p.name for p in op.params if p.default is not None} | {"core_mask"}
    missing = [n for n in names if n not in values and n not in optional]
    if missing:
        raise ArgumentError(f"{name}: missing argument {', '.join(missing)}; "
                            f"{cname.signature()}")

    length = values["length"]
    if not _is_int(length):
        raise ArgumentError(f"{name}: length={length!r} must be an integer")
    length = int(length)
    if length < 0:
        raise ArgumentError(f"{name}: length={length} must be >= 0 (0 does nothing)")
    params = {p.name: p.validate(name, values.get(p.name), cname.dtype) for p in op.params}

    itemsize = cname.dtype.itemsize
    spans = {}
    for operand in op.inputs + (op.output,):
        address = values[operand]
        if not _is_int(address):
            raise ArgumentError(f"{name}: {operand}={address!r} must be an address (int)")
        spans[operand] = memory.resolve(int(address), length * itemsize, core=core,
                                        alignment=itemsize)
    warnings: list[str] = []
    if cname.storage == "shared":
        _check_shared(name, spans)
        cores, core_mask = _cores_of_mask(memory.config, name, values.get("core_mask"), warnings)
    else:
        cores, core_mask = (_check_private(name, spans),), None
    _check_overlaps(name, op, spans)
    if require_written:
        for operand in op.inputs:
            memory.check_written(spans[operand])
    warnings.extend(_reinterpreted(memory, cname, {n: spans[n] for n in op.inputs}))
    return BoundCall(cname, length, tuple(Operand(n, spans[n]) for n in op.inputs),
                     Operand(op.output, spans[op.output]), params, cores, core_mask,
                     tuple(warnings))


def _check_shared(name: str, spans: dict[str, Span]) -> None:
    for operand, span in spans.items():
        if span.core is not None:  # in a core's private level
            private = name[:-2] + "_p"
            raise AddressError(
                f"{name}: {operand} at {span.address:#x} is in core {span.core}'s private L2; "
                f"shared-storage calls take DDR or shared SRAM addresses; for operands "
                f"already in L2 use {private}")


def _check_private(name: str, spans: dict[str, Span]) -> int:
    shared_version = name[:-2] + "_s"
    owners = set()
    for operand, span in spans.items():
        if span.core is None:  # in a shared level
            raise AddressError(
                f"{name}: {operand} at {span.address:#x} is in {span.region}, outside the "
                f"executing core's L2; private-storage calls take L2 addresses; for operands "
                f"in DDR or shared SRAM use {shared_version}")
        owners.add(span.core)
    if len(owners) > 1:
        where = ", ".join(f"{o} in core {s.core}'s L2" for o, s in spans.items())
        raise AddressError(f"{name}: operands are split across cores' L2 ({where}); a "
                           f"private-storage call runs on one core: put them in one L2")
    return owners.pop()


def _reinterpreted(memory: Memory, cname, spans: dict) -> list[str]:
    """A warning for each input whose bytes were written as another dtype than the call
    reads them as: the call computes on reinterpreted bytes, not on converted values."""
    reads = np.dtype(cname.dtype.numpy).name
    warnings = []
    for operand, span in spans.items():
        others = sorted(memory.written_dtypes(span) - {reads})
        if others:
            warnings.append(
                f"{cname.name}: {operand} at {span.address:#x} was written as "
                f"{' and '.join(others)} and is read as {reads} ({cname.dtype.name}): the "
                f"bytes are reinterpreted, not converted; write it as {reads} "
                f"(array.astype(numpy.{reads}))")
    return warnings


def _cores_of_mask(config: ChipConfig, name: str, mask,
                   warnings: list[str]) -> tuple[tuple[int, ...], int]:
    count = config.cores
    if mask is None:
        mask = (1 << count) - 1
    if not _is_int(mask) or mask < 0:
        raise ArgumentError(f"{name}: core_mask={mask!r} must be a non-negative integer bit "
                            f"mask (bit i selects core i)")
    mask = int(mask)
    cores = tuple(i for i in range(count) if mask >> i & 1)
    if not cores:
        raise ArgumentError(
            f"{name}: core_mask={mask:#x} selects no core of {config.name}, which has "
            f"{count} cores (valid bits 0..{count - 1}, all cores: {(1 << count) - 1:#x})")
    if mask >> count:
        warnings.append(
            f"core_mask={mask:#x} has bits above {config.name}'s {count} cores; they "
            f"are ignored and the call runs on cores {', '.join(map(str, cores))}")
    return cores, mask


def _check_overlaps(name: str, op: kernels.Operator, spans: dict[str, Span]) -> None:
    out = spans[op.output]
    for operand in op.inputs:
        src = spans[operand]
        if src.overlaps(out) and src.offset != out.offset:
            raise AddressError(
                f"{name}: {op.output} [{out.address:#x}, +{out.nbytes:#x}) partially overlaps "
                f"{operand} [{src.address:#x}, +{src.nbytes:#x}); use the same address for "
                f"an in-place call or separate the ranges")
