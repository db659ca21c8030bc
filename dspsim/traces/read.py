"""Reading a dspsim trace file of either format into per-core slices, checked.

A malformed file (wrong types, NaN, numbers out of range, text that is not Unicode, a
group that is neither a core nor the call) ends in an ArgumentError naming what is wrong,
so nothing downstream meets a value it cannot handle.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from dspsim.sim.errors import ArgumentError
from dspsim.traces.build import DDR_COUNTER
from dspsim.traces.formats import read_model
from dspsim.traces.model import TraceModel, finite_number
from dspsim.traces.usage import RESOURCES, check_resources, check_usage_args

CALL = "call"


@dataclass(frozen=True)
class TraceSlice:
    """One engine activity, in exact cycles."""

    core: int | None  # None: the call track (launch, barrier)
    thread: str  # dma-in, dma-in.1, vector, ...
    name: str
    start: float
    cycles: float
    args: dict

    @property
    def engine(self) -> str:
        return self.thread.partition(".")[0]

    @property
    def end(self) -> float:
        return self.start + self.cycles


@dataclass
class Trace:
    """A parsed trace file."""

    path: str
    metadata: dict[str, Any]
    total_cycles: float
    slices: list[TraceSlice]
    ddr: list[tuple[float, float]]  # (cycle, GB/s in use from then on)
    #: the whole file as read (slices, counters, flows, metadata)
    model: TraceModel | None = field(default=None, repr=False)
    #: a program's calls on their streams' tracks: (stream, call name, start, end), the
    #: streams in the program's order
    calls: list[tuple[str, str, float, float]] = field(default_factory=list)
    streams: list[str] = field(default_factory=list)

    @property
    def cores(self) -> list[int]:
        return sorted({s.core for s in self.slices if s.core is not None})

    def of_core(self, core: int | None) -> list[TraceSlice]:
        return [s for s in self.slices if s.core == core]

    def label(self) -> str:
        m = self.metadata
        mask = "" if m.get("core_mask") is None else f", core_mask {m['core_mask']:#x}"
        return (f"{m.get('chip')} · {m.get('operator')} · {m.get('dtype')} · "
                f"n={m.get('length') or 0:,}{mask}")


def _core_of(group: str, path: str) -> int | None:
    """The core a group of tracks belongs to; None for the call's own group."""
    match = re.fullmatch(r"core (\d{1,6})", group)
    if match:
        return int(match.group(1))
    if group.endswith((" call", " program")):  # a program's streams count as its call
        return None
    raise ArgumentError(f"{path}: a track group is named {group[:60]!r}, neither 'core N' nor "
                        f"'<chip> call'; is this a dspsim trace?")


def _metadata(metadata: dict[str, Any], path: str) -> dict[str, Any]:
    """The metadata the summary relies on, checked: an ArgumentError naming the first key
    of the wrong type or range."""
    if "total_cycles" not in metadata:
        raise ArgumentError(f"{path} has no dspsim metadata (chip, operator, total_cycles); "
                            f"write traces with `dspsim run` or RunResult.write_trace")
    missing = [key for key in MODEL_METADATA if key not in metadata]
    if missing:
        raise ArgumentError(f"{path}: its metadata lacks {', '.join(missing)}; write the trace "
                            f"again with this dspsim (`dspsim run` or RunResult.write_trace)")
    meta = dict(metadata)
    try:
        meta["total_cycles"] = finite_number(meta["total_cycles"], "total_cycles")
        for key in ("ddr_peak_gbps", "ddr_achievable_gbps"):
            meta[key] = finite_number(meta[key], key, 0.0, 1e12)
        terms = meta["roofline_terms"]
        if not isinstance(terms, dict):
            raise ValueError("roofline_terms is not an object")
        meta["roofline_terms"] = {k: finite_number(v, f"roofline term {k!r}")
                                  for k, v in terms.items()}
        if meta["bound"] is not None and not isinstance(meta["bound"], str):
            raise ValueError(f"bound is {meta['bound']!r:.40}, not text")
        if meta.get("clock_mhz") is not None:
            meta["clock_mhz"] = finite_number(meta["clock_mhz"], "clock_mhz", 1e-9, 1e12)
        for key in ("length", "core_mask"):
            value = meta.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or not 0 <= value < 2 ** 64):
                raise ValueError(f"{key} is {value!r:.40}, not a non-negative integer")
        check_resources(meta.get(RESOURCES))
    except ValueError as exc:
        raise ArgumentError(f"{path}: bad metadata: {exc}") from None
    return meta


def _slice_args(args: dict, where: str) -> dict:
    """Args the summary and the speed-of-light table add up, checked."""
    try:
        if "bytes" in args:
            finite_number(args["bytes"], "bytes", 0.0, 2.0 ** 63)
        check_usage_args(args)
    except ValueError as exc:
        raise ArgumentError(f"{where}: {exc}") from None
    return args


def read_trace(path: str | os.PathLike) -> Trace:
    """Parse a dspsim trace file, Perfetto protobuf or Chrome JSON; a clear error if it is
    not one."""
    path = os.fspath(path)
    model = read_model(path)
    metadata = _metadata(model.metadata, path)
    cores = {group: _core_of(group, path) for group in model.groups()}
    slices = []
    calls = []
    for piece in model.slices:
        track = model.tracks[piece.track]
        if piece.args.get("program_slice"):
            # a program's parent slice of a call (or an event), not engine activity
            if track.name.startswith("stream ") and piece.category == "call":
                calls.append((track.name[len("stream "):], piece.name, piece.start, piece.end))
            continue
        slices.append(TraceSlice(cores[track.group], track.name, piece.name, piece.start,
                                 piece.end - piece.start,
                                 _slice_args(piece.args, f"{path}: slice {piece.name[:40]!r}")))
    ddr = [(round(s.at), s.value) for s in model.samples
           if model.tracks[s.track].name == DDR_COUNTER]
    streams = [t.name[len("stream "):] for t in model.tracks if t.name.startswith("stream ")
               and _core_of(t.group, path) is None]
    return Trace(path, metadata, metadata["total_cycles"], slices, sorted(ddr), model,
                 calls, streams)


#: What the simulator measured and the summary reports as is.
MODEL_METADATA = ("roofline_terms", "bound", "ddr_peak_gbps", "ddr_achievable_gbps")
