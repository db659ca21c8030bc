"""The periodic steady state of a call's tile pipelines, advanced in closed form.

After a few tiles a double-buffered pipeline repeats itself: every core loads, computes
and stores one tile per period, the transfers in flight are at the same points of their
tiles, the DMA engines and links are in the same state, only the tile numbers and the
clock have moved on. The simulation is deterministic, so once the whole state of the
timeline (every pipeline, every transfer in flight, every flow, every engine, every
pending event, all relative to the clock) equals what it was some tiles earlier, it will
repeat that stretch for as long as the tiles ahead are of the same sizes. :class:`SteadyState`
watches for that (a snapshot each time the first pipeline finishes computing a tile),
then advances the timeline by as many whole periods as the tile sizes allow: the clock
and every pending instant move by the periods' length, every pipeline's tile numbers by
its tiles per period, and what the skipped periods would have recorded (engine busy time,
bytes per region and link, the DDR counter, the slices of every tile) is generated from
the period it repeats. The fill before and the drain after are simulated as usual.

Continuous quantities match to :data:`TOLERANCE` (relative to the period), so the cycles
are those of the event-by-event simulation up to floating-point rounding. Only the fast
fidelity's fluid flows use it, and only while the call is alone on its timeline (another
call's events would be moved with it).
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from operator import itemgetter

import numpy as np

from dspsim.sim.engine.detailed import BurstDMA, LinkArbiter, _Burst, _BurstTransfer
from dspsim.sim.engine.network import FlowTimer
from dspsim.sim.engine.pipeline import _TileTransfer

#: Continuous parts of two snapshots (times relative to the clock, bytes) that differ by
#: less than this fraction of the period between them are equal.
TOLERANCE = 1e-9
#: Snapshots kept per discrete state: a period may span several tiles of the first core.
HISTORY = 8
#: The scale of a time: compared to the period between the two snapshots.
_TIME = float("nan")
#: Tiles left at the end of every pipeline for the drain, which is simulated.
DRAIN_TILES = 1


@dataclass
class _Snapshot:
    """The state of the timeline at one instant, and the call's totals up to it."""

    now: float
    continuous: np.ndarray
    scale: np.ndarray  # NaN for a time (compared to the period), else the value's scale
    computed: list[int]  # each pipeline's next tile to compute
    busy: list[dict[str, float]]
    bytes_read: dict[str, float]
    bytes_written: dict[str, float]
    link_bytes: list[float]
    activities: int


def _kind(engine) -> tuple:
    """What makes DMA engines interchangeable: their rate and the regions they reach."""
    return (engine.rate, tuple(sorted(engine.regions)))


def _stale(event) -> bool:
    """Whether a pending event is a flow timer that rates have changed since."""
    callbacks = event.callbacks
    return bool(callbacks) and isinstance(callbacks[0], FlowTimer) and callbacks[0].stale


