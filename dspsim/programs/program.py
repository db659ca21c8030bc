"""Programs: operator calls on streams of one chip, run on one timeline.

The model is the ACL runtime's, which the aclnn facade already speaks::

    prog = chip.program()
    s0, s1 = prog.stream(), prog.stream()
    s0.fp_gelu_grad_s(dy, x, dx, n, 0x0f)      # C signature; enqueued, not run
    done = s0.record()
    s1.wait(done)
    s1.fp_relu_grad_s(dx, x, dz, n, 0xf0)
    result = prog.run(numerics=True)            # a ProgramResult

Calls within a stream run in order; calls on different streams run concurrently when
their core masks are disjoint (a core runs one call at a time) and share DDR. Every call
is checked when it is enqueued; :meth:`Program.run` then refuses deadlocks and races
before anything runs, times the whole program, and only then computes the numerics, call
by call in dependency order, through simulated memory.
"""
from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dspsim.binding import BoundCall
from dspsim.methods import operator_doc, operator_signature
from dspsim.programs.assemble import build_result
from dspsim.programs.inputs import check_inputs_written
from dspsim.programs.result import ProgramResult
from dspsim.seam import Launcher, compute_into_destination, job_for
from dspsim.sim.chip.load import ChipConfig
from dspsim.sim.engine.machine import check_fidelity
from dspsim.sim.errors import ArgumentError
from dspsim.sim.memory import Span
from dspsim.sim.program.graph import (
    CallItem,
    RaceError,
    RecordItem,
    WaitItem,
    build_dependencies,
    find_races,
)
from dspsim.sim.program.scheduler import plan_call, run_program

#: one item of a stream as the dependency graph sees it
GraphItem = CallItem | RecordItem | WaitItem

#: what :meth:`Program.run` does about races
RACE_POLICIES = ("error", "warn")

#: how messages tell the user to fix a program built in Python; a program file's loader
#: replaces them with advice about the file (see :data:`dspsim.programs.file.FILE_ADVICE`)
PYTHON_ADVICE = {
    "no calls": "enqueue operators on a stream (prog.stream().fp_relu_grad_s(...)) before "
                "running it",
    "unwritten": "write it first (chip.write)",
}


@dataclass(frozen=True)
class Initial:
    """Data a program stores before its numerics: the spans it fills, and how."""

    spans: tuple[Span, ...]
    write: Callable[[], None]


class Event:
    """An event of a program: recorded on one stream, waited for on others."""

    def __init__(self, program: Program, name: str) -> None:
        self.program = program
        self.name = name
        self.stream: Stream | None = None  # the stream that records it, once recorded

    def __repr__(self) -> str:
        where = f"recorded on {self.stream.name!r}" if self.stream else "not recorded"
        return f"Event({self.name!r}, {where})"


class EnqueuedCall:
    """A call waiting in a stream; ``index`` numbers it in its program."""

    def __init__(self, index: int, stream: Stream, bound: BoundCall) -> None:
        self.index = index
        self.stream = stream
        self.bound = bound

    @property
    def label(self) -> str:
        return f"call {self.index} {self.bound.cname.name}"

    def __repr__(self) -> str:
        return f"EnqueuedCall({self.label} on stream {self.stream.name!r})"


class Stream:
    """An in-order queue of calls, records and waits. Operators are its methods, named and
    ordered as in C (``s.fp_gelu_grad_s(dy, x, dx, length, core_mask)``)."""

    def __init__(self, program: Program, name: str) -> None:
        self.program = program
        self.name = name
        self.items: list[EnqueuedCall | RecordItem | WaitItem] = []

    def __repr__(self) -> str:
        return f"Stream({self.name!r}, {len(self.items)} items)"

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.program.chip.operator_names()))

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        chip = self.program.chip
        cname = chip.resolve(name)

        def method(*args, core=None, **kwargs):
            return self.enqueue(name, *args, core=core, **kwargs)

        method.__name__ = method.__qualname__ = cname.name
        method.__doc__ = (f"Enqueue {cname.name} on this stream; returns the EnqueuedCall.\n\n"
                          + operator_doc(cname, chip.config))
        signature = operator_signature(cname)
        method.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=[p for p in signature.parameters.values()
                        if p.name not in ("numerics", "fidelity")],
            return_annotation="EnqueuedCall")
        return method

    def enqueue(self, name: str, *args, core: int | None = None, **kwargs) -> EnqueuedCall:
        """Check a call of operator ``name`` (C arguments) and append it to the stream.

        The inputs need not hold data yet: an earlier call may produce them.
        """
        program = self.program
        bound = program.chip.bind(name, args, kwargs, core=core, require_written=False)
        with program._lock:  # threads may enqueue on one program: one index per call
            program._check_open()
            call = EnqueuedCall(len(program.calls), self, bound)
            program.calls.append(call)
            self.items.append(call)
        return call

    def record(self, event: Event | None = None) -> Event:
        """Record ``event`` (a new one if None) here: it completes once everything enqueued
        on this stream so far has."""
        program = self.program
        with program._lock:
            program._check_open()
            event = program.event() if event is None else program._own(event)
            if event.stream is not None:
                raise ArgumentError(f"event {event.name!r} is already recorded on stream "
                                    f"{event.stream.name!r}; record a new event "
                                    f"(prog.event())")
            event.stream = self
            self.items.append(RecordItem(event.name))
        return event

    def wait(self, event: Event) -> None:
        """Hold everything enqueued on this stream from now on until ``event`` completes."""
        with self.program._lock:
            self.program._check_open()
            self.items.append(WaitItem(self.program._own(event).name))


