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

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

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
Node = tuple[Literal["call"], int] | tuple[Literal["record"], str]


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

    def happens_before(self) -> HappensBefore:
        """Which calls are ordered before which, by streams and events."""
        return HappensBefore(self)


class HappensBefore:
    """The happens-before order of a program's calls, as vector clocks.

    Every node (call or record) has a position in its stream and a clock: for each stream,
    the last position of that stream known to complete before the node starts. Call ``a``
    happens before call ``b`` when ``b``'s clock has reached ``a``'s position in ``a``'s
    stream. Memory and time are (nodes x streams), linear in calls for a given number of
    streams, where bit sets of predecessors grow with the square of the calls.
    """

    def __init__(self, graph: Dependencies) -> None:
        streams = {name: k for k, name in enumerate(dict.fromkeys(graph.stream_of.values()))}
        width = len(streams)
        self._stream = {node: streams[name] for node, name in graph.stream_of.items()}
        self._position: dict[Node, int] = {}
        self._clock: dict[Node, list[int]] = {}
        for node in graph.order:
            clock = [0] * width
            position = 1
            for dep, reason in graph.deps[node]:
                for k, seen in enumerate(self._clock[dep]):
                    if seen > clock[k]:
                        clock[k] = seen
                stream, at = self._stream[dep], self._position[dep]
                if at > clock[stream]:
                    clock[stream] = at
                if reason == "stream order":
                    position = at + 1
            self._position[node] = position
            self._clock[node] = clock
        #: each call's rank in a topological order of the program
        self.rank = {node[1]: k for k, node in enumerate(graph.order) if node[0] == "call"}

    def __call__(self, first: int, second: int) -> bool:
        """Whether call ``first`` completes before call ``second`` starts."""
        a: Node = ("call", first)
        b: Node = ("call", second)
        return self._clock[b][self._stream[a]] >= self._position[a]

    def earliest(self, calls: Iterable[int]) -> dict[int, int]:
        """For a set of calls, the first position each stream has among them: all that
        :meth:`any_before` needs to know of the set."""
        earliest: dict[int, int] = {}
        for index in calls:
            node: Node = ("call", index)
            stream, position = self._stream[node], self._position[node]
            if position < earliest.get(stream, position + 1):
                earliest[stream] = position
        return earliest

    def any_before(self, earliest: dict[int, int], call: int) -> bool:
        """Whether some call of a set (given by :meth:`earliest`) completes before ``call``
        starts."""
        clock = self._clock[("call", call)]
        return any(clock[stream] >= position for stream, position in earliest.items())

    def ordered(self, first: int, second: int) -> bool:
        """Whether the two calls are ordered, either way."""
        return self(first, second) or self(second, first)


def build_dependencies(streams: Mapping[str, Sequence[object]]) -> Dependencies:
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


#: At most this many racing pairs are described; one is enough to refuse a program.
RACES_REPORTED = 100


def find_races(calls: Sequence[CallItem], graph: Dependencies,
               streams: dict[int, str]) -> list[str]:
    """A message for pairs of calls that race: not ordered by streams or events, with
    overlapping memory that at least one of them writes. Empty if there is none.

    Accesses are grouped by the bytes they touch; within a group (and across two groups
    whose bytes overlap) they are taken in a topological order of the program, and each
    is checked against the last write before it and, if it writes, against the reads since
    that write: by transitivity every other pair is then ordered too, so a program has a
    race exactly when this finds one, in time near-linear in its calls. At most
    :data:`RACES_REPORTED` pairs are described. ``streams`` gives each call's stream, for
    the messages.
    """
    before = graph.happens_before()
    rank = before.rank
    groups: dict[tuple, list[tuple[int, int, bool, Span]]] = {}
    for call in calls:
        for span, writes in [(s, False) for s in call.reads] + [(s, True) for s in call.writes]:
            if span.nbytes:
                groups.setdefault((span.region, span.core, span.offset, span.end_offset),
                                  []).append((rank[call.index], call.index, writes, span))
    by_index = {call.index: call for call in calls}
    found: dict[tuple[int, int], str] = {}

    def check(accesses: list[tuple[int, int, bool, Span]]) -> None:
        last_write = None
        reads: list[tuple[int, int, bool, Span]] = []
        for access in sorted(accesses, key=lambda a: (a[0], not a[2])):
            _, index, writes, _ = access
            others = ([last_write] if last_write is not None else []) + (reads if writes else [])
            for other in others:
                if other[1] != index and not before.ordered(other[1], index):
                    _report(found, by_index, streams, other, access)
            if writes:
                last_write, reads = access, []
            else:
                reads.append(access)

    keys = sorted(groups, key=lambda k: (k[0], str(k[1]), k[2], k[3]))
    for key in keys:
        check(groups[key])
    # groups whose bytes overlap without being the same: a sweep over their ranges
    by_storage: dict[tuple, list[tuple]] = {}
    for key in keys:
        by_storage.setdefault(key[:2], []).append(key)
    for ranges in by_storage.values():
        open_ranges: list[tuple] = []
        for key in ranges:  # sorted by start
            open_ranges = [k for k in open_ranges if k[3] > key[2]]
            for other in open_ranges:
                if len(found) >= RACES_REPORTED:
                    break
                check(groups[other] + groups[key])
            open_ranges.append(key)
    return [found[key] for key in sorted(found)][:RACES_REPORTED]


def _report(found: dict, by_index: dict, streams: dict, one: tuple, other: tuple) -> None:
    """Describe the race between two accesses (rank, call index, writes, span)."""
    (first_access, second_access) = sorted((one, other), key=lambda a: a[1])
    first, second = first_access[1], second_access[1]
    if (first, second) in found:
        return
    a_span, b_span = first_access[3], second_access[3]
    lo, hi = max(a_span.offset, b_span.offset), min(a_span.end_offset, b_span.end_offset)
    a, b = by_index[first], by_index[second]
    what_a = "writes" if any(s.overlaps(b_span) for s in a.writes) else "reads"
    what_b = "writes" if any(s.overlaps(a_span) for s in b.writes) else "reads"
    found[(first, second)] = (
        f"race: {a.label} on stream {streams[first]!r} {what_a} and {b.label} on "
        f"stream {streams[second]!r} {what_b} {_describe(a_span, lo, hi)} with no "
        f"event ordering them; record an event after one and wait for it on the "
        f"other's stream, or use separate buffers")
