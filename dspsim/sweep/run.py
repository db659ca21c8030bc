"""One call of a sweep, as a worker executes it: simulate, then flatten into a row.

:func:`execute_call` is module-level and takes and returns plain data, so that local
worker processes and Dask workers can run it.
"""
from __future__ import annotations

import copy
import time
from typing import Any

import numpy as np

from dspsim.chip import Chip
from dspsim.kernels.check import compare
from dspsim.placement import c_arguments, place_operands
from dspsim.result import RunResult
from dspsim.seam import call_result, compute_into_destination, job_for
from dspsim.sim.engine.machine import COMPUTE, LOAD, STORE, Timing, run_job
from dspsim.sim.engine.machine import plan as machine_plan
from dspsim.sim.errors import DspSimError
from dspsim.sweep.plan import (
    BASELINE_MASK,
    DEFAULT_FIDELITY,
    RunSpec,
    format_overrides,
    format_params,
)


def execute_call(run: RunSpec, baseline_cycles: int | None) -> dict[str, Any]:
    """Simulate one call; ``{"row": {...}}``, or ``{"note": ...}`` if the chip refused it.
    ``baseline_cycles``: of its one-core baseline, if known (for the speedup)."""
    started = time.perf_counter()
    try:
        result, check = _simulate(run)
    except DspSimError as exc:
        return {"note": f"{run.chip.name} {run.operator} n={run.length} "
                        f"mask={run.core_mask:#x}: {exc}"}
    row = result_row(run, result, check, baseline_cycles)
    row["host_seconds"] = round(time.perf_counter() - started, 4)
    return {"row": row}


def _place_inputs(run: RunSpec, chip: Chip, cname, addresses) -> list[np.ndarray] | None:
    """Put the call's inputs in simulated memory: reproducible random data, or zeros
    when timing only (timing does not depend on the data, but inputs must exist, and
    zeros on fresh memory cost nothing). Returns the arrays written, None for zeros."""
    op, dtype = cname.operator, cname.dtype.numpy
    if not run.numerics:
        for operand in op.inputs:
            chip.zero(addresses[operand], run.length, dtype)
        return None
    values = op.random_inputs(np.random.default_rng(run.seed), run.length)
    inputs = [values[name].astype(dtype) for name in op.inputs]
    for operand, array in zip(op.inputs, inputs, strict=True):
        chip.write(addresses[operand], array)
    return inputs


def _simulate(run: RunSpec):
    """Place the operands as ``dspsim run`` does, call, and check the numbers if asked."""
    chip = Chip(run.chip.config(), kernels=list(run.kernels) or None)
    cname = chip.resolve(run.operator)
    op = cname.operator
    addresses = place_operands(chip.config, cname, run.length)
    inputs = _place_inputs(run, chip, cname, addresses)
    args = c_arguments(op, addresses, run.length, dict(run.params))
    if run.fidelity == DEFAULT_FIDELITY:
        result = _call_sharing_timings(chip, run, args)
    else:
        result = chip.call(run.operator, *args, core_mask=run.core_mask,
                           numerics=run.numerics, fidelity=run.fidelity)
    if not run.numerics:
        return result, None
    assert inputs is not None, "numerics: the inputs were drawn and written"
    out = chip.read(addresses[op.output], run.length, cname.dtype.numpy)
    params = result.metadata["params"]
    with np.errstate(all="ignore"):
        reference = op.reference(*(a.astype(np.float64) for a in inputs), **params)
    return result, compare(out, reference, cname.dtype, op.tolerance(cname.dtype, inputs, params))


#: Timings this worker has simulated, by everything the fast model reads (see
#: :func:`_timing_key`); bounded, since a long sweep rarely comes back to an old call.
_TIMINGS: dict[tuple, Timing] = {}
_MAX_TIMINGS = 512


def _timing_key(run: RunSpec, job, cost) -> tuple:
    """What the fast timing model reads of a call: the chip, the operands' places and sizes,
    the cores, and of the instruction mix only its cost per iteration (lanes, cycles per
    iteration, pipeline fill, loop overhead). Operators with equal costs, such as most
    of the two-input gradients, therefore share one simulation; their names and mixes
    reach only the trace, which sweeps do not record."""
    return (run.chip.digest, job.dtype, job.itemsize, job.length,
            tuple(o.span for o in job.inputs), tuple(o.span for o in job.outputs),
            job.storage, job.cores, job.tile_bytes, cost.lanes, cost.iteration_cycles,
            cost.fill_cycles, cost.overhead_cycles)


