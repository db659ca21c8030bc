"""The result of one simulated operator call: figures, a short repr, JSON and traces."""
from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass, field
from typing import Any

from dspsim.atomic import check_target
from dspsim.saved import check_folder, write_folder
from dspsim.sim.engine.machine import ENGINES, Timing
from dspsim.sim.engine.roofline import ROOFLINE_TERMS
from dspsim.sim.engine.tiling import NO_TILING
from dspsim.sim.errors import ArgumentError
from dspsim.tables import json_text, to_jsonable
from dspsim.traces.build import model_from_timing
from dspsim.traces.formats import TraceModel, chrome_from_model, encode_trace, write_trace
from dspsim.words import count

#: the files a saved run holds (see RunResult.save)
SAVED_FILES = {"result": "result.json", "trace": "trace.pftrace", "chip": "chip.yaml"}
#: files of earlier saves that a new save into the same folder replaces
FORMER_FILES = ("trace.json",)


class TimedInCycles:
    """Wall time of a result that holds its ``cycles`` and its chip's ``clock_mhz``."""

    # the fields of the results this mixes into
    cycles: float
    clock_mhz: float

    @property
    def seconds(self) -> float:
        return self.cycles / (self.clock_mhz * 1e6)

    @property
    def microseconds(self) -> float:
        return self.seconds * 1e6


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

    def __repr__(self) -> str:
        return (f"CoreResult(core {self.core}: elements [{self.start:,}, {self.stop:,}), "
                f"{count(self.tiles, 'tile')}, finish {self.finish_cycle:,.0f})")


