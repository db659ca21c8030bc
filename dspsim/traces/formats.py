"""Traces of a call: built from its Timing, written as Perfetto protobuf or Chrome JSON,
read back from either.

Layout: a ``<CHIP> call`` group holding the ``call`` track (launch and barrier slices) and
the ``DDR bandwidth`` counter (GB/s in use), then one group per core (``core N``) with one
track per engine (``dma-in``, ``vector``, ``dma-out``; ``dma-in.0``, ``dma-in.1``… when a
core has several engines per direction), and a metadata object naming chip, operator,
dtype, length, core_mask and clock. One nanosecond on a viewer's axis is one core cycle;
exact cycles and bytes are in each slice's args.

The format-neutral :class:`~dspsim.traces.model.TraceModel` is what both formats are
written from and read into; a Chrome-style trace dict (with ``"s"``/``"f"`` flows) made
elsewhere is converted to it by :func:`trace_model` and so can be written as protobuf too.
A path ending in ``.json`` gets Chrome JSON (chrome://tracing); any other name, and
``.pftrace`` or ``.perfetto-trace`` in particular, gets Perfetto's protobuf.
"""
from __future__ import annotations

import os
from typing import Any

from dspsim.sim.errors import ArgumentError
from dspsim.sim.engine.machine import CALL_TRACK, Timing
from dspsim.atomic import as_path, check_target, read_bytes, write_atomically
from dspsim.traces.chrome_json import (chrome_from_model, micro as _micro, model_from_chrome,
                                   parse_json, trace_bytes)
from dspsim.traces.model import CounterSample, TraceModel, TrackSlice
from dspsim.traces.perfetto_proto import is_protobuf, model_from_proto, proto_bytes
from dspsim.traces.validate import validate_trace

__all__ = ["CALL_PID", "PROTOBUF_SUFFIXES", "TIME_UNIT_NOTE", "TraceModel", "build_trace",
           "check_target", "core_pid", "encode_trace", "load_trace", "model_from_timing",
           "read_model", "trace_bytes", "trace_format", "trace_model", "validate_trace",
           "write_trace", "_micro"]

#: File name endings written as Perfetto protobuf; ``.json`` is Chrome JSON.
PROTOBUF_SUFFIXES = (".pftrace", ".perfetto-trace")
JSON_SUFFIX = ".json"
#: The format of a name with neither ending.
DEFAULT_FORMAT = "protobuf"

def trace_format(path: str | os.PathLike) -> str:
    """``"json"`` for a path ending in .json, ``"protobuf"`` otherwise."""
    name = os.fspath(path).lower()
    if name.endswith(JSON_SUFFIX):
        return "json"
    return "protobuf" if name.endswith(PROTOBUF_SUFFIXES) else DEFAULT_FORMAT


CALL_PID = 0
TIME_UNIT_NOTE = ("1 ns on the time axis is 1 core cycle (in JSON, ts and dur are "
                  "cycles/1000 in microseconds)")
DDR_COUNTER = "DDR bandwidth"


def core_pid(core: int) -> int:
    """The Chrome process id of a core's group."""
    return core + 1


def _engine_order(engine: str) -> tuple[int, int]:
    from dspsim.sim.engine.machine import ENGINES  # noqa: PLC0415
    base, _, sub = engine.partition(".")
    return (ENGINES.index(base) if base in ENGINES else len(ENGINES),
            int(sub) if sub.isdigit() else 0)


def model_from_timing(timing: Timing, metadata: dict[str, Any],
                      ddr_gbps_per_byte_cycle: float) -> TraceModel:
    """The trace of one call. ``ddr_gbps_per_byte_cycle`` converts the model's bytes per
    cycle into GB/s for the DDR counter."""
    model = TraceModel(metadata={
        **metadata, "time_unit": TIME_UNIT_NOTE, "total_cycles": timing.cycles,
        "roofline_terms": dict(timing.roofline_terms),
        "bound": timing.bound if timing.roofline_terms else None})
    call_group = f"{metadata.get('chip', 'chip')} call"
    slices = timing.slices
    engines_of: dict[int, set[str]] = {}
    for piece in slices:
        engines_of.setdefault(piece.core, set()).add(piece.engine)
    engines_of.pop(CALL_TRACK, None)
    tracks = {(CALL_TRACK, "call"): model.track(call_group, "call", ids=(CALL_PID, 1))}
    ddr = (model.track(call_group, DDR_COUNTER, "counter", "GB/s")
           if timing.ddr_samples else None)
    for core in sorted(engines_of):
        pid = core_pid(core)
        for index, engine in enumerate(sorted(engines_of[core], key=_engine_order), start=1):
            # a thread whose tid equals its pid is shown as the process's main thread
            tracks[(core, engine)] = model.track(f"core {core}", engine,
                                                 ids=(pid, pid * 1000 + index))
    for piece in slices:
        track = tracks[(piece.core, "call" if piece.core == CALL_TRACK else piece.engine)]
        model.slices.append(TrackSlice(track, piece.name, piece.engine.partition(".")[0],
                                       piece.start, piece.end, dict(piece.args)))
    for cycle, rate in timing.ddr_samples:
        model.samples.append(CounterSample(ddr, cycle, round(rate * ddr_gbps_per_byte_cycle, 6)))
    return model


def build_trace(timing: Timing, metadata: dict[str, Any], ddr_gbps_per_byte_cycle: float
                ) -> dict[str, Any]:
    """The Chrome trace dict of one call (see :func:`model_from_timing`)."""
    return chrome_from_model(model_from_timing(timing, metadata, ddr_gbps_per_byte_cycle))


def trace_model(trace: TraceModel | dict[str, Any]) -> TraceModel:
    """``trace`` as a model: a model as is, a Chrome trace dict converted."""
    return trace if isinstance(trace, TraceModel) else model_from_chrome(trace)


def encode_trace(trace: TraceModel | dict[str, Any], fmt: str) -> bytes:
    """The bytes of ``trace`` in ``fmt`` (``"protobuf"`` or ``"json"``)."""
    if fmt == "json":
        return trace_bytes(trace if isinstance(trace, dict) else chrome_from_model(trace))
    if fmt == "protobuf":
        return proto_bytes(trace_model(trace))
    raise ArgumentError(f"unknown trace format {fmt!r}; use 'protobuf' or 'json'")


def write_trace(trace: TraceModel | dict[str, Any], path: str | os.PathLike,
                fmt: str | None = None) -> str:
    """Write ``trace`` to ``path`` atomically, in the format its name asks for (see the
    module docstring) unless ``fmt`` says; returns the path."""
    check_target(path)  # before encoding: a bad path fails fast
    path = as_path(path)
    fmt = fmt or trace_format(path)
    return write_atomically(encode_trace(trace, fmt), path)


def read_model(path: str | os.PathLike) -> TraceModel:
    """The model of a trace file of either format (recognised by its content)."""
    shown = os.fspath(path)
    data = read_bytes(shown)
    if is_protobuf(data):
        return model_from_proto(data, shown)
    return model_from_chrome(parse_json(data, shown), shown)


def load_trace(path: str | os.PathLike) -> dict[str, Any]:
    """A trace file of either format as a Chrome trace dict."""
    shown = os.fspath(path)
    data = read_bytes(shown)
    if is_protobuf(data):
        return chrome_from_model(model_from_proto(data, shown))
    trace = parse_json(data, shown)
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        raise ArgumentError(f"{shown} is not a Chrome trace: no traceEvents list")
    return trace
