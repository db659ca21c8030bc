"""The slices a call records: one small tuple per activity, expanded on demand.

A :class:`SliceLog` keeps what the simulated core groups did (and the stretches a
closed-form steady state repeated); :meth:`SliceLog.slices` builds every core's
:class:`Slice` when a trace is asked for.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from dspsim.sim.engine.cores import CALL_TRACK, COMPUTE, CoreGroup
from dspsim.sim.engine.job import Job, Operand
from dspsim.sim.engine.vector import VectorCost


@dataclass(frozen=True)
class Slice:
    """One activity of one engine: a tile transfer or a tile's vector work."""

    core: int  # CALL_TRACK for call-level slices
    engine: str
    name: str
    start: float
    end: float
    args: dict


class Activity(NamedTuple):
    """One recorded activity of a simulated core group (or of the call as a whole)."""

    group: CoreGroup | None  # None: a call-level activity (launch, barrier)
    engine: str
    operand: Operand | None  # the operand a transfer moved; None for vector work
    tile: int | None  # None for private-storage vector work and call-level activities
    start: float
    end: float
    name: str = ""  # call-level activities: their name; transfers: the engine that moved it
    cycles: float = 0.0  # call-level activities only: their configured cycles
    granted: float = 0.0  # transfers: when the engine took it (setup and wait end there)


