"""The result of one simulated operator call."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from dspsim.sim.machine import ENGINES, Timing
from dspsim.sim.trace import build_trace, write_trace


@dataclass(frozen=True)
class CoreResult:
    """What one core did: its element range, tiles and engine activity."""

    core: int
    start: int
    stop: int
    tiles: int
    busy_cycles: dict[str, float]  # per engine: dma-in, vector, dma-out
    idle_cycles: dict[str, float]  # per engine: the call's cycles minus busy
    finish_cycle: float

    @property
    def elements(self) -> int:
        return self.stop - self.start


@dataclass
class RunResult:
    """Cycles, time, bandwidth, utilisation and bound of one operator call."""

    operator: str  # the C name called
    chip: str
    dtype: str
    storage: str  # "shared" or "private"
    length: int
    core_mask: int | None  # None for private-storage calls
    cores: tuple[int, ...]  # cores that took part
    clock_mhz: float
    cycles: int  # whole call, rounded up
    per_core: list[CoreResult]
    bytes_read: dict[str, int]  # per shared region
    bytes_written: dict[str, int]
    ddr_peak_gbps: float
    ddr_achievable_gbps: float
    roofline_terms: dict[str, float]  # lower bound, in cycles, of each resource alone
    roofline_cycles: int
    bound: str  # the resource with the largest roofline term
    tile_elements: int
    iteration_cycles: float  # cycles per vector iteration
    lanes: int
    scheduled_events: int
    warnings: list[str] = field(default_factory=list)
    timing: Timing | None = field(default=None, repr=False)
    metadata: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def seconds(self) -> float:
        return self.cycles / (self.clock_mhz * 1e6)

    @property
    def microseconds(self) -> float:
        return self.seconds * 1e6

    @property
    def ddr_bytes(self) -> int:
        return self.bytes_read.get("ddr", 0) + self.bytes_written.get("ddr", 0)

    @property
    def achieved_gbps(self) -> float:
        """DDR bytes moved per second of the call."""
        return self.ddr_bytes / self.seconds / 1e9 if self.cycles else 0.0

    @property
    def share_of_ddr_peak(self) -> float:
        return self.achieved_gbps / self.ddr_peak_gbps

    @property
    def tiles(self) -> int:
        return sum(c.tiles for c in self.per_core)

    def trace(self) -> dict[str, Any]:
        """The call's Chrome trace (see :mod:`dspsim.sim.trace`)."""
        if self.timing is None:
            raise ValueError("this result was made without timing slices")
        return build_trace(self.timing, self.metadata, self.clock_mhz * 1e-3)

    def write_trace(self, path) -> str:
        """Write the Chrome trace to ``path`` atomically; returns the path."""
        return write_trace(self.trace(), path)

    def to_row(self) -> dict[str, Any]:
        """A flat dictionary of the headline numbers, for tables, CSV and JSON."""
        return {
            "operator": self.operator, "chip": self.chip, "dtype": self.dtype,
            "storage": self.storage, "length": self.length,
            "core_mask": self.core_mask, "cores": len(self.cores),
            "cycles": self.cycles, "microseconds": self.microseconds,
            "achieved_gbps": self.achieved_gbps, "share_of_ddr_peak": self.share_of_ddr_peak,
            "roofline_cycles": self.roofline_cycles, "bound": self.bound,
            "tiles": self.tiles, "tile_elements": self.tile_elements,
            "ddr_bytes": self.ddr_bytes, "warnings": "; ".join(self.warnings),
        }


def make_result(*, timing: Timing, metadata: dict[str, Any], ddr_peak_gbps: float,
                ddr_achievable_gbps: float, clock_mhz: float, warnings: list[str],
                keep_timing: bool = True) -> RunResult:
    """Assemble a RunResult from the hardware model's Timing and the call's description."""
    total = math.ceil(timing.cycles - 1e-9) if timing.cycles else 0
    per_core = [
        CoreResult(core=t.core, start=t.start, stop=t.stop, tiles=t.tiles,
                   busy_cycles={e: t.busy[e] for e in ENGINES},
                   idle_cycles={e: max(0.0, timing.cycles - t.busy[e]) for e in ENGINES},
                   finish_cycle=t.finish)
        for t in timing.cores]
    length = metadata["length"]
    return RunResult(
        operator=metadata["operator"], chip=metadata["chip"], dtype=metadata["dtype"],
        storage=metadata["storage"], length=length, core_mask=metadata.get("core_mask"),
        cores=tuple(t.core for t in timing.cores if t.elements), clock_mhz=clock_mhz,
        cycles=total, per_core=per_core, bytes_read=dict(timing.bytes_read),
        bytes_written=dict(timing.bytes_written), ddr_peak_gbps=ddr_peak_gbps,
        ddr_achievable_gbps=ddr_achievable_gbps, roofline_terms=dict(timing.roofline_terms),
        roofline_cycles=math.ceil(timing.roofline_cycles - 1e-9) if length else 0,
        bound=timing.bound if length else "none (length 0)",
        tile_elements=timing.tile_elements,
        iteration_cycles=timing.vector.iteration_cycles, lanes=timing.vector.lanes,
        scheduled_events=timing.scheduled_events, warnings=list(warnings),
        timing=timing if keep_timing else None, metadata=metadata)
