"""The order of a program's calls: streams, events, deadlocks and races.

A program is a set of in-order streams. Each stream holds, in order, calls, records of an
event and waits for an event. A record completes once everything before it in its stream
has; a wait holds everything after it in its stream until the event's record completes.
This module turns the streams into a dependency graph over calls and records, refuses
waits on events never recorded and cycles of waits (:class:`DeadlockError`), works out
which calls are ordered (happens-before), and finds races: two calls not ordered that
touch overlapping memory, one of them writing (:class:`RaceError`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from dspsim.sim.errors import ArgumentError
from dspsim.sim.memory import Span


class DeadlockError(ArgumentError):
    """Waits that can never be satisfied: an event never recorded, or a cycle of waits."""


class RaceError(ArgumentError):
    """Two calls not ordered by their streams or events touch the same bytes, one writing."""


@dataclass(frozen=True)
class CallItem:
    """A call in a stream: ``index`` numbers it in the program; spans it reads and writes."""

    index: int
    label: str  # how messages name it, e.g. "call 3 fp_gelu_grad_s"
    reads: tuple[Span, ...]
    writes: tuple[Span, ...]


@dataclass(frozen=True)
class RecordItem:
    """A record of ``event`` in a stream."""

    event: str


@dataclass(frozen=True)
class WaitItem:
    """A wait for ``event`` in a stream."""

    event: str


#: a dependency of a call or record: ("call", index) or ("record", event name)
Node = tuple[str, object]


@dataclass
class Dependencies:
    """The program's dependency graph.

    ``deps[node]`` lists the nodes that must complete before ``node`` starts (calls) or
    completes (records), each with why: ``"stream order"`` or ``"event NAME"``. ``order``
    lists every node in a topological order; ``stream_of`` maps each node to its stream.
    """

    deps: dict[Node, list[tuple[Node, str]]]
    order: list[Node]
    stream_of: dict[Node, str]

    def ordered_before(self) -> dict[int, int]:
        """For each call, a bit set (int) of the calls that happen before it."""
        reach: dict[Node, int] = {}
        for node in self.order:
            bits = 0
            for dep, _ in self.deps[node]:
                bits |= reach[dep]
                if dep[0] == "call":
                    bits |= 1 << dep[1]
            reach[node] = bits
        return {node[1]: bits for node, bits in reach.items() if node[0] == "call"}


def build_dependencies(streams: dict[str, Sequence[object]]) -> Dependencies:
    """The dependency graph of ``streams`` (name -> items in order).

    Raises DeadlockError naming the streams for a wait on an event no stream records, an
    event recorded twice, or a cycle of waits.
    """
    deps: dict[Node, list[tuple[Node, str]]] = {}
    stream_of: dict[Node, str] = {}
    recorded: dict[str, str] = {}
    waits: list[tuple[str, str]] = []
    for stream, items in streams.items():
        frontier: list[tuple[Node, str]] = []
        for item in items:
            if isinstance(item, CallItem):
                node: Node = ("call", item.index)
                deps[node] = frontier
                stream_of[node] = stream
                frontier = [(node, "stream order")]
            elif isinstance(item, RecordItem):
                if item.event in recorded:
                    raise DeadlockError(
                        f"event {item.event!r} is recorded twice (streams {recorded[item.event]!r}"
                        f" and {stream!r}); record a new event for each point a stream must "
                        f"wait for")
                node = ("record", item.event)
                recorded[item.event] = stream
                deps[node] = frontier
                stream_of[node] = stream
                frontier = [(node, "stream order")]
            elif isinstance(item, WaitItem):
                waits.append((item.event, stream))
                frontier = frontier + [(("record", item.event), f"event {item.event}")]
            else:
                raise TypeError(f"not a stream item: {item!r}")
    for event, stream in waits:
        if event not in recorded:
            raise DeadlockError(
                f"stream {stream!r} waits for event {event!r}, which no stream records; "
                f"record it on the stream that must finish first, or remove the wait")
    return Dependencies(deps, _topological(deps, stream_of), stream_of)


def _topological(deps: dict[Node, list[tuple[Node, str]]],
                 stream_of: dict[Node, str]) -> list[Node]:
    """The nodes in an order where each follows its dependencies; DeadlockError on a cycle."""
    state: dict[Node, int] = {}  # 1: on the path being explored, 2: done
    order: list[Node] = []
    for root in deps:
        if state.get(root):
            continue
        path = [root]
        cursors = [iter(deps[root])]
        state[root] = 1
        while cursors:
            step = next(cursors[-1], None)
            if step is None:
                node = path.pop()
                cursors.pop()
                state[node] = 2
                order.append(node)
                continue
            dep = step[0]
            if state.get(dep) == 2:
                continue
            if state.get(dep) == 1:
                cycle = path[path.index(dep):]
                streams = sorted({stream_of[n] for n in cycle})
                events = sorted({n[1] for n in cycle if n[0] == "record"})
                if len(streams) == 1:
                    raise DeadlockError(
                        f"deadlock: stream {streams[0]!r} waits for event "
                        f"{', '.join(repr(e) for e in events)}, which it records only later "
                        f"itself, so the wait can never end; record the event on another "
                        f"stream, or record it before the wait")
                raise DeadlockError(
                    f"deadlock: streams {', '.join(repr(s) for s in streams)} wait for each "
                    f"other in a cycle (events {', '.join(repr(e) for e in events)}); make "
                    f"one of them record its event before waiting for the other's")
            state[dep] = 1
            path.append(dep)
            cursors.append(iter(deps[dep]))
    return order


def _describe(span: Span, start: int, end: int) -> str:
    base = span.address - span.offset  # the address of the span's region (or L2) start
    where = span.region if span.core is None else f"core {span.core}'s l2"
    return f"[{base + start:#x}, {base + end:#x}) in {where}"


def find_races(calls: Sequence[CallItem], graph: Dependencies,
               streams: dict[int, str]) -> list[str]:
    """A message for each pair of calls that race: not ordered by streams or events, with
    overlapping memory that at least one of them writes. Empty if there is none.

    ``streams`` gives each call's stream, for the messages.
    """
    before = graph.ordered_before()
    accesses: dict[tuple, list[tuple[int, int, int, bool, Span]]] = {}
    for call in calls:
        for span, writes in [(s, False) for s in call.reads] + [(s, True) for s in call.writes]:
            if span.nbytes:
                accesses.setdefault((span.region, span.core), []).append(
                    (span.offset, span.end_offset, call.index, writes, span))
    by_index = {call.index: call for call in calls}
    found: dict[tuple[int, int], str] = {}
    for spans in accesses.values():
        spans.sort(key=lambda a: (a[0], a[1]))
        active: list[tuple[int, int, int, bool, Span]] = []
        for access in spans:
            start, end, index, writes, span = access
            active = [a for a in active if a[1] > start]
            for other in active:
                first, second = sorted((other[2], index))
                if first == second or (first, second) in found:
                    continue
                if not (writes or other[3]):
                    continue
                if before[second] >> first & 1 or before[first] >> second & 1:
                    continue
                lo, hi = max(start, other[0]), min(end, other[1])
                a, b = by_index[first], by_index[second]
                what_a = "writes" if any(s.overlaps(span) or s.overlaps(other[4])
                                         for s in a.writes) else "reads"
                what_b = "writes" if any(s.overlaps(span) or s.overlaps(other[4])
                                         for s in b.writes) else "reads"
                found[(first, second)] = (
                    f"race: {a.label} on stream {streams[first]!r} {what_a} and {b.label} on "
                    f"stream {streams[second]!r} {what_b} {_describe(span, lo, hi)} with no "
                    f"event ordering them; record an event after one and wait for it on the "
                    f"other's stream, or use separate buffers")
            active.append(access)
    return [found[key] for key in sorted(found)]
