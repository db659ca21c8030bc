"""The result of a program: per call when it ran and why it waited, per core, DDR, the
critical path and the bounds that no schedule can beat."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dspsim.result import RunResult, TimedInCycles
from dspsim.sim.program.scheduler import ProgramTiming
from dspsim.tables import to_jsonable
from dspsim.traces.build import model_from_program
from dspsim.traces.formats import TraceModel, chrome_from_model, write_trace
from dspsim.traces.usage import CALL_KEY, RESOURCES
from dspsim.words import count


@dataclass
class CallRecord:
    """One call of a program: where and when it ran, why it waited, and its own result."""

    index: int
    operator: str
    stream: str
    cores: tuple[int, ...]
    core_mask: int | None
    enqueue_cycle: int  # every call is enqueued by the host before the program starts
    ready_cycle: float  # its stream order and events were satisfied
    start_cycle: float  # its launch began (later than ready if its cores were busy)
    end_cycle: float  # its barrier ended
    waited_for: str  # "nothing", "stream order", "event NAME" or "cores busy"
    after_call: int | None  # the call it waited for last (dependency or core holder)
    cores_held_by: int | None  # the call holding its cores, when it waited for them
    transfer_timing: str  # how its transfers were timed in the program
    result: RunResult = field(repr=False)

    @property
    def cycles(self) -> float:
        return self.end_cycle - self.start_cycle

    @property
    def waited_cycles(self) -> float:
        """Cycles between the program's start and this call's launch."""
        return self.start_cycle - self.enqueue_cycle


@dataclass
class ProgramResult(TimedInCycles):
    """Cycles, per-call schedule, per-core use, DDR use and critical path of a program."""

    chip: str
    fidelity: str
    clock_mhz: float
    cycles: int  # the whole program, rounded up
    streams: list[str]
    calls: list[CallRecord]
    per_core: dict[int, dict[str, Any]]
    ddr: dict[str, Any]
    bounds: dict[str, float]  # lower bounds in cycles: no schedule of these calls beats them
    bound: str  # the largest of them: what limits this program
    critical_path: list[dict[str, Any]]
    #: per event: the stream recording it, when it completed, the calls its waits released
    events: list[dict[str, Any]]
    scheduled_events: int
    tiles: int
    warnings: list[str]
    #: each call that read bytes an earlier call wrote: writer, reader, the reader's operand
    data_dependencies: list[dict[str, Any]] = field(default_factory=list)
    timing: ProgramTiming | None = field(default=None, repr=False, compare=False,
                                         metadata={"json": False})

    def __repr__(self) -> str:
        return (f"ProgramResult({count(len(self.calls), 'call')} on "
                f"{count(len(self.streams), 'stream')} of {self.chip}: "
                f"{count(self.cycles, 'cycle')} = {self.microseconds:,.3f} µs, bound by "
                f"{self.bound})")


    def to_dict(self) -> dict[str, Any]:
        """Every figure as JSON data; each call's RunResult as its own ``to_dict()``."""
        data = to_jsonable(self)
        data["seconds"], data["microseconds"] = self.seconds, self.microseconds
        for record, entry in zip(self.calls, data["calls"], strict=True):
            entry["result"] = record.result.to_dict()
            entry["cycles"] = record.cycles
        return data

    def trace_model(self) -> TraceModel:
        """The program's trace, format-neutral (see :mod:`dspsim.traces.build`)."""
        if self.timing is None:
            raise ValueError("this result was made without its program timing")
        return model_from_program(
            self.timing, chip=self.chip, streams=self.streams,
            operators={c.index: c.operator for c in self.calls},
            events=self.events, metadata=self._trace_metadata(), bounds=self.bounds,
            bound=self.bound, ddr_gbps_per_byte_cycle=self.clock_mhz * 1e-3,
            data_dependencies=self.data_dependencies)

    def trace(self) -> dict[str, Any]:
        """The program's Chrome trace dict (see :mod:`dspsim.traces.build`)."""
        return chrome_from_model(self.trace_model())

    def write_trace(self, path, fmt: str | None = None) -> str:
        """Write the program's trace to ``path`` atomically: Perfetto protobuf, or Chrome
        JSON for a name ending in ``.json`` (unless ``fmt`` says); returns the path."""
        return write_trace(self.trace_model(), path, fmt)

    def _trace_metadata(self) -> dict[str, Any]:
        """What trace readers need: chip, clock, streams, DDR figures, the calls."""
        return {
            "chip": self.chip, "operator": f"program of {len(self.calls)} calls",
            "dtype": ", ".join(sorted({c.result.dtype for c in self.calls})),
            "length": sum(c.result.length for c in self.calls), "core_mask": None,
            "clock_mhz": self.clock_mhz, "fidelity": self.fidelity,
            "streams": list(self.streams),
            "ddr_peak_gbps": self.calls[0].result.ddr_peak_gbps if self.calls else 0.0,
            "ddr_achievable_gbps": self.ddr["achievable_gbps"],
            "program": [{"call": c.index, "operator": c.operator, "stream": c.stream,
                         "cores": list(c.cores), "start_cycle": c.start_cycle,
                         "end_cycle": c.end_cycle, "waited_for": c.waited_for}
                        for c in self.calls],
            RESOURCES: self._resources(),
        }

    def _resources(self) -> dict[str, Any]:
        """The chip's resources as the calls' traces describe them, each call's vector cost
        keyed by its index (see :mod:`dspsim.traces.usage`)."""
        if not self.calls:
            return {}
        first = dict(self.calls[0].result.metadata.get(RESOURCES) or {})
        for key in ("one_core_roofline", "cores"):  # a call's figures, not the program's
            first.pop(key, None)
        first["vector"] = {str(c.index): c.result.metadata[RESOURCES]["vector"][CALL_KEY]
                           for c in self.calls if RESOURCES in c.result.metadata}
        return first
