"""The launcher's public seam: the four steps every way of running a call goes through.

A checked call (:class:`~dspsim.binding.BoundCall`, from ``chip.bind``) becomes

1. a :class:`~dspsim.sim.engine.job.Job` for the hardware model (:func:`job_for`),
2. a :class:`~dspsim.sim.engine.machine.Timing` when the model runs it (:func:`time_call`;
   a program times many jobs on one timeline instead, :mod:`dspsim.sim.program`),
3. a result in simulated memory (:func:`compute_into_destination`, the numerics), and
4. a :class:`~dspsim.result.RunResult` (:func:`call_result`).

:class:`~dspsim.chip.Chip` calls, programs (:mod:`dspsim.programs`), sweeps
(:mod:`dspsim.sweep`), calibration and the aclnn facade all use these functions and
nothing private of the chip. :class:`Launcher` is what they need of a chip object; it is a
Protocol so that this module and the programs need not import :mod:`dspsim.chip`.

A call's life, one class per stage (each names one thing; later stages hold earlier ones
rather than copying them):

==============================  ==========================================================
``kernels.CName``               which operator: name stem, dtype, storage version
``binding.BoundCall``           its arguments checked against the chip (operands, cores)
``chip.PreparedCall``           a BoundCall already timed, whose inputs may still be written
``sim.engine.job.Job``          what the hardware model runs: sizes, places, mix, cores
``sim.engine.machine.CallRun``  a Job running on a timeline
``sim.engine.machine.Timing``   what the model measured for it (float cycles, slices)
``result.RunResult``            what the user reads: cycles rounded up, bound, per core
==============================  ==========================================================

In a program the same call is also ``programs.EnqueuedCall`` (a BoundCall on a stream),
``sim.program.graph.CallItem`` (its node in the dependency graph: the bytes it reads
and writes), ``sim.program.scheduler.PlannedCall`` (its Job tiled),
``sim.program.scheduler.ScheduledCall`` (when it ran and why it waited, with its Timing)
and ``programs.CallRecord`` (a ScheduledCall's figures with the call's RunResult).
Studies wrap calls too: ``sweep.plan.RunSpec`` (a call to make: chip, operator, length,
mask), ``checked.CheckedRun`` (a RunResult with its numeric check) and
``calibration.model.CallTimer`` (measured calls timed on candidate chips).
"""
from __future__ import annotations

import dataclasses
import threading
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dspsim import kernels
from dspsim.binding import BoundCall
from dspsim.result import RunResult, make_result
from dspsim.sim.chip.load import ChipConfig
from dspsim.sim.engine.job import Job
from dspsim.sim.engine.machine import Timing, run_job
from dspsim.sim.engine.roofline import roofline_bound, roofline_terms
from dspsim.sim.memory import Memory
from dspsim.traces.usage import CALL_KEY, RESOURCES, describe_resources, vector_description

__all__ = ["BLOCK_ELEMENTS", "Launcher", "call_metadata", "call_result",
           "compute_into_destination", "job_for", "time_call"]

#: Elements per block of the numerics: 1 MiB of fp32, so that a kernel's temporaries stay
#: in the host's caches (measured fastest between 2^16 and 2^20).
BLOCK_ELEMENTS = 1 << 18


@runtime_checkable
class Launcher(Protocol):
    """What programs, sweeps and calibration need of a chip: :class:`dspsim.chip.Chip`
    is the one implementation."""

    config: ChipConfig
    memory: Memory
    #: held by memory writes, reads, calls and program runs (threads may share a chip)
    lock: threading.RLock

    @property
    def name(self) -> str: ...

    def resolve(self, name: str) -> kernels.CName: ...

    def operator_names(self) -> list[str]: ...

    def bind(self, name: str, args: tuple, kwargs: dict, *, core: int | None = None,
             require_written: bool = True) -> BoundCall: ...


def job_for(bound: BoundCall, tile_bytes: int | None = None) -> Job:
    """The hardware model's view of a checked call: sizes, places, instruction mix, cores.

    ``tile_bytes`` fixes the tile size (bytes per operand buffer) instead of letting the
    model choose it.
    """
    cname = bound.cname
    job = Job(label=cname.operator.stem, dtype=cname.dtype.name,
              itemsize=cname.dtype.itemsize, length=bound.length, inputs=bound.inputs,
              outputs=(bound.output,), mix=cname.operator.mix, storage=cname.storage,
              cores=bound.cores)
    if tile_bytes is not None:
        job = dataclasses.replace(job, tile_bytes=int(tile_bytes))
    return job


