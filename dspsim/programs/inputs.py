"""Before a program computes: every input a call reads holds data, or a call ordered
before it writes that data."""
from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import Protocol

from dspsim.binding import BoundCall
from dspsim.sim.errors import AddressError
from dspsim.sim.memory import Memory, Span
from dspsim.sim.program.graph import Dependencies


class _Named(Protocol):
    @property
    def name(self) -> str: ...


class EnqueuedRead(Protocol):
    """What the check needs of an enqueued call."""

    @property
    def index(self) -> int: ...
    @property
    def label(self) -> str: ...
    @property
    def bound(self) -> BoundCall: ...
    @property
    def stream(self) -> _Named: ...


def check_inputs_written(calls: Sequence[EnqueuedRead], memory: Memory, graph: Dependencies,
                         initial: Sequence[Span], advice: str) -> None:
    """Every input of ``calls`` holds data already in ``memory``, or will (``initial``),
    or is written by a call ordered before it in ``graph``; else an AddressError whose
    fix is ``advice``."""
    before = graph.happens_before()
    # the calls writing each distinct output span, by storage and then by offset
    writers: dict[tuple, dict[tuple[int, int], list[int]]] = {}
    for call in calls:
        span = call.bound.output.span
        writers.setdefault((span.region, span.core), {}).setdefault(
            (span.offset, span.end_offset), []).append(call.index)
    outputs = {storage: (sorted(spans), {key: before.earliest(indices)
                                         for key, indices in spans.items()})
               for storage, spans in writers.items()}
    for call in calls:
        for operand in call.bound.inputs:
            span = operand.span
            for lo, hi in memory.unwritten(span):
                spans, earliest = outputs.get((span.region, span.core), ([], {}))
                # output spans starting before this one ends, written by a call
                # ordered before this one
                sources = [key for key in spans[:bisect_left(spans, (span.end_offset,))]
                           if key[1] > span.offset
                           and before.any_before(earliest[key], call.index)]
                shift = span.address - span.offset  # offsets to this span's addresses
                written = [(start + shift, end + shift) for start, end in sources]
                written += [(s.offset + shift, s.end_offset + shift) for s in initial
                            if s.same_storage(span)]
                if not _covered(lo, hi, written):
                    raise AddressError(
                        f"{call.label} on stream {call.stream.name!r} reads {operand.name} "
                        f"[{lo:#x}, {hi:#x}), which holds no data and which no call "
                        f"ordered before it writes; {advice}, or "
                        f"make the call that produces it come first (stream order or "
                        f"an event)")


def _covered(lo: int, hi: int, ranges: list[tuple[int, int]]) -> bool:
    """Whether [lo, hi) lies inside the union of ``ranges``."""
    for start, end in sorted(ranges):
        if start > lo:
            return False
        lo = max(lo, end)
        if lo >= hi:
            return True
    return lo >= hi