class Program:
    """Calls on streams of one chip, run together on one timeline (see the module doc)."""

    def __init__(self, chip: Launcher) -> None:
        if not isinstance(chip, Launcher):
            raise ArgumentError(f"Program({chip!r}): give a Chip, e.g. Program(Chip('ft78ne')) "
                                f"or chip.program()")
        self.chip = chip
        self.streams: list[Stream] = []
        self.calls: list[EnqueuedCall] = []
        self.events: dict[str, Event] = {}
        self._names = itertools.count()
        self._ran = False
        self.advice = dict(PYTHON_ADVICE)
        # threads may share a program: enqueueing and running hold this lock
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return (f"Program({self.chip.name}, {len(self.streams)} streams, "
                f"{len(self.calls)} calls)")

    def _check_open(self) -> None:
        if self._ran:
            raise ArgumentError("this program has run; make a new one (chip.program()) for "
                                "more calls")

    def _own(self, event: Any) -> Event:
        if not isinstance(event, Event) or event.program is not self:
            raise ArgumentError(f"{event!r} is not an event of this program; use one from "
                                f"prog.event() or stream.record()")
        return event

    def stream(self, name: str | None = None) -> Stream:
        """A new stream (named ``s0``, ``s1``, ... unless ``name`` is given)."""
        with self._lock:
            self._check_open()
            name = f"s{len(self.streams)}" if name is None else str(name)
            if any(s.name == name for s in self.streams):
                raise ArgumentError(f"stream name {name!r} is taken; choose another")
            stream = Stream(self, name)
            self.streams.append(stream)
        return stream

    def event(self, name: str | None = None) -> Event:
        """A new event, not yet recorded (``stream.record(event)`` records it)."""
        with self._lock:
            if name is None:
                name = next(n for n in (f"e{k}" for k in self._names) if n not in self.events)
            name = str(name)
            if name in self.events:
                raise ArgumentError(f"event name {name!r} is taken; choose another")
            event = self.events[name] = Event(self, name)
        return event

    # ------------------------------------------------------------------ running
    def run(self, *, numerics: bool = True, fidelity: str = "fast", races: str = "error",
            initial: Initial | None = None) -> ProgramResult:
        """Check, time and (with ``numerics``) compute the whole program.

        Raises DeadlockError for a wait on an event never recorded or a cycle of waits,
        RaceError for unordered calls touching the same bytes (one writing) unless
        ``races="warn"`` (then the result's warnings name them), AddressError if an input
        holds no data and no earlier call writes it. Memory is untouched until every
        check and the timing have passed. ``initial`` (spans, write) names data that
        ``write()`` stores once every check has passed, before the numerics (a program
        file's initialised buffers); with ``numerics=False`` it is not written.
        """
        with self._lock, self.chip.lock:  # one run at a time on the chip's memory
            return self._run(numerics, fidelity, races, initial)

    def _run(self, numerics, fidelity, races, initial) -> ProgramResult:
        if not isinstance(numerics, bool):
            raise ArgumentError(f"numerics={numerics!r} must be True or False (timing only)")
        check_fidelity(fidelity)
        if races not in RACE_POLICIES:
            raise ArgumentError(f"races={races!r} must be one of "
                                f"{', '.join(repr(r) for r in RACE_POLICIES)}")
        if not self.calls:
            raise ArgumentError(f"the program has no calls; {self.advice['no calls']}")
        items, streams = self._graph_items()
        graph = build_dependencies(streams)
        problems = find_races(list(items.values()), graph,
                              {c.index: c.stream.name for c in self.calls})
        if problems and races == "error":
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise RaceError(problems[0] + more)
        config = self.chip.config
        tilings: dict = {}
        planned = {c.index: plan_call(config, job_for(c.bound), fidelity, tilings)
                   for c in self.calls}
        if numerics:
            check_inputs_written(self.calls, self.chip.memory, graph,
                                 initial.spans if initial else (), self.advice['unwritten'])
        timing = run_program(config, planned, graph, fidelity=fidelity)
        self._ran = True
        if numerics:
            if initial is not None:
                initial.write()
            for index in timing.memory_order:
                compute_into_destination(self.chip.memory, self.calls[index].bound)
        return build_result(self.chip.config, streams, [c.bound for c in self.calls], timing,
                            graph, warnings=problems)

    def _graph_items(self) -> tuple[dict[int, CallItem], dict[str, list[GraphItem]]]:
        """Every call as the dependency graph sees it (by index), and every stream's items
        with its calls replaced by those."""
        items = {c.index: CallItem(c.index, c.label, tuple(o.span for o in c.bound.inputs),
                                   (c.bound.output.span,)) for c in self.calls}
        streams: dict[str, list[GraphItem]] = {
            s.name: [items[i.index] if isinstance(i, EnqueuedCall) else i for i in s.items]
            for s in self.streams}
        return items, streams

    def cycles_on(self, config: ChipConfig, *, fidelity: str = "fast") -> float:
        """The program's cycles on another description of its chip, timing only (every
        call's operands where they are): for uncertainty bands and what-ifs. Raises what
        the other chip cannot run."""
        items, streams = self._graph_items()
        graph = build_dependencies(streams)
        tilings: dict = {}
        planned = {c.index: plan_call(config, job_for(c.bound), fidelity, tilings)
                   for c in self.calls}
        return run_program(config, planned, graph, fidelity=fidelity,
                           record_slices=False).cycles
