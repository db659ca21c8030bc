"""One call on the simulated chip: planning, launching it on a timeline, its Timing.

A call is a job submitted to a :class:`~dspsim.sim.engine.model.Timeline`, the chip's shared
state (clock, links, DMA engines). :func:`run_job` runs one call alone on a fresh
timeline; a program (:mod:`dspsim.sim.program.scheduler`) submits many to one timeline, where they
share links and engines transfer by transfer. The work itself is the tile pipeline of
:mod:`dspsim.sim.engine.pipeline`, timed by a datapath:

* ``"fast"`` (:mod:`dspsim.sim.engine.datapath`): a transfer is a fluid flow whose rate is its
  max-min fair share of the links it crosses (:mod:`dspsim.sim.engine.network`); a tile's vector
  work is one closed-form delay. Cores that get the same number of elements then behave
  identically (same tiles, same transfers at the same instants, symmetric links), so one
  of them is simulated for all and its flows count once per core on the shared links: the
  event count follows the tiles of at most three distinct cores, whatever the core count.
  Fluid sharing is the limit of burst arbitration over many bursts; a call whose tile
  transfers are shorter than :data:`FLUID_MIN_BURSTS` bursts is far from that limit, so
  its DMA is simulated burst by burst, as in the detailed model, when that is cheap
  (:data:`BURST_BUDGET`).
* ``"detailed"`` (:mod:`dspsim.sim.engine.detailed`): every core is simulated, DMA moves bursts
  with round-robin arbitration on every link, and the vector core issues every iteration.
"""
from __future__ import annotations

import dataclasses
import math
import threading
from collections import OrderedDict
from typing import Generic, TypeVar

from dspsim.sim.chip.load import ChipConfig
from dspsim.sim.engine.call import (
    CallRun,
    Timing,
    check_fidelity,
    finish_timeline,
    fresh_cores,
)
from dspsim.sim.engine.cores import (
    CALL_TRACK,
    COMPUTE,
    ENGINES,
    FIDELITIES,
    LOAD,
    STORE,
    CoreTiming,
)
from dspsim.sim.engine.cutoff import CannotWin
from dspsim.sim.engine.datapath import (
    BURST_BUDGET,
    FLUID_MIN_BURSTS,
    TRANSFER_TIMINGS,
    TransferTiming,
    dma_timing,
    tried_burst_by_burst,
)
from dspsim.sim.engine.job import Job
from dspsim.sim.engine.model import CountingEnvironment, Timeline
from dspsim.sim.engine.roofline import roofline_terms
from dspsim.sim.engine.settle import SETTLE_TILES, Unsettled
from dspsim.sim.engine.slices import Slice
from dspsim.sim.engine.tiling import (
    Abandoned,
    TilingChoice,
    balanced_tiles,
    choose_tiling,
    fixed_tile,
    partition,
    tile_elements,
)
from dspsim.sim.engine.vector import VectorCost, call_cost

Remembered = TypeVar("Remembered")

__all__ = ["BURST_BUDGET", "CALL_TRACK", "COMPUTE", "ENGINES", "FIDELITIES", "FLUID_MIN_BURSTS",
           "LOAD", "STORE", "TRANSFER_TIMINGS", "CallRun", "CoreTiming", "CountingEnvironment",
           "Slice", "Timeline", "Timing", "alone_transfer_timing", "balanced_tiles",
           "check_fidelity", "dma_timing",
           "finish_timeline", "partition", "plan", "plan_tiling", "roofline_terms", "run_job",
           "tile_elements"]


def plan(config: ChipConfig, job: Job) -> VectorCost:
    """The checks a job must pass before it runs; returns its vector cost.

    Raises ConfigError (an instruction the chip lacks) or CapacityError (tiles that do
    not fit L2, or a fixed tile that cannot be used). It touches nothing, so a launcher
    can call it before writing results.
    """
    cost = call_cost(config, job.dtype, job.mix)
    if job.storage == "shared":
        fixed_tile(config, job, cost.lanes)
    return cost


def _simulate(config: ChipConfig, job: Job, cost: VectorCost, tile_size: int, *,
              record_slices: bool, fidelity: str, mirror_cores: bool,
              give_up_above: float = math.inf) -> Timing:
    """Run the call alone on a fresh timeline with ``tile_size``-element tiles (the whole
    range if private). Raises CannotWin once it is sure to take more than
    ``give_up_above`` cycles.

    A call that :func:`dma_timing` would time as staggered flows, with transfers of at
    most :data:`~dspsim.sim.engine.settle.LOCKSTEP_BURSTS` bursts, is first timed burst
    by burst, and as staggered flows only if its pipelines do not settle within
    :data:`~dspsim.sim.engine.settle.SETTLE_TILES` tiles (:mod:`dspsim.sim.engine.settle`);
    which of the two it took is remembered (:data:`SETTLED`)."""
    transfer_timing, trial = _planned_timing(config, job, cost, tile_size, fidelity)

    def run(timing: str, settle_within: int | None = None) -> Timing:
        timeline = Timeline(config)
        call = CallRun(timeline, config, job, cost, tile_size, record_slices=record_slices,
                       fidelity=fidelity, transfer_timing=timing, mirror_cores=mirror_cores,
                       give_up_above=give_up_above, settle_within=settle_within)
        finish_timeline(timeline)
        return call.timing()

    if trial is not None and SETTLED.get(trial) is not False:
        try:
            timing = run("bursts", SETTLE_TILES)
        except Unsettled:
            SETTLED.put(trial, False)
        else:
            SETTLED.put(trial, True)
            return timing
    return run(transfer_timing)


