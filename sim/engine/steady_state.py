"""The state of a call's timeline relative to its clock, as the steady state compares it.

:class:`TimelineState` reads, at one instant, everything that decides what the call does
next: every pipeline's counters, the transfers in flight and the engines they hold, the
fluid flows or the burst trains and link queues, who waits for a DMA engine, and every
pending event by what it will do. It splits that into a discrete part (a key, equal from
one period to the next when the state repeats) and a continuous part (times until or
since events, bytes left) with the scale each is compared at.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from dspsim.sim.engine.detailed import BurstDMA, LinkArbiter, _Burst, _BurstTransfer
from dspsim.sim.engine.network import FlowTimer
from dspsim.sim.engine.pipeline import _TileTransfer

#: The scale of a time: compared to the period between the two snapshots.
TIME = float("nan")


class Handle(NamedTuple):
    """Where a continuous value of the state lives: ``owner``'s attributes ``names`` (the
    first one read, all moved alike), or with no owner the pending event of id
    ``names[0]``. The value grows by ``sign`` times what the attributes grow by: -1 for a
    time since an instant, 1 for a time until one or for bytes left."""

    owner: object
    names: tuple
    sign: int


def _kind(engine) -> tuple:
    """What makes DMA engines interchangeable: their rate and the regions they reach."""
    return (engine.rate, tuple(sorted(engine.regions)))


def _action(event) -> Any:
    """What a pending event will do: its first callback, or the burst or burst train that
    is the event (a burst crossing a link, a train waiting for its engine's pace; see
    :mod:`dspsim.sim.engine.detailed`)."""
    return event if isinstance(event, (_Burst, _BurstTransfer)) else event.callbacks[0]


def _stale(event) -> bool:
    """Whether a pending event is a flow timer that rates have changed since."""
    callbacks = event.callbacks
    return bool(callbacks) and isinstance(callbacks[0], FlowTimer) and callbacks[0].stale


class State(NamedTuple):
    """A timeline's state relative to its clock: ``key`` (the discrete part), ``values``
    (the continuous part: times since or until events, bytes left, rates), ``scales``
    (:data:`TIME` for a time, compared to the period; else the value's own scale) and
    ``paces`` (how fast each value moves as its part's phase moves: 1 for a time, a
    flow's rate for its bytes left, 0 for a rate, which does not move with phase)."""

    key: tuple
    values: np.ndarray
    scales: np.ndarray
    paces: np.ndarray


class TimelineState:
    """Reads the state of a call's timeline: ``pipelines`` are its core groups' pipelines,
    ``dma`` its DMA model (fluid flows or bursts)."""

    def __init__(self, model, pipelines: list, dma) -> None:
        self.pipelines = pipelines
        self.env = model.env
        self.timeline = model.timeline
        self.network = getattr(dma, "network", None)
        self.bursts = dma if isinstance(dma, BurstDMA) else None
        self._index = {id(p): k for k, p in enumerate(pipelines)}

    def state(self, handles: list | None = None) -> State:
        """The timeline's state relative to the clock: its discrete part (a key) and its
        continuous part (times since or until events, bytes left) with their scales.

        With ``handles``, it also says where each continuous value lives, in order: a
        :class:`Handle` for a time or a flow's bytes left, None for a rate.
        """
        now = self.env.now
        key: list = []
        values: list[float] = []
        scales: list[float] = []
        paces: list[float] = []
        where: list = handles if handles is not None else []

        def time(value: float, handle: Handle) -> None:
            values.append(value)
            scales.append(TIME)
            paces.append(1.0)
            where.append(handle)

        for pipeline in self.pipelines:
            base = pipeline.next_compute
            key.append((pipeline.free_inputs, pipeline.loaded, pipeline.free_outputs,
                        pipeline.computed, pipeline.computing, pipeline.next_load - base,
                        base - pipeline.next_store, base - pipeline.stored,
                        pipeline.stored == len(pipeline.tiles)))
            if pipeline.computing:
                time(now - pipeline.compute_started, Handle(pipeline, ("compute_started",), -1))
            for transfer in sorted(pipeline.in_flight,
                                   key=lambda t: (t.thread, t.tile, t.started)):
                key.append((transfer.thread, transfer.tile - base, transfer.set_up,
                            _kind(transfer.engine) if transfer.engine is not None else None))
                moved = ("started", "granted") if transfer.engine is not None else ("started",)
                time(now - transfer.started, Handle(transfer, moved, -1))
            for move in pipeline.moves:
                key.append((move.direction, move.waiting, move.behind))
                time(now - move.started, Handle(move, ("started",), -1))
        # pending events by what they will do; a stale flow timer does nothing
        pending = sorted((self.describe(_action(entry[3])), entry[0] - now, entry[2])
                         for entry in self.env._queue if not _stale(entry[3]))
        key.append(tuple(what for what, _, _ in pending))
        for _, at, eid in pending:
            time(at, Handle(None, (eid,), 1))
        if self.network is not None:
            for flow in sorted(self.network.flows, key=lambda f: (f.route, f.remaining)):
                key.append(flow.route)
                values += (flow.remaining, flow.rate)
                scales += (max(flow.nbytes, 1.0), max(flow.rate, 1e-300))
                paces += (flow.rate, 0.0)
                # bytes left drift with their flow's phase; a rate must repeat
                where += (Handle(flow, ("remaining",), 1), None)
        if self.bursts is not None:
            self.burst_state(now, key, values, scales, where)
            paces += [1.0] * (len(values) - len(paces))  # a burst train's instants
        for pool in self.pools():
            # who waits for an engine, in order, and which kinds of engine are busy with
            # what: engines alike are interchangeable, so a period may hand a core's
            # transfers to another of them than the period before
            engines = sorted(((_kind(e), repr(getattr(e, "carrying", None)), e.free_at - now, k)
                              for k, e in enumerate(pool.engines) if e.busy),
                             key=lambda entry: entry[:3])
            key.append((tuple(self.describe(waiter[-1]) for waiter in pool.waiting),
                        tuple((kind, carrying) for kind, carrying, _, _ in engines)))
            for _, _, free, k in engines:
                time(free, Handle(pool.engines[k], ("free_at",), 1))
        return State(tuple(key), np.array(values), np.array(scales), np.array(paces))

    def describe(self, what) -> tuple:
        """What a pending callback or a burst-level object stands for, in terms that
        repeat from period to period (tiles relative to their pipeline's next compute)."""
        if isinstance(what, _Burst):  # a burst crossing a link is its own event
            return ("_Burst.crossed", self.transfer(what.transfer), what.hop, what.nbytes)
        if isinstance(what, _BurstTransfer):  # a train waiting for its engine's pace
            return ("_BurstTransfer.issue", self.transfer(what))
        owner = getattr(what, "__self__", None)
        if owner is None:
            return (getattr(what, "__qualname__", type(what).__name__),)
        name = what.__func__.__qualname__
        if isinstance(owner, _BurstTransfer):  # a train about to end
            return (name, self.transfer(owner))
        if isinstance(owner, _TileTransfer):
            return (name, self.tile_transfer(owner))
        if id(owner) in self._index:
            return (name, self._index[id(owner)])
        return (name, type(owner).__name__)

    def tile_transfer(self, transfer: _TileTransfer) -> tuple:
        pipeline = transfer.pipeline
        return (self._index[id(pipeline)], transfer.thread, transfer.tile - pipeline.next_compute)

    def transfer(self, transfer: _BurstTransfer) -> tuple:
        moved = getattr(transfer.then, "__self__", None)
        if isinstance(moved, _TileTransfer):
            return self.tile_transfer(moved)
        return (id(transfer),)  # not a tile's: never equal from one period to the next

    def burst_transfers(self) -> list[_BurstTransfer]:
        """Every burst train in progress: its bursts are queued at a link, crossing one
        (a pending event), or it waits to issue or to end (a pending event)."""
        found: dict[int, Any] = {}  # burst trains by identity
        for arbiter in self.arbiters():
            for transfer in arbiter.queues:
                found[id(transfer)] = transfer
        for entry in self.env._queue:
            owner: Any = getattr(_action(entry[3]), "__self__", entry[3])
            if isinstance(owner, _Burst):
                owner = owner.transfer
            if isinstance(owner, _BurstTransfer):
                found[id(owner)] = owner
        return list(found.values())

    def arbiters(self) -> list[LinkArbiter]:
        bursts = self.bursts
        if bursts is None:
            return []
        return list(bursts.arbiters.values()) + list(bursts.ports.values())

    def burst_state(self, now: float, key: list, values: list, scales: list,
                    where: list) -> None:
        """The burst datapath's part of the state: each link's grant order and queues,
        each burst train's progress and pacing (not when a link's busy period began,
        which only the DDR counter reads)."""
        for arbiter in self.arbiters():
            key.append((arbiter.busy, tuple(
                (self.transfer(t), tuple((b.hop, b.nbytes) for b in arbiter.queues[t]))
                for t in arbiter.waiting)))
        trains = sorted(((self.transfer(t), t) for t in self.burst_transfers()),
                        key=lambda pair: pair[0])
        for described, train in trains:
            key.append((described, train.left, train.to_issue, train.in_flight, train.pacing))
            values += (train.next_issue - now, train.earliest_end - now)
            scales += (TIME, TIME)
            where += (Handle(train, ("next_issue",), 1), Handle(train, ("earliest_end",), 1))

    def pools(self) -> list:
        seen: dict[int, object] = {}
        for pool in self.timeline.pools.values():
            seen.setdefault(id(pool), pool)
        return list(seen.values())

    def links(self) -> list:
        return list(self.timeline.links.values()) + list(self.timeline.l2_ports.values())
