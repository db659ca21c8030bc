"""The format-neutral trace: tracks in groups, slices with args, counters, flows.

Both writers consume it (:mod:`dspsim.traces.chrome_json` for Chrome's JSON,
:mod:`dspsim.traces.perfetto_proto` for Perfetto's protobuf) and both readers produce it, so a
trace built once — from a call's Timing here, or from any Chrome-style dict with flows —
is written in either format and read back the same way.

Times are core cycles (floats, as the model measured them). Viewers want integers (one
nanosecond on their axis is one cycle): :meth:`TraceModel.integer_spans` rounds each
track's slices so that the whole cycles they add up to equal the exact busy cycles
rounded, never losing a cycle per slice as truncation would.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

#: The largest time, in cycles, a trace may hold: integers up to it are exact as floats.
MAX_CYCLES = float(2 ** 53)


@dataclass(frozen=True)
class Track:
    """A row of the timeline: ``name`` within the group ``group`` (a process, a core).

    ``kind`` is ``"slices"`` or ``"counter"``; a counter has a ``unit``. ``ids`` are the
    Chrome (pid, tid) the track had or should have, when they matter to a reader.
    """

    group: str
    name: str
    kind: str = "slices"
    unit: str = ""
    ids: tuple[int, int] | None = None


@dataclass(frozen=True)
class TrackSlice:
    """One activity on a track, in cycles; ``args`` are shown beside it in a viewer."""

    track: int  # index into TraceModel.tracks
    name: str
    category: str
    start: float
    end: float
    args: dict[str, Any]


@dataclass(frozen=True)
class CounterSample:
    """A counter's value from cycle ``at`` on."""

    track: int
    at: float
    value: float


@dataclass(frozen=True)
class Flow:
    """An arrow from one slice to another (indices into TraceModel.slices)."""

    id: int
    source: int
    target: int


@dataclass
class TraceModel:
    """A whole trace. Tracks are in display order; groups in the order they first appear."""

    metadata: dict[str, Any]
    tracks: list[Track] = field(default_factory=list)
    slices: list[TrackSlice] = field(default_factory=list)
    samples: list[CounterSample] = field(default_factory=list)
    flows: list[Flow] = field(default_factory=list)

    def track(self, group: str, name: str, kind: str = "slices", unit: str = "",
              ids: tuple[int, int] | None = None) -> int:
        """The index of the track ``group``/``name``, added at the end if new."""
        for index, track in enumerate(self.tracks):
            if track.group == group and track.name == name:
                return index
        return self.add_track(Track(group, name, kind, unit, ids))

    def add_track(self, track: Track) -> int:
        """Append ``track`` (even if one of that name exists) and return its index."""
        self.tracks.append(track)
        return len(self.tracks) - 1

    def groups(self) -> list[str]:
        """Group names in display order."""
        return list(dict.fromkeys(t.group for t in self.tracks))

    def integer_spans(self) -> list[tuple[int, int]]:
        """Each slice's (start, end) in whole cycles, for viewers that count integer ns.

        On a track whose slices follow one another without overlap, busy stretches and
        idle stretches are rounded cumulatively: the slices' whole cycles add up to their
        exact total rounded, each end stays within a cycle of the exact one, and order is
        kept. A track with nested slices has each time rounded to the nearest cycle, which
        keeps nesting (rounding is monotone).
        """
        spans: list[tuple[int, int]] = [(0, 0)] * len(self.slices)
        by_track: dict[int, list[int]] = {}
        for index, piece in enumerate(self.slices):
            by_track.setdefault(piece.track, []).append(index)
        for indices in by_track.values():
            indices.sort(key=lambda i: (self.slices[i].start, -self.slices[i].end))
            ordered = [self.slices[i] for i in indices]
            sequential = all(a.end <= b.start for a, b in pairwise(ordered))
            if not sequential:
                for i in indices:
                    spans[i] = (round(self.slices[i].start), round(self.slices[i].end))
                continue
            busy = idle = 0.0
            cursor = 0.0
            for i, piece in zip(indices, ordered, strict=True):
                idle += piece.start - cursor
                start = round(busy) + round(idle)
                busy += piece.end - piece.start
                spans[i] = (start, round(busy) + round(idle))
                cursor = piece.end
        return spans


# ----------------------------------------------------------------------------- checks
def finite_number(value: Any, what: str, low: float = 0.0, high: float = MAX_CYCLES) -> float:
    """``value`` as a float if it is a real number within [low, high]; else ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} is {_short(value)}, not a number")
    if isinstance(value, int) and not -2 ** 63 <= value < 2 ** 63:
        raise ValueError(f"{what} {_short(value)} is out of range")
    number = float(value)
    if not math.isfinite(number) or not low <= number <= high:
        raise ValueError(f"{what} {_short(value)} is outside [{low:g}, {high:g}]")
    return number


def _short(value: Any) -> str:
    text = repr(value) if not isinstance(value, int) or abs(value) < 10 ** 30 else "a huge integer"
    return text if len(text) <= 40 else text[:37] + "..."


#: How deeply metadata and args may nest (dicts and lists within each other).
MAX_DEPTH = 32


def check_text(text: str, what: str) -> str:
    """``text`` if it is valid Unicode (no lone surrogates, which no file can hold)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{what} holds text that is not valid Unicode") from None
    return text


def check_plain(value: Any, what: str) -> None:
    """ValueError unless ``value`` is JSON-like data (dict with str keys, list, str, finite
    number, bool, None) nested at most MAX_DEPTH deep."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ValueError(f"{what} is nested more than {MAX_DEPTH} deep")
        if isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    raise ValueError(f"{what} has a key {_short(key)} that is not text")
                check_text(key, what)
                stack.append((child, depth + 1))
        elif isinstance(item, str):
            check_text(item, what)
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, float) and not math.isfinite(item):
            raise ValueError(f"{what} holds {item!r}")
        elif isinstance(item, int) and not isinstance(item, bool) and abs(item) >= 2 ** 63:
            raise ValueError(f"{what} holds an integer beyond 64 bits")
        elif not (item is None or isinstance(item, (str, int, float, bool))):
            raise ValueError(f"{what} holds a {type(item).__name__}")
