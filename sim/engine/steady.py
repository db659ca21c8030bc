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
are those of the event-by-event simulation up to floating-point rounding. Some states
never repeat that closely: cores sharing a link settle into an orbit whose phases jitter
by a fraction of a tile from period to period, or slide slowly against each other, or
approach their steady state only geometrically. Such a state still returns, after a
stretch of one or more periods, to within :data:`ORBIT_BAND` of that stretch's length
(every phase, and every flow's bytes left at its rate); the stretch is then repeated as
the period. What that leaves out is a phase offset within the band, so the cycles skipped
are off by about that fraction of them (at most 0.087% of a call's cycles over the
fidelity grid and seven random seeds of it). The repeated stretches then join with a jump
of phase within the band, which the slices absorb (see
:meth:`~dspsim.sim.engine.slices.SliceLog.repeat`): a trace's busy cycles may differ from
the call's by about the band.

Only the fast fidelity uses it (fluid, staggered or burst-timed transfers), and only while
the call is alone on its timeline (another call's events would be moved with it). What a
snapshot reads is :mod:`dspsim.sim.engine.steady_state`'s.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from dspsim.sim.engine.detailed import BurstDMA
from dspsim.sim.engine.steady_periods import (
    drift_periods,
    repeat_busy_periods,
    repeat_ddr_samples,
)
from dspsim.sim.engine.steady_state import State, TimelineState

#: Continuous parts of two snapshots (times relative to the clock, bytes) that differ by
#: less than this fraction of the period between them are equal.
TOLERANCE = 1e-9
#: Snapshots compared exactly per discrete state: a period may span several tiles of the
#: first core.
HISTORY = 8
#: A state that repeats but for phases within this fraction of the stretch between the two
#: snapshots (an orbit, or a state approaching its steady state slowly) repeats that
#: stretch: the cycles skipped are off by at most this fraction of them.
ORBIT_BAND = 1e-3
#: Snapshots kept per discrete state for that comparison: the stretch may span this many.
ORBIT_HISTORY = 48
#: A state may repeat but for phases that slide by at most this fraction of the period
#: per period (cores whose own periods differ slightly, sharing nothing that binds)...
DRIFT_LIMIT = 1e-3
#: ... and is then advanced by periods over which no two pending instants that slide
#: against each other change order, nor slide apart by more than this fraction of it.
DRIFT_SPAN = 1e-2
#: Snapshots in a row that find no period before they are taken half as often (a state
#: that has not come back in that many tiles, such as FT78NE's pool serving eight cores
#: whose transfers interleave differently every tile, rarely does later; reading it
#: every tile would cost a tenth of the call) ...
FRUITLESS_SNAPSHOTS = 32
#: ... down to one every this many tiles of the first pipeline. A period of P tiles is
#: still seen: two snapshots a multiple of both P and the stride apart have the same key.
MAX_STRIDE = 8
#: Tiles left at the end of every pipeline for the drain, which is simulated.
DRAIN_TILES = 1


@dataclass
class _Snapshot:
    """The state of the timeline at one instant, and the call's totals up to it."""

    now: float
    continuous: np.ndarray
    scale: np.ndarray  # NaN for a time (compared to the period), else the value's scale
    pace: np.ndarray  # how fast each value moves with its phase (1 for a time)
    computed: list[int]  # each pipeline's next tile to compute
    busy: list[dict[str, float]]
    bytes_read: dict[str, float]
    bytes_written: dict[str, float]
    link_bytes: list[float]
    activities: int


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
        self.reader = TimelineState(model, pipelines, dma)
        self.network = self.reader.network
        self.bursts = dma if isinstance(dma, BurstDMA) else None
        self.alone = alone  # () -> whether the call is alone on its timeline
        self.env = model.env
        self.timeline = model.timeline
        self.history: dict[tuple, list[_Snapshot]] = {}
        # snapshots are taken every ``stride`` tiles of the first pipeline; the stride
        # doubles after each FRUITLESS_SNAPSHOTS snapshots in a row that found no period
        self.stride = 1
        self.fruitless = 0

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
        if pipeline.next_compute % self.stride:
            return
        state = self.reader.state()
        snapshot = self._snapshot(state)
        earlier = self.history.setdefault(state.key, [])
        if self._repeats(snapshot, earlier[-HISTORY:]) or self._orbits(snapshot, earlier):
            self.history.clear()
            self.fruitless = 0
            return
        earlier.append(snapshot)
        del earlier[:-ORBIT_HISTORY]
        self.fruitless += 1
        if self.fruitless == FRUITLESS_SNAPSHOTS and self.stride < MAX_STRIDE:
            self.stride *= 2
            self.fruitless = 0

    def _repeats(self, snapshot: _Snapshot, earlier: list[_Snapshot]) -> bool:
        """Skip periods if ``snapshot`` repeats one of ``earlier`` (same key), exactly or
        with a steady drift of phase; whether it did."""
        continuous, scale = snapshot.continuous, snapshot.scale
        for index in range(len(earlier) - 1, -1, -1):
            previous = earlier[index]
            period = snapshot.now - previous.now
            if period <= 0:
                continue
            scaled = TOLERANCE * np.where(np.isnan(scale), period, scale)
            change = continuous - previous.continuous
            if np.all(np.abs(change) <= scaled):
                return self._advance(previous, snapshot)
            sliding = self._drift(earlier[:index], previous, snapshot, change, scaled)
            if sliding is not None:
                return self._advance(previous, snapshot, *sliding)
        return False

    def _orbits(self, snapshot: _Snapshot, earlier: list[_Snapshot]) -> bool:
        """Skip stretches if ``snapshot`` is within :data:`ORBIT_BAND` of one of ``earlier``
        (same key), the nearest such in time; whether it did."""
        earlier = [e for e in earlier if e.continuous.shape == snapshot.continuous.shape]
        if not earlier:
            return False
        spans = snapshot.now - np.array([e.now for e in earlier])
        change = np.abs(snapshot.continuous - np.array([e.continuous for e in earlier]))
        # a phase offset of one cycle moves a time by one, a flow's bytes left by its rate;
        # a rate does not move with phase and must match to the band itself
        pace, scale = snapshot.pace, snapshot.scale
        allowed = ORBIT_BAND * np.where(pace > 0, spans[:, None] * pace,
                                        np.nan_to_num(scale, nan=0.0))
        close = np.flatnonzero((spans > 0) & np.all(change <= allowed, axis=1))
        return any(self._advance(earlier[index], snapshot, closed=False)
                   for index in close[::-1])

    def _drift(self, before: list[_Snapshot], previous: _Snapshot, current: _Snapshot,
               change: np.ndarray, scaled: np.ndarray) -> tuple[np.ndarray, _Snapshot] | None:
        """The change per period of a state that repeats but for a steady slide of some
        pipelines' phases against the others' (the same change over the period before, no
        rate changing, each pipeline as many tiles further), and the snapshot a period
        before ``previous``; None if it is not that."""
        period = current.now - previous.now
        scale = current.scale
        times = np.isnan(scale)
        if (np.any(np.abs(change[times]) > DRIFT_LIMIT * period)
                or np.any(np.abs(change[~times]) > DRIFT_LIMIT * scale[~times])):
            return None
        advances = [a - b for a, b in zip(current.computed, previous.computed, strict=True)]
        for older in reversed(before):
            if abs(previous.now - older.now - period) > TOLERANCE * period:
                continue
            if ([a - b for a, b in zip(previous.computed, older.computed, strict=True)]
                    == advances
                    and np.all(np.abs(change - (previous.continuous - older.continuous))
                               <= scaled)):
                return change, older
        return None

    def _snapshot(self, state: State) -> _Snapshot:
        model = self.model
        log = model.log
        return _Snapshot(
            now=float(self.env.now), continuous=state.values, scale=state.scales,
            pace=state.paces,
            computed=[p.next_compute for p in self.pipelines],
            busy=[dict(p.group.busy) for p in self.pipelines],
            bytes_read=dict(model.bytes_read), bytes_written=dict(model.bytes_written),
            link_bytes=[link.bytes_moved for link in self.reader.links()],
            activities=len(log.activities) if log is not None else 0)

    # ------------------------------------------------------------------ the skip
    def _periods_ahead(self, previous: _Snapshot, current: _Snapshot) -> tuple[int, list[int]]:
        """How many whole periods can be skipped, and each pipeline's tiles per period."""
        advances = [now - then
                    for now, then in zip(current.computed, previous.computed, strict=True)]
        periods = None
        for pipeline, advance, run_ends, then in zip(self.pipelines, advances, self._run_ends,
                                                    previous.computed, strict=True):
            if pipeline.stored == len(pipeline.tiles):
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

    def _advance(self, previous: _Snapshot, current: _Snapshot,
                 drift: np.ndarray | None = None, older: _Snapshot | None = None,
                 closed: bool = True) -> bool:
        """Skip as many whole periods as fit; False if none does. With ``drift`` (the
        state's change per period) and ``older`` (the snapshot a period before
        ``previous``), the sliding parts slide on as they did, and so do the slices; a
        period that is not ``closed`` (an orbit's) joins the next with a small jump."""
        periods, advances = self._periods_ahead(previous, current)
        period = current.now - previous.now
        handles: list = []
        if drift is not None:
            self.reader.state(handles)  # the same order as ``current``'s values
            periods = min(periods, drift_periods(current.continuous, drift, handles, period,
                                                  DRIFT_SPAN))
        if periods < 1:
            return False
        shift = periods * period
        env, model = self.env, self.model
        # the clock and every pending instant (a uniform shift keeps the heap a heap)
        env._queue[:] = [(at + shift, priority, eid, event)
                         for at, priority, eid, event in env._queue]
        env._now += shift
        if self.network is not None:
            self.network._last_update += shift
        if self.bursts is not None:
            for train in self.reader.burst_transfers():
                train.next_issue += shift
                train.earliest_end += shift
            for arbiter in self.reader.arbiters():
                # a link busy all through the repeated period stays busy through the
                # skipped ones: its busy period began when it began
                if arbiter.busy and arbiter.busy_since >= previous.now:
                    arbiter.busy_since += shift
            repeat_busy_periods(self.bursts.ddr_busy, previous.now, current.now, periods)
        for pool in self.reader.pools():
            for engine in pool.engines:
                engine.free_at += shift
        for pipeline, advance in zip(self.pipelines, advances, strict=True):
            tiles = periods * advance
            pipeline.next_load += tiles
            pipeline.next_compute += tiles
            pipeline.next_store += tiles
            pipeline.stored += tiles
            pipeline.compute_started += shift
            for transfer in pipeline.in_flight:
                transfer.started += shift
                if transfer.engine is not None:  # its data has moved since the grant
                    transfer.granted += shift
                transfer.tile += tiles
            for move in pipeline.moves:
                move.started += shift
        if drift is not None:
            self._slide(periods * drift, handles)
        # what the skipped periods did, from the period they repeat
        for pipeline, before, after in zip(self.pipelines, previous.busy, current.busy,
                                           strict=True):
            for engine, busy in after.items():
                pipeline.group.busy[engine] += periods * (busy - before[engine])
        for ledger, before, after in ((model.bytes_read, previous.bytes_read,
                                       current.bytes_read),
                                      (model.bytes_written, previous.bytes_written,
                                       current.bytes_written)):
            for region in ledger:
                ledger[region] += periods * (after[region] - before[region])
        for link, moved_then, moved_now in zip(self.reader.links(), previous.link_bytes,
                                               current.link_bytes, strict=True):
            link.bytes_moved += periods * (moved_now - moved_then)
        repeat_ddr_samples(self.timeline, previous.now, current.now, periods)
        if model.log is not None:
            self._repeat_activities(previous.activities, current.activities, period, periods,
                                    advances, older.activities if older is not None else None,
                                    closed)
        self.skipped_periods += periods
        self.skipped_cycles += shift
        return True

    def _slide(self, change: np.ndarray, handles: list) -> None:
        """Move each sliding part of the state by its share of ``change``."""
        events: dict[int, float] = {}
        for handle, delta in zip(handles, change, strict=True):
            if handle is None or not delta:
                continue
            moved = handle.sign * float(delta)
            if handle.owner is None:
                events[handle.names[0]] = moved
                continue
            for name in handle.names:
                setattr(handle.owner, name, getattr(handle.owner, name) + moved)
        if events:
            queue = self.env._queue
            queue[:] = [(at + events.get(eid, 0.0), priority, eid, event)
                        for at, priority, eid, event in queue]
            heapq.heapify(queue)

    def _repeat_activities(self, first: int, last: int, period: float, periods: int,
                           advances: list[int], before: int | None, closed: bool) -> None:
        """Record the slices of the skipped periods: those of the repeated one, each
        ``period`` later and its pipeline's tiles per period further (and, for a sliding
        state, each slid on as it slid since ``before``)."""
        self.model.log.repeat(first, last, period, periods,
                              {id(p.group): a for p, a in zip(self.pipelines, advances,
                                                              strict=True)}, before,
                              closed)