@dataclass
class RunResult(TimedInCycles):
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
    # shared-storage calls: the tile size chosen and why (see dspsim.sim.engine.tiling)
    tiling: dict[str, Any] | None = None
    # the model's own record (slices, samples): for traces, not part of the JSON
    timing: Timing | None = field(default=None, repr=False, compare=False,
                                  metadata={"json": False})
    metadata: dict[str, Any] = field(default_factory=dict, repr=False)

    #: computed figures that to_dict() adds to the fields
    DERIVED = ("seconds", "microseconds", "ddr_bytes", "achieved_gbps", "share_of_ddr_peak",
               "tiles")

    def __repr__(self) -> str:
        mask = "" if self.core_mask is None else f", core_mask {self.core_mask:#x}"
        return (f"RunResult({self.operator} on {self.chip}, {self.length:,} x {self.dtype}"
                f"{mask}: {count(self.cycles, 'cycle')} = {self.microseconds:,.3f} µs, bound by "
                f"{self.bound})")


    @property
    def ddr_bytes(self) -> int:
        """Bytes the call moved to and from the chip's DRAM level."""
        dram = self.metadata.get("dram_level", "ddr")
        return self.bytes_read.get(dram, 0) + self.bytes_written.get(dram, 0)

    @property
    def achieved_gbps(self) -> float:
        """DDR bytes moved per second of the call."""
        seconds = self.seconds
        return self.ddr_bytes / seconds / 1e9 if seconds > 0 else 0.0

    @property
    def share_of_ddr_peak(self) -> float:
        return self.achieved_gbps / self.ddr_peak_gbps if self.ddr_peak_gbps else 0.0

    @property
    def tiles(self) -> int:
        return sum(c.tiles for c in self.per_core)

    def trace_model(self) -> TraceModel:
        """The call's trace, format-neutral (see :mod:`dspsim.traces.build`)."""
        if self.timing is None:
            raise ValueError("this result was made without timing slices")
        return model_from_timing(self.timing, self.metadata, self.clock_mhz * 1e-3)

    def trace(self) -> dict[str, Any]:
        """The call's Chrome trace dict (see :mod:`dspsim.traces.formats`)."""
        return chrome_from_model(self.trace_model())

    def write_trace(self, path, fmt: str | None = None) -> str:
        """Write the trace to ``path`` atomically; returns the path. A name ending in
        ``.json`` gets Chrome JSON, any other (``.pftrace``) Perfetto's protobuf, unless
        ``fmt`` (``"protobuf"`` or ``"json"``) says."""
        check_target(path)  # before building the trace: a bad path fails fast
        return write_trace(self.trace_model(), path, fmt)

    def to_dict(self) -> dict[str, Any]:
        """Every field and computed figure as JSON data (``json.dumps`` takes it as is).

        Driven by the dataclass fields, so a field added to RunResult appears here too;
        only the model's raw timing record is left out (``trace()`` holds it).
        """
        data = to_jsonable(self)
        for name in self.DERIVED:
            data[name] = to_jsonable(getattr(self, name))
        for core, entry in zip(self.per_core, data["per_core"], strict=True):
            entry["elements"] = core.elements
        # one key set for every call kind: what a call has none of is null, not missing
        data["roofline_terms"] = {**{term: None for term in ROOFLINE_TERMS},
                                  **data["roofline_terms"]}
        for holder in (data, data.get("metadata") or {}):
            if "tiling" in holder and holder["tiling"] is None:
                holder["tiling"] = dict(NO_TILING)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunResult:
        """A RunResult from :meth:`to_dict`'s output (without the timing record)."""
        names = {f.name for f in dataclasses.fields(cls) if f.metadata.get("json", True)}
        core_names = {f.name for f in dataclasses.fields(CoreResult)}
        values = {k: v for k, v in data.items() if k in names}
        if "roofline_terms" in values:
            values["roofline_terms"] = {k: v for k, v in values["roofline_terms"].items()
                                        if v is not None}
        if values.get("tiling") == NO_TILING:
            values["tiling"] = None
        values["per_core"] = [CoreResult(**{k: v for k, v in c.items() if k in core_names})
                              for c in data.get("per_core", [])]
        values["cores"] = tuple(values.get("cores", ()))
        return cls(**values)

    def save(self, folder, *, chip_yaml: str, extra: dict[str, Any] | None = None,
             force: bool = False, document: dict[str, Any] | None = None) -> dict:
        """Keep this run so that it can be reproduced and compared: ``result.json`` (this
        result's :meth:`to_dict`, with ``extra`` such as the command and the numeric
        check), ``trace.pftrace`` (Perfetto's protobuf) and ``chip.yaml``, the exact chip
        description it ran on.

        ``folder`` is created, or may be empty or hold this same run; a folder holding
        another saved run is replaced only with ``force``. The files are written into a
        staging folder that is swapped in whole (:mod:`dspsim.saved`), so a failure or a
        kill leaves the folder as it was. ``document`` replaces the whole of
        ``result.json`` (its ``result`` must be this result's :meth:`to_dict`). Returns the
        paths written, by kind.
        """
        check_folder(folder, tuple(SAVED_FILES.values()) + FORMER_FILES)
        if not isinstance(chip_yaml, str):
            raise ArgumentError(f"chip_yaml must be the chip file's text (a str), got "
                                f"{type(chip_yaml).__name__}; pass chip.description_yaml of a chip "
                                f"loaded from a name or a file")
        if document is None:  # else the caller's, written as given (what --json prints)
            document = {"result": self.to_dict(), **(extra or {}),
                        "files": dict(SAVED_FILES)}
        contents = {
            "result": json_text(document).encode("utf-8"),
            "trace": encode_trace(self.trace_model(), "protobuf"),
            "chip": chip_yaml.encode("utf-8"),
        }
        written = write_folder(folder, {SAVED_FILES[k]: v for k, v in contents.items()},
                               force=force, former=FORMER_FILES,
                               same=lambda path: _same_run(path, document, contents["chip"]))
        return {kind: written[name] for kind, name in SAVED_FILES.items()}

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
            "tiling_policy": self.tiling["policy"] if self.tiling else None,
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
        tiling=timing.tiling.to_dict() if timing.tiling is not None else None,
        timing=timing if keep_timing else None, metadata=metadata)


def _same_run(folder: str, document: dict, chip: bytes) -> bool:
    """Whether ``folder`` holds a save of this same run: the same result, seed and operands
    on the same chip text (how it was asked for, such as the command line, may differ)."""
    try:
        with open(os.path.join(folder, SAVED_FILES["chip"]), "rb") as handle:
            if handle.read(len(chip) + 1) != chip:
                return False
        with open(os.path.join(folder, SAVED_FILES["result"]), encoding="utf-8") as handle:
            earlier = json.load(handle)
    except FileNotFoundError:
        return False
    except (OSError, ValueError):
        return False
    if not isinstance(earlier, dict):
        return False
    now = json.loads(json.dumps(to_jsonable(document)))
    return all(earlier.get(k) == now.get(k) for k in ("result", "seed", "operands", "numerics"))
