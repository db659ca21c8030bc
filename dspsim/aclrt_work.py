"""The work an aclnn chip holds between synchronisations: its program, its tensors' buffers.

Kept on the :class:`~dspsim.chip.Chip` object (see :func:`runtime_of`), never in a module
table, so that a chip nobody refers to is freed with its pending kernels and tensors.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from dspsim.chip import Chip
from dspsim.placement import place_operands
from dspsim.programs import Program
from dspsim.sim.errors import ArgumentError, CapacityError
from dspsim.tensor_memory import overlaps, tensor_key

#: buffers of a program start at page boundaries, as device allocations do
BUFFER_ALIGNMENT = 4096


class PendingWork:
    """The work enqueued on one chip since its last synchronisation, and its buffers."""

    def __init__(self, chip: Chip) -> None:
        self.chip = chip
        self.program = Program(chip)
        self.streams: dict[Any, Any] = {}  # aclrt Stream -> its program stream
        # tensor_key(array) -> (array, address)
        self.buffers: dict[tuple, tuple[np.ndarray, int]] = {}
        self.written: set[tuple] = set()  # tensors a call writes
        self.host: set[tuple] = set()  # tensors read before any call writes them: copied in
        self.outputs: dict[tuple, list[np.ndarray]] = {}  # every array a written tensor is
        self.recorded: list[Any] = []  # aclrt events recorded in this work
        # (stream, call index, on_result) in enqueue order
        self.calls: list[tuple[Any, int, Callable | None]] = []

    def program_stream(self, stream):
        if stream not in self.streams:
            self.streams[stream] = self.program.stream(f"stream{len(self.streams)}")
        return self.streams[stream]

    def _taken(self) -> list[tuple[int, int]]:
        return [(address, address + array.nbytes) for array, address in self.buffers.values()]

    def addresses(self, cname, tensors: dict[str, np.ndarray]) -> dict[str, int]:
        """A DDR address for each operand's tensor: its buffer if it has one, else the
        address :func:`dspsim.simulate` would give it if free, else the next free page."""
        config = self.chip.config
        length = int(next(iter(tensors.values())).size)
        suggested = place_operands(config, cname, length)
        ddr = config.ddr
        chosen: dict[str, int] = {}
        for operand, array in tensors.items():
            key = tensor_key(array)
            if key in self.buffers:
                chosen[operand] = self.buffers[key][1]
                continue
            for other, _ in self.buffers.values():
                if overlaps(array, other):
                    raise ArgumentError(
                        f"{cname.name}: {operand} shares memory with another tensor enqueued "
                        f"since the last synchronisation without being the same tensor (views "
                        f"of one array that overlap in part); pass the same array, or "
                        f"separate arrays")
            taken = self._taken()
            start = suggested[operand]
            if any(start < hi and lo < start + array.nbytes for lo, hi in taken):
                end = max(hi for _, hi in taken)
                start = -(-end // BUFFER_ALIGNMENT) * BUFFER_ALIGNMENT
            if start + array.nbytes > ddr.end_address:
                raise CapacityError(f"{cname.name}: the tensors enqueued since the last "
                                    f"synchronisation do not fit in {config.name}'s DDR "
                                    f"({ddr.size_bytes:,} bytes); synchronise more often")
            self.buffers[key] = (array, start)
            chosen[operand] = start
        return chosen


class _Runtime:
    """A chip's runtime state: the work enqueued since its last synchronisation.

    It lives on the chip (not in a module-level table), so that a chip nobody holds any
    more is freed with its pending work and tensors.
    """

    def __init__(self, chip: Chip) -> None:
        # guarded by the chip's lock, which enqueueing and running both hold: one lock, so
        # that no order of taking two can deadlock
        self.lock = chip.lock
        self.pending = PendingWork(chip)

    def take(self) -> PendingWork:
        """The pending work, replaced by an empty one (the caller runs or drops it)."""
        with self.lock:
            pending, self.pending = self.pending, PendingWork(self.pending.chip)
            return pending


_runtime_creation = threading.Lock()


def runtime_of(chip: Chip) -> _Runtime:
    """The chip's aclnn runtime state, created on first use."""
    runtime = chip.__dict__.get("_acl_runtime")
    if runtime is None:
        with _runtime_creation:
            runtime = chip.__dict__.setdefault("_acl_runtime", _Runtime(chip))
    return runtime
