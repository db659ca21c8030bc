"""Trace files: written as Perfetto protobuf or Chrome JSON, read back from either.

Traces of calls and programs are built by :mod:`dspsim.traces.build` (the layout is
described there). One nanosecond on a viewer's axis is one core cycle; exact cycles and
bytes are in each slice's args.

The format-neutral :class:`~dspsim.traces.model.TraceModel` is what both formats are
written from and read into; a Chrome-style trace dict (with ``"s"``/``"f"`` flows) made
elsewhere is converted to it by :func:`trace_model` and so can be written as protobuf too.
A path ending in ``.json`` gets Chrome JSON (chrome://tracing); any other name, and
``.pftrace`` or ``.perfetto-trace`` in particular, gets Perfetto's protobuf.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dspsim.atomic import as_path, check_target, read_bytes, write_atomically
from dspsim.sim.errors import ArgumentError
from dspsim.traces.chrome_json import chrome_from_model, model_from_chrome, parse_json, trace_bytes
from dspsim.traces.model import TraceModel
from dspsim.traces.perfetto_proto import is_protobuf, model_from_proto, proto_bytes
from dspsim.traces.validate import validate_trace

__all__ = ["PROTOBUF_SUFFIXES", "TRACE_FORMATS", "TraceFormat", "TraceModel", "check_target",
           "chrome_from_model", "encode_trace", "load_trace", "read_model", "trace_bytes",
           "trace_format", "trace_model", "validate_trace", "write_trace"]

def trace_model(trace: TraceModel | dict[str, Any]) -> TraceModel:
    """``trace`` as a model: a model as is, a Chrome trace dict converted."""
    return trace if isinstance(trace, TraceModel) else model_from_chrome(trace)


@dataclass(frozen=True)
class TraceFormat:
    """A trace file format: its name, the file name endings that ask for it, its writer."""

    name: str
    suffixes: tuple[str, ...]
    encode: Callable[[TraceModel | dict[str, Any]], bytes]


def _chrome(trace: TraceModel | dict[str, Any]) -> bytes:
    return trace_bytes(trace if isinstance(trace, dict) else chrome_from_model(trace))


#: The trace formats by name; a new one is a writer module and an entry here.
TRACE_FORMATS: dict[str, TraceFormat] = {f.name: f for f in (
    TraceFormat("protobuf", (".pftrace", ".perfetto-trace"),
                lambda trace: proto_bytes(trace_model(trace))),
    TraceFormat("json", (".json",), _chrome),
)}
#: File name endings written as Perfetto protobuf; ``.json`` is Chrome JSON.
PROTOBUF_SUFFIXES = TRACE_FORMATS["protobuf"].suffixes
#: The format of a name with no known ending.
DEFAULT_FORMAT = "protobuf"


def trace_format(path: str | os.PathLike) -> str:
    """The name of the format whose ending ``path`` has (``"json"`` for .json), else
    :data:`DEFAULT_FORMAT`."""
    name = os.fspath(path).lower()
    return next((f.name for f in TRACE_FORMATS.values() if name.endswith(f.suffixes)),
                DEFAULT_FORMAT)


def encode_trace(trace: TraceModel | dict[str, Any], fmt: str) -> bytes:
    """The bytes of ``trace`` in the format named ``fmt`` (see :data:`TRACE_FORMATS`)."""
    if fmt not in TRACE_FORMATS:
        raise ArgumentError(f"unknown trace format {fmt!r}; use "
                            f"{' or '.join(repr(name) for name in TRACE_FORMATS)}")
    return TRACE_FORMATS[fmt].encode(trace)


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
