"""One call on reproducible random inputs, checked against its float64 reference.

This is what ``dspsim run`` does, usable from Python. The operands go where the CLI puts
them (:mod:`dspsim.placement`); the call is checked and timed before anything is made,
so a length that cannot fit fails at once. Inputs are then drawn block by block straight
into simulated memory in the call's dtype, and the result is checked block by block on
zero-copy views: the host memory used stays a few MiB above the operands' own bytes,
whatever the length.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dspsim.chip import Chip, PreparedCall
from dspsim.kernels.check import Check, compare, merge_checks
from dspsim.placement import c_arguments, place_operands
from dspsim.result import RunResult
from dspsim.sim.errors import ArgumentError

#: Elements per block of input generation and checking (2 MiB of float64 per array)
BLOCK_ELEMENTS = 1 << 18

#: progress(stage, done, total): called as inputs are drawn and results checked
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class CheckedRun:
    """A simulated call on random inputs and how its numbers compare with the reference."""

    result: RunResult
    check: Check | None  # None for a timing-only run
    addresses: dict[str, int]  # where each operand was placed
    seed: int


def _blocks(length: int) -> range:
    return range(0, length, BLOCK_ELEMENTS)


def run_checked(chip: Chip, name: str, length: int, *, core_mask: int | None = None,
                core: int | None = None, params: dict[str, float] | None = None, seed: int = 0,
                fidelity: str = "fast", numerics: bool = True, tile_bytes: int | None = None,
                progress: Progress | None = None) -> CheckedRun:
    """Simulate ``name`` over ``length`` random elements drawn from ``seed`` and check it.

    Block ``i`` of the inputs is drawn from ``numpy.random.default_rng([seed, i])``, so a
    run is reproducible from its seed. ``numerics=False`` writes zeros (free of host
    memory) and skips the computation and the check. ``tile_bytes`` fixes the tile size.
    """
    cname = chip.resolve(name)
    op = cname.operator
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 0:
        raise ArgumentError(f"{name}: length={length!r} must be a non-negative integer")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ArgumentError(f"seed={seed!r} must be a non-negative integer")
    length, seed = int(length), int(seed)
    if cname.storage == "private" and core_mask is not None:
        raise ArgumentError(f"{name} is a private-storage call and takes no core mask; choose "
                            f"the executing core with core= (--core)")
    if cname.storage == "shared" and core is not None:
        raise ArgumentError(f"{name} is a shared-storage call: core_mask (--core-mask) chooses "
                            f"its cores; core= (--core) is for private-storage calls")
    addresses = place_operands(chip.config, cname, length)
    args = c_arguments(op, addresses, length, params)
    kwargs = {"core_mask": core_mask} if cname.storage == "shared" else {}
    prepared = chip.prepare(name, *args, core=core, fidelity=fidelity, tile_bytes=tile_bytes,
                            **kwargs)
    report = progress or (lambda *a: None)
    dtype = cname.dtype.numpy
    if numerics:
        _draw_inputs(chip, prepared, seed, core, report)
    else:
        for operand in prepared.inputs:
            chip.zero(operand.span.address, length, dtype, core=core)
    result = prepared.finish(numerics=numerics)
    check = check_result(chip, prepared, result.metadata["params"], report) if numerics else None
    return CheckedRun(result, check, addresses, seed)


def _draw_inputs(chip: Chip, prepared: PreparedCall, seed: int, core: int | None,
                 report: Progress) -> None:
    bound = prepared.bound
    op, dtype, itemsize = bound.cname.operator, bound.cname.dtype.numpy, bound.cname.dtype.itemsize
    blocks = _blocks(bound.length)
    for index, first in enumerate(blocks):
        count = min(BLOCK_ELEMENTS, bound.length - first)
        values = op.random_inputs(np.random.default_rng([seed, index]), count)
        for operand in prepared.inputs:
            with np.errstate(over="ignore"):
                block = values[operand.name].astype(dtype)
            chip.write(operand.span.address + first * itemsize, block, core=core)
        report("drawing inputs", index + 1, len(blocks))


def check_result(chip: Chip, prepared: PreparedCall, params: dict[str, float],
                 progress: Progress | None = None) -> Check:
    """Compare a finished call's result with the float64 reference, block by block.

    The inputs are read back from simulated memory, so the call must not have been in
    place (its result would have replaced an input).
    """
    bound = prepared.bound
    if any(o.span.overlaps(bound.output.span) for o in bound.inputs):
        raise ArgumentError(f"{bound.cname.name}: an in-place call's inputs are gone; check "
                            f"it against inputs kept elsewhere")
    op, dtype = bound.cname.operator, bound.cname.dtype
    views = [chip.memory.view(o.span, dtype.numpy) for o in bound.inputs]
    result = chip.memory.view(bound.output.span, dtype.numpy)
    blocks = _blocks(bound.length)
    parts = []
    for index, first in enumerate(blocks):
        window = slice(first, first + BLOCK_ELEMENTS)
        inputs = [view[window] for view in views]
        with np.errstate(all="ignore"):
            reference = op.reference(*(a.astype(np.float64) for a in inputs), **params)
        parts.append((first, compare(result[window], reference, dtype,
                                     op.tolerance(dtype, inputs, params))))
        if progress:
            progress("checking numerics", index + 1, len(blocks))
    return merge_checks(parts)