class SliceLog:
    """The slices of the simulated cores, expanded to every member core on demand.

    Recording stores one small tuple per activity; names, addresses and per-core copies
    are built only when a trace is asked for.
    """

    def __init__(self, job: Job, setup_cycles: float, cost: VectorCost,
                 engine_on: Callable[[str, int, int], str] = lambda name, core, other: name
                 ) -> None:
        self.job = job
        self.setup_cycles = setup_cycles
        self.cost = cost
        #: engine_on(name, core, other): the engine of ``other``'s pool that stands where
        #: ``name`` stands in ``core``'s (a mirrored core's transfers name its own engines)
        self.engine_on = engine_on
        self.activities: list[Activity] = []
        # stretches of activities repeated by a closed-form steady state:
        # (position in activities, first, last, period, repeats, tiles per period by group,
        # each activity's slide per period or None, whether the stretch is closed)
        self._repeats: list[tuple[int, int, int, float, int, dict[int, int],
                                  list[tuple[float, float, float]] | None, bool]] = []
        self._expanded: dict[float, list[Slice]] = {}

    def transfer(self, group: CoreGroup, engine: str, operand: Operand, tile: int,
                 start: float, end: float, served_by: str, granted: float) -> None:
        self.activities.append(Activity(group, engine, operand, tile, start, end, served_by,
                                        0.0, granted))

    def compute(self, group: CoreGroup, tile: int | None, start: float, end: float) -> None:
        self.activities.append(Activity(group, COMPUTE, None, tile, start, end))

    def call(self, name: str, start: float, end: float, cycles: float) -> None:
        self.activities.append(Activity(None, "call", None, None, start, end, name, cycles))

    def repeat(self, first: int, last: int, period: float, repeats: int,
               advances: dict[int, int], before: int | None = None,
               closed: bool = True) -> None:
        """The activities recorded ``first`` to ``last`` happen again ``repeats`` times, each
        ``period`` cycles later and ``advances[id(group)]`` tiles further than the one before.

        With ``before`` (a state that repeats but for a steady slide of phases), the
        activities ``before`` to ``first`` are the same ones a period earlier: each activity
        then slides on, period after period, by as much as it slid over the last one, as
        the state it came from does.

        A stretch that is not ``closed`` (an orbit: its state at the end is only close to
        its state at the start) joins the next one with a jump of phase as small as that
        difference: a repeated transfer or tile of work then starts no earlier than the
        one before it on its track ends, nor holds its engine before that engine's last
        transfer ends, as in a simulated stretch.

        Kept as one record, expanded when slices are asked for: a steady state advanced in
        closed form costs no Python work per skipped tile unless its trace is wanted.
        """
        slides = (self._slides(before, first, last, period, advances)
                  if before is not None else None)
        self._repeats.append((len(self.activities), first, last, period, repeats, advances,
                              slides, closed))

    def _slides(self, before: int, first: int, last: int, period: float,
                advances: dict[int, int]) -> list[tuple[float, float, float]]:
        """How far each activity ``first`` to ``last`` moved, besides ``period``, from its
        counterpart among ``before`` to ``first`` (the same group, engine, operand and tile
        less the group's advance): (start, end, granted); none for one without. A period
        holds only tile activities of core groups: the call's own are at its ends."""
        def key(activity: Activity, periods: int) -> tuple:
            tile = activity.tile
            if tile is not None and activity.group is not None:
                tile -= periods * advances[id(activity.group)]
            return (id(activity.group), activity.engine, activity.operand, tile)

        earlier = {key(a, 0): a for a in self.activities[before:first]}
        slides = []
        for activity in self.activities[first:last]:
            was = earlier.get(key(activity, 1))
            slides.append((0.0, 0.0, 0.0) if was is None else (
                activity.start - was.start - period, activity.end - was.end - period,
                activity.granted - was.granted - period))
        return slides

    def all_activities(self):
        """Every activity in recording order, the repeated stretches expanded."""
        activities, position = self.activities, 0
        # where tracks and engines last finished: needed only to join open stretches
        ends = _TrackEnds() if not all(entry[-1] for entry in self._repeats) else None
        for at, first, last, period, repeats, advances, slides, closed in self._repeats:
            if ends is None:
                yield from activities[position:at]
            else:
                for activity in activities[position:at]:
                    ends.saw(activity)
                    yield activity
            position = at
            recorded = activities[first:last]
            moves = slides or [(0.0, 0.0, 0.0)] * len(recorded)
            for repeat in range(1, repeats + 1):
                offset = repeat * period
                for activity, (start, end, granted) in zip(recorded, moves, strict=True):
                    tile = activity.tile
                    if tile is not None and activity.group is not None:
                        tile += repeat * advances[id(activity.group)]
                    again = activity._replace(tile=tile,
                                              start=activity.start + offset + repeat * start,
                                              end=activity.end + offset + repeat * end,
                                              granted=activity.granted + offset
                                              + repeat * granted)
                    if ends is not None:
                        if not closed:
                            again = ends.after(again)
                        ends.saw(again)
                    yield again
        yield from activities[position:]

    def slices(self, origin: float = 0.0) -> list[Slice]:
        """Every activity as a Slice of every core that did it, in recording order, with
        times counted from cycle ``origin`` of the timeline."""
        expanded = self._expanded.get(origin)
        if expanded is None:
            expanded = self._expanded[origin] = [
                s for activity in self.all_activities() for s in self._expand(activity, origin)]
        return expanded

    def _expand(self, activity: Activity, origin: float):
        group, engine, operand, tile, start, end = activity[:6]
        start, end = start - origin, end - origin
        if group is None:
            yield Slice(CALL_TRACK, engine, activity.name, start, end,
                        {"cycles": activity.cycles})
            return
        job, first_member = self.job, group.members[0]
        if tile is None:
            first, stop = first_member.start, first_member.stop
        else:
            first, stop = group.tiles[tile]
        for member in group.members:
            shift = member.start - first_member.start  # mirror images: same tiles, shifted
            lo, hi = first + shift, stop + shift
            if operand is not None:
                yield Slice(member.core, engine, f"{operand.name}[{tile}]", start, end, {
                    "tile": tile, "operand": operand.name, "bytes": (hi - lo) * job.itemsize,
                    "address": hex(operand.span.address + lo * job.itemsize),
                    "region": operand.span.region, "setup_cycles": self.setup_cycles,
                    # the engine is held, and the links carry its bytes, only this long
                    "data_cycles": end - (activity.granted - origin),
                    "dma_engine": activity.name if member is first_member else
                    self.engine_on(activity.name, first_member.core, member.core),
                    "elements": [lo, hi]})
            elif tile is None:  # private-storage vector work: the whole range
                yield Slice(member.core, COMPUTE, job.label, start, end, {
                    "elements": [lo, hi], "iterations": self.cost.iterations(hi - lo)})
            else:
                yield Slice(member.core, COMPUTE, f"{job.label}[{tile}]", start, end, {
                    "tile": tile, "elements": [lo, hi],
                    "iterations": self.cost.iterations(hi - lo)})


class _TrackEnds:
    """Where each track (a core group's engine) and each DMA engine last finished, for
    the joints of repeated stretches that are not closed."""

    def __init__(self) -> None:
        self.tracks: dict[tuple[int, str], float] = {}
        self.engines: dict[str, float] = {}

    def saw(self, activity: Activity) -> None:
        if activity.group is None:
            return
        track = (id(activity.group), activity.engine)
        self.tracks[track] = max(self.tracks.get(track, activity.end), activity.end)
        if activity.operand is not None:
            self.engines[activity.name] = max(self.engines.get(activity.name, activity.end),
                                              activity.end)

    def after(self, activity: Activity) -> Activity:
        """``activity`` starting no earlier than its track's last end, and holding its
        DMA engine no earlier than the engine's last transfer ends."""
        if activity.group is None:
            return activity
        start = max(activity.start,
                    self.tracks.get((id(activity.group), activity.engine), activity.start))
        granted = activity.granted
        if activity.operand is not None:
            granted = max(granted, start, self.engines.get(activity.name, granted))
        end = max(activity.end, granted, start)
        if (start, granted, end) == (activity.start, activity.granted, activity.end):
            return activity
        return activity._replace(start=start, granted=granted, end=end)