def _planned_timing(config: ChipConfig, job: Job, cost: VectorCost, tile_size: int,
                    fidelity: str) -> tuple[TransferTiming, tuple | None]:
    """:func:`dma_timing`'s choice for the call, and its :data:`SETTLED` key if the call
    alone is first tried burst by burst (None if not)."""
    cores = fresh_cores(job, cost.lanes)
    timing = dma_timing(config, job, cores, tile_size, fidelity)
    tried = tried_burst_by_burst(config, job, cores, tile_size, timing)
    return timing, (tiling_key(config, job), tile_size) if tried else None


def alone_transfer_timing(config: ChipConfig, job: Job, cost: VectorCost, tile_size: int,
                          fidelity: str) -> TransferTiming:
    """How the call's transfers are timed when it runs alone with ``tile_size``-element
    tiles: :func:`dma_timing`'s answer, but for a staggered call that settles burst by
    burst (see :func:`_simulate`), found by running it alone unless remembered."""
    timing, trial = _planned_timing(config, job, cost, tile_size, fidelity)
    if trial is None:
        return timing
    settled = SETTLED.get(trial)
    if settled is None:
        return _simulate(config, job, cost, tile_size, record_slices=False,
                         fidelity=fidelity, mirror_cores=True).transfer_timing
    return "bursts" if settled else "staggered"


def _candidate(config: ChipConfig, job: Job, cost: VectorCost, tile_size: int, limit: float,
               *, record_slices: bool, mirror_cores: bool) -> Timing | Abandoned:
    """A candidate of the tile search timed with the fast model: its Timing, or
    Abandoned (a lower bound on its cycles) once it was sure to take more than ``limit``."""
    try:
        return _simulate(config, job, cost, tile_size, record_slices=record_slices,
                         fidelity="fast", mirror_cores=mirror_cores, give_up_above=limit)
    except CannotWin as stopped:
        return Abandoned(stopped.cycles)


def plan_tiling(config: ChipConfig, job: Job, cost: VectorCost, *, record_slices: bool = False,
                mirror_cores: bool = True) -> tuple[TilingChoice | None, Timing | None]:
    """The tile size of a shared-storage call (None for a private or empty one), and the
    fast-model Timing of the call alone with it when the choice simulated it.

    Candidates are timed alone on fresh timelines with the fast model, so that both
    fidelities, and a call alone or in a program, run one tiling. The choice is
    remembered (:data:`TILINGS`): a call the process has planned before is not searched
    again (its Timing is then None: the caller simulates the chosen tile).
    """
    if job.storage == "private" or not job.length:
        return None, None
    key = tiling_key(config, job)
    known = TILINGS.get(key)
    if known is not None:
        return known, None
    parts = partition(job.length, job.cores, cost.lanes)
    choice, timing = choose_tiling(config, job, cost, parts, lambda tile, limit: _candidate(
        config, job, cost, tile, limit, record_slices=record_slices, mirror_cores=mirror_cores))
    TILINGS.put(key, choice)
    return choice, timing


def tiling_key(config: ChipConfig, job: Job) -> tuple:
    """What a call's tile choice depends on: the chip, the instruction mix, the dtype, the
    length, the cores, the storage and where each operand lives (not its address)."""
    return (config.model_digest, job.dtype, job.itemsize, tuple(sorted(job.mix.items())),
            job.length, job.cores, job.storage, job.tile_bytes,
            tuple(o.span.region for o in job.inputs), tuple(o.span.region for o in job.outputs))


class Memo(Generic[Remembered]):
    """What this process has found out per call, the least recently used forgotten first.

    Safe to share between threads (sweeps run calls in a thread pool): a lock guards the
    table; two threads planning one call at once both search, and agree.
    """

    def __init__(self, capacity: int = 4096) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[tuple, Remembered] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple) -> Remembered | None:
        """What is remembered for ``key``, or None."""
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def put(self, key: tuple, value: Remembered) -> None:
        """Remember ``value`` for ``key``."""
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        """Forget everything remembered."""
        with self._lock:
            self._entries.clear()


#: The process's remembered tile choices.
TILINGS: Memo[TilingChoice] = Memo()
#: Whether a staggered call, by (:func:`tiling_key`, tile size), settled burst by burst.
SETTLED: Memo[bool] = Memo()


def run_job(config: ChipConfig, job: Job, *, record_slices: bool = True,
            fidelity: str = "fast", mirror_cores: bool = True) -> Timing:
    """Simulate one call alone and return its timing.

    ``fidelity`` is ``"fast"`` (fluid DMA flows, or bursts for short transfers; closed-form
    vector loops) or ``"detailed"`` (DMA bursts with round-robin arbitration, every vector
    iteration issued; slower, for small lengths). A shared-storage call first chooses its
    tile size (:func:`~dspsim.sim.engine.tiling.choose_tiling`, timing candidates with the fast
    model, so that both fidelities run the same tiling). ``mirror_cores=False`` makes the
    fast model simulate every core even when several do identical work (the results are
    the same to the last bit; it exists to show that). Raises CapacityError if tiles
    cannot fit, ConfigError if the chip lacks an instruction the job issues, ArgumentError
    for an unknown fidelity.
    """
    check_fidelity(fidelity)
    cost = plan(config, job)
    tiling, timing = plan_tiling(config, job, cost, record_slices=record_slices,
                                 mirror_cores=mirror_cores)
    if timing is None or fidelity != "fast":
        timing = _simulate(config, job, cost, tiling.tile_elements if tiling else job.length,
                           record_slices=record_slices, fidelity=fidelity,
                           mirror_cores=mirror_cores)
    timing.tiling = (dataclasses.replace(tiling, candidates=dict(tiling.candidates))
                     if tiling is not None else None)
    return timing
