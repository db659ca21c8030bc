"""What the hardware model is asked to run: operands, sizes and a per-vector instruction mix.

A Job is built by the launcher from an operator call; the model never sees operator
names except as a label for the trace.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args

from dspsim.sim.memory import Span

#: Where a call's operands live: in levels every core reaches (the length split over the
#: cores, each running a DMA tile pipeline), or in one core's private level (that core
#: alone, no DMA). The ``_s`` and ``_p`` C names.
Storage = Literal["shared", "private"]
STORAGES: tuple[Storage, ...] = get_args(Storage)


@dataclass(frozen=True)
class Operand:
    """One operand of a call: its C argument name and where its bytes live."""

    name: str
    span: Span


@dataclass(frozen=True)
class Job:
    """One operator call, as the hardware sees it."""

    label: str  # for the trace and reports only
    dtype: str  # a key of DTYPE_BITS
    itemsize: int  # bytes per element
    length: int
    inputs: tuple[Operand, ...]
    outputs: tuple[Operand, ...]
    mix: Mapping[str, int]  # instruction counts for one vector iteration
    storage: Storage
    cores: tuple[int, ...]  # the cores that take part, in increasing order
    tile_bytes: int | None = None  # a tile size the call fixes (bytes per operand buffer)