def time_call(config: ChipConfig, bound: BoundCall, *, fidelity: str = "fast",
              tile_bytes: int | None = None, record_slices: bool = True) -> Timing:
    """Run the hardware model on a checked call alone on a fresh chip timeline.

    ``record_slices=False`` keeps no engine activities (same cycles, no trace). Whatever
    the model rejects (tiles that do not fit L2, an instruction the chip lacks) raises
    here, before any memory is touched.
    """
    return run_job(config, job_for(bound, tile_bytes), fidelity=fidelity,
                   record_slices=record_slices)


def compute_into_destination(memory: Memory, bound: BoundCall) -> None:
    """Run the kernel's math on zero-copy views of the inputs and store the result.

    Operators are elementwise, so the range is computed in blocks of
    :data:`BLOCK_ELEMENTS`, each vectorised and copied once straight into the
    destination's simulated memory (casting there if the kernel returned another dtype).
    A block's temporaries stay in the host's caches and the memory they take stays small
    whatever the length. In-place calls are safe: each block reads its inputs before its
    result is stored, and blocks do not overlap.
    """
    dtype = bound.cname.dtype.numpy
    inputs = [memory.view(o.span, dtype) for o in bound.inputs]
    destination = memory.view(bound.output.span, dtype)
    compute = bound.cname.operator.compute
    with np.errstate(all="ignore"):  # inf/NaN propagate as on the hardware
        for first in range(0, bound.length, BLOCK_ELEMENTS):
            block = slice(first, first + BLOCK_ELEMENTS)
            destination[block] = compute(*(array[block] for array in inputs), **bound.params)
    memory.mark_written(bound.output.span, dtype)


def call_metadata(config: ChipConfig, bound: BoundCall, timing: Timing,
                  fidelity: str = "fast") -> dict[str, Any]:
    """What a result and its trace say about the call: chip, operator, operands, options."""
    return {
        "chip": config.name, "operator": bound.cname.name, "dtype": bound.cname.dtype.name,
        "storage": bound.cname.storage, "length": bound.length,
        "core_mask": bound.core_mask, "cores": list(bound.cores),
        "clock_mhz": config.clock_mhz, "params": bound.params,
        "operands": {o.name: hex(o.span.address) for o in bound.inputs + (bound.output,)},
        "warnings": list(bound.warnings), "fidelity": fidelity,
        "ddr_peak_gbps": config.ddr.peak_bandwidth_gbps,
        "ddr_achievable_gbps": config.ddr.bandwidth_gbps, "dram_level": config.ddr.name,
        "transfer_timing": timing.transfer_timing,
        "tiling": timing.tiling.to_dict() if timing.tiling is not None else None,
        RESOURCES: call_resources(config, bound, timing),
    }


def call_resources(config: ChipConfig, bound: BoundCall, timing: Timing) -> dict[str, Any]:
    """The resources a call's trace describes for its speed-of-light table (see
    :mod:`dspsim.traces.usage`), with the roofline of the same call on one core."""
    job = job_for(bound)
    # the whole length on the first of the call's cores, none on the others
    one_core = roofline_terms(config, job, timing.vector,
                              [bound.length] + [0] * (len(job.cores) - 1))
    return describe_resources(
        config, {CALL_KEY: vector_description(config, timing.vector, bound.cname.operator.mix)},
        one_core_roofline=roofline_bound(one_core)[0],
        cores=len(bound.cores))


def call_result(config: ChipConfig, bound: BoundCall, timing: Timing,
                fidelity: str = "fast") -> RunResult:
    """The RunResult of a checked call from the Timing the model measured for it."""
    return make_result(timing=timing, metadata=call_metadata(config, bound, timing, fidelity),
                       ddr_peak_gbps=config.ddr.peak_bandwidth_gbps,
                       ddr_achievable_gbps=config.ddr.bandwidth_gbps,
                       clock_mhz=config.clock_mhz, warnings=list(bound.warnings))