def _call_sharing_timings(chip: Chip, run: RunSpec, args) -> RunResult:
    """``chip.call`` at the fast fidelity, without slices, reusing the timing of an earlier
    call that the model cannot tell from this one. Checks and numerics are the call's own."""
    bound = chip.bind(run.operator, args, {"core_mask": run.core_mask})
    job = job_for(bound)
    cost = machine_plan(chip.config, job)
    key = _timing_key(run, job, cost)
    timing = _TIMINGS.get(key)
    if timing is None:
        timing = run_job(chip.config, job, record_slices=False)
        if len(_TIMINGS) >= _MAX_TIMINGS:
            _TIMINGS.clear()
        _TIMINGS[key] = timing
    # this call's own cost (its mix); everything the model measured is shared
    mine = copy.copy(timing)
    mine.vector = cost
    mine.tiling = getattr(timing, "tiling", None)
    if run.numerics:
        compute_into_destination(chip.memory, bound)
    return call_result(chip.config, bound, mine, DEFAULT_FIDELITY)


def _slug(resource: str) -> str:
    return "roofline_" + resource.lower().replace(" ", "_")


def result_row(run: RunSpec, result, check, baseline_cycles: int | None) -> dict[str, Any]:
    """Every figure of one run, flat, for CSV and JSON."""
    row = result.to_row()
    cycles = result.cycles
    if run.core_mask == BASELINE_MASK:
        baseline_cycles = cycles
    terms = result.roofline_terms
    floor = terms.get("launch overhead", 0.0) + terms["DDR"] if "DDR" in terms else None
    working = [c for c in result.per_core if c.elements]
    critical = max(working, key=lambda c: c.finish_cycle, default=None)

    def mean_busy(engine: str) -> float | None:
        if not working or not cycles:
            return None
        return sum(c.busy_cycles[engine] for c in working) / len(working) / cycles

    speedup = baseline_cycles / cycles if baseline_cycles and cycles else None
    row.update({
        # <prefix>_<stem>_<s|p>: a user's operator is not in the library's registry
        "study": "call", "stem": run.operator.partition("_")[2].rpartition("_")[0],
        "core_mask": run.core_mask, "core_mask_hex": f"{run.core_mask:#x}",
        "baseline_cycles": baseline_cycles, "speedup": speedup,
        "parallel_efficiency": speedup / len(result.cores) if speedup else None,
        "ddr_floor_cycles": floor,
        "speedup_ddr_ceiling": baseline_cycles / floor if baseline_cycles and floor else None,
        "share_of_ddr_achievable": result.achieved_gbps / result.ddr_achievable_gbps,
        "ddr_peak_gbps": result.ddr_peak_gbps, "ddr_achievable_gbps": result.ddr_achievable_gbps,
        "bytes_read": sum(result.bytes_read.values()),
        "bytes_written": sum(result.bytes_written.values()),
        "roofline_share": result.roofline_cycles / cycles if cycles else None,
        **{_slug(name): value for name, value in terms.items()},
        "vector_busy_share": mean_busy(COMPUTE),
        "dma_in_busy_share": mean_busy(LOAD),
        "dma_out_busy_share": mean_busy(STORE),
        "critical_core": critical.core if critical else None,
        "critical_finish_cycle": critical.finish_cycle if critical else None,
        "lanes": result.lanes, "iteration_cycles": result.iteration_cycles,
        "clock_mhz": result.clock_mhz, "scheduled_events": result.scheduled_events,
        "numerics": run.numerics,
        "fidelity": result.metadata.get("fidelity", run.fidelity),
        "numerics_ok": check.ok if check else None,
        "max_rel_error": check.max_rel_error if check else None,
        "params": format_params(run.params),
        "overrides": format_overrides(run.chip.overrides),
        "given_values": format_overrides(run.chip.given),
        "config_digest": run.chip.digest, "base_digest": run.chip.base_digest or run.chip.digest,
        "key": run.key,
    })
    return row