class SteadyState:
    """Watches a call's pipelines and skips whole periods of their steady state.

    ``model`` is the call (its timeline, ledgers and slice log), ``pipelines`` the
    pipelines of its core groups; :meth:`tile_computed` is called by every pipeline when
    it has finished computing a tile, and acts on the first pipeline's.
    """

    def __init__(self, model, pipelines: list, dma, alone) -> None:
        self.model = model
        self.pipelines = pipelines
        self.dma = dma  # the call's DMA model: fluid flows or bursts
        self.network = getattr(dma, "network", None)
        self.bursts = dma if isinstance(dma, BurstDMA) else None
        self._index = {id(p): k for k, p in enumerate(pipelines)}
        self.alone = alone  # () -> whether the call is alone on its timeline
        self.env = model.env
        self.timeline = model.timeline
        self.history: dict[tuple, list[_Snapshot]] = {}

        self.skipped_periods = 0
        self.skipped_cycles = 0.0
        # where each pipeline's tile size changes: the periods skipped stay within one run
        self._run_ends = []
        for pipeline in pipelines:
            sizes = np.array([stop - first for first, stop in pipeline.tiles])
            changes = np.flatnonzero(np.diff(sizes)) + 1
            self._run_ends.append(np.append(changes, len(sizes)))

    # ------------------------------------------------------------------ observation
    def tile_computed(self, pipeline) -> None:
        """A pipeline finished computing a tile: on the first one, look for a period."""
        if pipeline is not self.pipelines[0] or not self.alone():
            return
        if pipeline.next_load + DRAIN_TILES >= len(pipeline.tiles):
            return  # too close to its end for a period to be worth skipping
        key, continuous, scale = self._state()
        snapshot = self._snapshot(continuous, scale)
        earlier = self.history.setdefault(key, [])
        for previous in reversed(earlier):
            period = snapshot.now - previous.now
            if period > 0 and np.all(np.abs(continuous - previous.continuous) <= TOLERANCE
                                     * np.where(np.isnan(scale), period, scale)):
                if self._advance(previous, snapshot):
                    self.history.clear()
                    return
                break
        earlier.append(snapshot)
        del earlier[:-HISTORY]

    def _state(self) -> tuple[tuple, np.ndarray, np.ndarray]:
        """The timeline's state relative to the clock: its discrete part (a key) and its
        continuous part (times since or until events, bytes left) with their scales."""
        now = self.env.now
        key: list = []
        values: list[float] = []
        scales: list[float] = []
        for pipeline in self.pipelines:
            base = pipeline.next_compute
            key.append((pipeline.free_inputs, pipeline.loaded, pipeline.free_outputs,
                        pipeline.computed, pipeline.loading, pipeline.computing,
                        pipeline.storing, pipeline.next_load - base, base - pipeline.next_store,
                        pipeline.next_store == len(pipeline.tiles)))
            if pipeline.computing:
                values.append(now - pipeline.compute_started)
                scales.append(_TIME)
            for transfer in sorted(pipeline.in_flight,
                                   key=lambda t: (t.thread, t.tile, t.started)):
                key.append((transfer.thread, transfer.tile - base,
                            _kind(transfer.engine) if transfer.engine is not None else None))
                values.append(now - transfer.started)
                scales.append(_TIME)
            for move in pipeline.moves:
                key.append((move.direction, move.waiting))
                values.append(now - move.started)
                scales.append(_TIME)
        # pending events by what they will do; a stale flow timer does nothing
        pending = sorted((self._describe(entry[3].callbacks[0]), entry[0] - now)
                         for entry in self.env._queue if not _stale(entry[3]))
        key.append(tuple(what for what, _ in pending))
        values.extend(at for _, at in pending)
        scales.extend([_TIME] * len(pending))
        if self.network is not None:
            for flow in sorted(self.network.flows, key=lambda f: (f.route, f.remaining)):
                key.append(flow.route)
                values += (flow.remaining, flow.rate)
                scales += (max(flow.nbytes, 1.0), max(flow.rate, 1e-300))
        if self.bursts is not None:
            self._burst_state(now, key, values, scales)
        for pool in self._pools():
            # who waits for an engine, in order, and which kinds of engine are busy with
            # what: engines alike are interchangeable, so a period may hand a core's
            # transfers to another of them than the period before
            engines = sorted((_kind(e), repr(getattr(e, "carrying", None)), e.free_at - now)
                              for e in pool.engines if e.busy)
            key.append((tuple(self._describe(waiter[-1]) for waiter in pool.waiting),
                        tuple((kind, carrying) for kind, carrying, _ in engines)))
            values.extend(free for _, _, free in engines)
            scales.extend([_TIME] * len(engines))
        return tuple(key), np.array(values), np.array(scales)

    def _describe(self, what) -> tuple:
        """What a pending callback or a burst-level object stands for, in terms that
        repeat from period to period (tiles relative to their pipeline's next compute)."""
        owner = getattr(what, "__self__", None)
        if owner is None:
            return (getattr(what, "__qualname__", type(what).__name__),)
        name = what.__func__.__qualname__
        if isinstance(owner, _Burst):
            return (name, self._transfer(owner.transfer), owner.hop, owner.nbytes)
        if isinstance(owner, _BurstTransfer):
            return (name, self._transfer(owner))
        if isinstance(owner, _TileTransfer):
            return (name, self._tile_transfer(owner))
        if id(owner) in self._index:
            return (name, self._index[id(owner)])
        return (name, type(owner).__name__)

    def _tile_transfer(self, transfer: _TileTransfer) -> tuple:
        pipeline = transfer.pipeline
        return (self._index[id(pipeline)], transfer.thread, transfer.tile - pipeline.next_compute)

    def _transfer(self, transfer: _BurstTransfer) -> tuple:
        moved = getattr(transfer.then, "__self__", None)
        if isinstance(moved, _TileTransfer):
            return self._tile_transfer(moved)
        return (id(transfer),)  # not a tile's: never equal from one period to the next

    def _burst_transfers(self) -> list[_BurstTransfer]:
        """Every burst train in progress: its bursts are queued at a link, crossing one
        (a pending event), or it waits to issue or to end (a pending event)."""
        found: dict[int, _BurstTransfer] = {}
        for arbiter in self._arbiters():
            for transfer in arbiter.queues:
                found[id(transfer)] = transfer
        for entry in self.env._queue:
            owner = getattr(entry[3].callbacks[0], "__self__", None)
            if isinstance(owner, _Burst):
                owner = owner.transfer
            if isinstance(owner, _BurstTransfer):
                found[id(owner)] = owner
        return list(found.values())

    def _arbiters(self) -> list[LinkArbiter]:
        bursts = self.bursts
        return list(bursts.arbiters.values()) + list(bursts.ports.values())

    def _burst_state(self, now: float, key: list, values: list, scales: list) -> None:
        """The burst datapath's part of the state: each link's grant order and queues,
        each burst train's progress and pacing (not when a link's busy period began,
        which only the DDR counter reads)."""
        for arbiter in self._arbiters():
            key.append((arbiter.busy, tuple(
                (self._transfer(t), tuple((b.hop, b.nbytes) for b in arbiter.queues[t]))
                for t in arbiter.waiting)))
        trains = sorted(((self._transfer(t), t) for t in self._burst_transfers()),
                        key=lambda pair: pair[0])
        for described, train in trains:
            key.append((described, train.left, train.to_issue, train.in_flight, train.pacing))
            values += (train.next_issue - now, train.earliest_end - now)
            scales += (_TIME, _TIME)

    def _pools(self) -> list:
        seen: dict[int, object] = {}
        for pool in self.timeline.pools.values():
            seen.setdefault(id(pool), pool)
        return list(seen.values())

    def _links(self) -> list:
        return list(self.timeline.links.values()) + list(self.timeline.l2_ports.values())

    def _snapshot(self, continuous: np.ndarray, scale: np.ndarray) -> _Snapshot:
        model = self.model
        log = model.log
        return _Snapshot(
            now=float(self.env.now), continuous=continuous, scale=scale,
            computed=[p.next_compute for p in self.pipelines],
            busy=[dict(p.group.busy) for p in self.pipelines],
            bytes_read=dict(model.bytes_read), bytes_written=dict(model.bytes_written),
            link_bytes=[link.bytes_moved for link in self._links()],
            activities=len(log.activities) if log is not None else 0)

    # ------------------------------------------------------------------ the skip
    def _periods_ahead(self, previous: _Snapshot, current: _Snapshot) -> tuple[int, list[int]]:
        """How many whole periods can be skipped, and each pipeline's tiles per period."""
        advances = [now - then for now, then in zip(current.computed, previous.computed)]
        periods = None
        for pipeline, advance, run_ends, then in zip(self.pipelines, advances, self._run_ends,
                                                    previous.computed):
            if pipeline.next_store == len(pipeline.tiles):
                if advance:
                    return 0, advances
                continue  # finished before the period began: it takes no part
            if advance <= 0:
                return 0, advances
            # the oldest tile the period touched, and the run of equal tiles it lies in
            oldest = max(0, then - 2)
            run_end = int(run_ends[np.searchsorted(run_ends, oldest, side="right")])
            newest = pipeline.next_load + 1  # the newest tile in flight or about to be
            room = min(run_end, len(pipeline.tiles) - DRAIN_TILES) - newest
            fits = room // advance
            periods = fits if periods is None else min(periods, fits)
        return max(0, periods or 0), advances

    def _advance(self, previous: _Snapshot, current: _Snapshot) -> bool:
        """Skip as many whole periods as fit; False if none does."""
        periods, advances = self._periods_ahead(previous, current)
        if periods < 1:
            return False
        period = current.now - previous.now
        shift = periods * period
        env, model = self.env, self.model
        # the clock and every pending instant (a uniform shift keeps the heap a heap)
        env._queue[:] = [(at + shift, priority, eid, event)
                         for at, priority, eid, event in env._queue]
        env._now += shift
        if self.network is not None:
            self.network._last_update += shift
        if self.bursts is not None:
            for train in self._burst_transfers():
                train.next_issue += shift
                train.earliest_end += shift
            for arbiter in self._arbiters():
                # a link busy all through the repeated period stays busy through the
                # skipped ones: its busy period began when it began
                if arbiter.busy and arbiter.busy_since >= previous.now:
                    arbiter.busy_since += shift
            self._repeat_busy_periods(previous.now, current.now, periods)
        for pool in self._pools():
            for engine in pool.engines:
                engine.free_at += shift
        for pipeline, advance in zip(self.pipelines, advances):
            tiles = periods * advance
            pipeline.next_load += tiles
            pipeline.next_compute += tiles
            pipeline.next_store += tiles
            pipeline.compute_started += shift
            for transfer in pipeline.in_flight:
                transfer.started += shift
                if transfer.engine is not None:  # its data has moved since the grant
                    transfer.granted += shift
                transfer.tile += tiles
            for move in pipeline.moves:
                move.started += shift
        # what the skipped periods did, from the period they repeat
        for pipeline, before, after in zip(self.pipelines, previous.busy, current.busy):
            for engine, busy in after.items():
                pipeline.group.busy[engine] += periods * (busy - before[engine])
        for ledger, before, after in ((model.bytes_read, previous.bytes_read,
                                       current.bytes_read),
                                      (model.bytes_written, previous.bytes_written,
                                       current.bytes_written)):
            for region in ledger:
                ledger[region] += periods * (after[region] - before[region])
        for link, before, after in zip(self._links(), previous.link_bytes, current.link_bytes):
            link.bytes_moved += periods * (after - before)
        self._repeat_ddr_samples(previous.now, current.now, periods)
        if model.log is not None:
            self._repeat_activities(previous.activities, current.activities, period, periods,
                                    advances)
        self.skipped_periods += periods
        self.skipped_cycles += shift
        return True

    def _repeat_ddr_samples(self, start: float, end: float, periods: int) -> None:
        """Repeat the DDR counter's steps over [start, end) ``periods`` times from ``end``."""
        samples = self.timeline.ddr_samples
        first = bisect_left(samples, start, key=itemgetter(0))
        last = bisect_left(samples, end, lo=first, key=itemgetter(0))
        period = end - start
        steps = samples[first:last]
        if first == len(samples) or samples[first][0] > start:
            if first:  # the value in force at ``start`` began earlier
                steps.insert(0, (start, samples[first - 1][1]))
        later = samples[last:]  # recorded at ``end`` itself: after the skipped periods
        del samples[last:]
        shift = periods * period
        if steps:
            # one period's steps are distinct in turn; between periods the last may equal
            # the first, which then continues it
            joined = steps[1:] if steps[0][1] == steps[-1][1] else steps
            repeated = [(at + period, rate) for at, rate in steps]
            if samples and samples[-1][1] == repeated[0][1]:
                del repeated[0]
            samples.extend(repeated)
            samples.extend([(at + repeat * period, rate) for repeat in range(2, periods + 1)
                            for at, rate in joined])
        for at, rate in later:
            self.timeline.sample_ddr(at + shift, rate)

    def _repeat_busy_periods(self, start: float, end: float, periods: int) -> None:
        """Repeat the DDR link's busy periods that ended within (start, end]."""
        busy = self.bursts.ddr_busy
        stretch = busy[bisect_right(busy, start, key=itemgetter(1)):]
        period = end - start
        busy.extend([(since + repeat * period, until + repeat * period)
                     for repeat in range(1, periods + 1) for since, until in stretch])

    def _repeat_activities(self, first: int, last: int, period: float, periods: int,
                           advances: list[int]) -> None:
        """Record the slices of the skipped periods: those of the repeated one, each
        ``period`` later and its pipeline's tiles per period further."""
        self.model.log.repeat(first, last, period, periods,
                              {id(p.group): a for p, a in zip(self.pipelines, advances)})
