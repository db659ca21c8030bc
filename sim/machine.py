"""The SimPy model of one call: cores, DMA engines, the tile pipeline, launch and barrier.

Shared-storage jobs split ``length`` over the selected cores into balanced contiguous
parts; each core runs a double-buffered pipeline in which loading tile i+1, computing
tile i and storing tile i-1 overlap. Loads and stores are DMA transfers on the core's own
engines (half of them load, the rest store), sharing DDR / shared SRAM and the core's L2
port with every other transfer in flight.

Private-storage jobs run on one core straight from its L2: vector work only.

Both fidelities share everything here (partition, tiling, the pipeline, roofline, slices)
and differ only in how a DMA transfer and a tile's vector work are timed:

* ``"fast"``: a transfer is a fluid flow whose rate is its max-min fair share of the links
  it crosses (:mod:`dspsim.sim.network`); a tile's vector work is one closed-form delay.
  Cores that get the same number of elements then behave identically (same tiles, same
  transfers at the same instants, symmetric links), so one of them is simulated for all
  and its flows count once per core on the shared links: the event count follows the
  tiles of at most three distinct cores, whatever the core count. Fluid sharing is the
  limit of burst arbitration over many bursts; a call whose tile transfers are shorter
  than :data:`FLUID_MIN_BURSTS` bursts is far from that limit (arbitration lets the cores
  drift out of step, and the fluid model keeps them in step), so its DMA is simulated
  burst by burst, as in the detailed model, when that is cheap (:data:`BURST_BUDGET`).
* ``"detailed"`` (:mod:`dspsim.sim.detailed`): every core is simulated, DMA moves bursts
  with round-robin arbitration on every link, and the vector core issues every iteration.

The pipeline is written as callbacks on SimPy events rather than as SimPy processes: a
process costs several events per step, a callback one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from dspsim.sim.config import ChipConfig
from dspsim.sim.detailed import BurstDMA, IssuedVector
from dspsim.sim.errors import ArgumentError, ConfigError
from dspsim.sim.job import Job, Operand
from dspsim.sim.model import (CALL_TRACK, COMPUTE, ENGINES, FIDELITIES, LOAD, STORE,
                              CoreGroup, CoreTiming, CountingEnvironment, Model, Slice,
                              SliceLog)
from dspsim.sim.network import FlowNetwork
from dspsim.sim.roofline import roofline_terms
from dspsim.sim.tiling import (TilingChoice, balanced_tiles, choose_tiling, fixed_tile,
                               partition, tile_elements)
from dspsim.sim.vector import VectorCost, vector_cost

__all__ = ["BURST_BUDGET", "CALL_TRACK", "COMPUTE", "ENGINES", "FIDELITIES", "FLUID_MIN_BURSTS",
           "LOAD", "STORE", "CoreTiming", "CountingEnvironment", "Slice", "Timing",
           "balanced_tiles", "check_fidelity", "partition", "plan", "roofline_terms", "run_job",
           "tile_elements"]

#: Tile transfers of at least this many bursts are timed as fluid flows in the fast model;
#: shorter ones burst by burst. Over B bursts, round-robin arbitration among k transfers
#: ends them up to (k-1) bursts apart where fluid sharing ends them together: an error
#: below 1/B of a transfer, so under 1% here.
FLUID_MIN_BURSTS = 128
#: ... unless the call moves more bursts than this in all: then fluid flows all the same,
#: so that the fast model stays fast whatever the tile size (the error stays under
#: 1/B of each transfer; the detailed fidelity has none).
BURST_BUDGET = 16384


@dataclass
class Timing:
    """Everything the model measured for one call, in cycles and bytes."""

    cycles: float
    cores: list[CoreTiming]
    tile_elements: int
    vector: VectorCost
    bytes_read: dict[str, int]
    bytes_written: dict[str, int]
    roofline_terms: dict[str, float]
    slice_log: "SliceLog | None" = field(default=None, repr=False)
    ddr_samples: list[tuple[float, float]] = field(default_factory=list)  # (cycle, bytes/cycle)
    scheduled_events: int = 0
    fidelity: str = "fast"
    dma_model: str = "fluid"  # how transfers were timed: see dma_timing
    tiling: TilingChoice | None = None  # shared-storage calls: the tile size and why

    @property
    def slices(self) -> list[Slice]:
        """Every engine activity of every core, in the order it ended (built on demand)."""
        return self.slice_log.slices() if self.slice_log is not None else []

    @property
    def roofline_cycles(self) -> float:
        """A lower bound on the call's cycles: fixed overheads plus the busiest resource."""
        terms = dict(self.roofline_terms)
        fixed = terms.pop("launch overhead", 0.0)
        return fixed + max(terms.values(), default=0.0)

    @property
    def bound(self) -> str:
        """The resource whose roofline term is largest."""
        return max(self.roofline_terms, key=self.roofline_terms.get)


def check_fidelity(fidelity) -> str:
    """``fidelity`` if it names a model fidelity; an ArgumentError saying the choices if not."""
    if not isinstance(fidelity, str) or fidelity not in FIDELITIES:
        raise ArgumentError(f"fidelity={fidelity!r} is not a model fidelity; use one of "
                            f"{', '.join(repr(f) for f in FIDELITIES)} (default 'fast')")
    return fidelity


def plan(config: ChipConfig, job: Job) -> VectorCost:
    """The checks a job must pass before it runs; returns its vector cost.

    Raises ConfigError (an instruction the chip lacks) or CapacityError (tiles that do
    not fit L2, or a fixed tile that cannot be used). It touches nothing, so a launcher
    can call it before writing results.
    """
    cost = vector_cost(config, job.dtype, job.mix)
    if job.storage == "shared":
        fixed_tile(config, job, cost.lanes)
    return cost


def group_cores(cores: list[CoreTiming], tile_size: int, lanes: int,
                mirror: bool) -> list[CoreGroup]:
    """Groups of cores with work; with ``mirror``, cores with equal element counts share one."""
    groups: dict[object, CoreGroup] = {}
    for timing in cores:
        if not timing.elements:
            continue
        key = timing.elements if mirror else timing.core
        if key in groups:
            groups[key].members.append(timing)
        else:
            tiles = balanced_tiles(timing.start, timing.stop, tile_size, lanes)
            groups[key] = CoreGroup([timing], tiles, {e: 0.0 for e in ENGINES})
    return list(groups.values())


class FluidDMA:
    """Transfers as max-min fair fluid flows, one flow for a whole group of mirror cores."""

    def __init__(self, model: Model, staggered: bool = False) -> None:
        self.model = model
        self.staggered = staggered  # short transfers: their path fill matters
        self.network = FlowNetwork(model.env, model.sample_ddr, watched=model.links["ddr"])

    def transfer(self, group: CoreGroup, direction: str, operand: Operand, nbytes: int,
                 rate: float, then: Callable) -> None:
        """Move ``nbytes`` of ``operand`` for every core of ``group``, each at most at
        ``rate`` bytes/cycle (its engine's), then call ``then()``."""
        model = self.model
        # every core of the group crosses the shared region; each crosses its own L2 port,
        # which the representative's port stands for
        links = (model.links[operand.span.region], model.l2_ports[group.core])
        fill = self.path_fill(links, nbytes)
        if fill:
            self.network.start(nbytes, links, rate, lambda: model.after(fill, lambda _e: then()),
                               (group.weight, 1))
        else:
            self.network.start(nbytes, links, rate, then, (group.weight, 1))

    def path_fill(self, links, nbytes: int) -> float:
        """Latency a burst train pays beyond its bottleneck: its last burst still crosses
        every faster link of the path after the bottleneck (store and forward)."""
        if not self.staggered:
            return 0.0
        burst = min(self.model.config.dma.burst_bytes, nbytes)
        times = sorted(burst / link.capacity for link in links)
        return sum(times[:-1])

    def finish(self) -> None:
        """Nothing to summarise: the flows reported DDR use as they went."""


class ClosedFormVector:
    """A tile's vector loop as one delay: fill + loop overhead + iterations x iteration cost."""

    def __init__(self, model: Model) -> None:
        self.model = model

    def compute(self, group: CoreGroup, elements: int, then: Callable) -> None:
        """Run the vector loop over ``elements`` on the group's cores, then call ``then()``."""
        self.model.after(self.model.cost.tile_cycles(elements), then)


class Datapath:
    """How one fidelity times the two kinds of work: DMA transfers and vector loops.

    ``dma`` is None for private-storage calls, which move nothing.
    """

    def __init__(self, dma, vector) -> None:
        self.dma = dma
        self.compute = vector.compute
        if dma is not None:
            self.transfer = dma.transfer

    def finish(self) -> None:
        """Let the DMA model summarise what it saw (the DDR counter of the trace)."""
        if self.dma is not None:
            self.dma.finish()


class _TileTransfer:
    """One operand's tile moved by one DMA engine: set up, wait for an engine, move.

    The setup (programming the transfer and submitting it) is latency before the
    transfer asks for an engine, not engine time: an engine is held only while it moves
    data, as a transfer controller works through requests submitted to it.
    """

    __slots__ = ("pipeline", "direction", "thread", "operand", "tile", "nbytes", "engine",
                 "started", "then")

    def __init__(self, pipeline: "_Pipeline", direction: str, thread: str, operand: Operand,
                 tile: int, nbytes: int, then: Callable) -> None:
        self.pipeline = pipeline
        self.direction = direction
        self.thread = thread
        self.operand = operand
        self.tile = tile
        self.nbytes = nbytes
        self.engine = None
        self.started = 0.0
        self.then = then

    def start(self) -> None:
        model = self.pipeline.model
        self.started = model.env.now
        model.after(model.config.dma.setup_cycles, self._set_up)

    def _set_up(self, _event) -> None:
        pipeline = self.pipeline
        pipeline.model.pools[pipeline.group.core].request(self.operand.span.region, self.nbytes,
                                                          self._granted)

    def _granted(self, engine) -> None:
        pipeline = self.pipeline
        self.engine = engine
        pipeline.datapath.transfer(pipeline.group, self.direction, self.operand, self.nbytes,
                                   engine.rate, self._moved)

    def _moved(self, _event=None) -> None:
        pipeline = self.pipeline
        model, group = pipeline.model, pipeline.group
        ledger = model.bytes_read if self.direction == LOAD else model.bytes_written
        ledger[self.operand.span.region] += self.nbytes * group.weight
        now = model.env.now
        if model.log is not None:
            model.log.transfer(group, self.thread, self.operand, self.tile, self.started, now,
                               self.engine.name)
        model.pools[group.core].release(self.engine)
        self.then()


class _Pipeline:
    """The double-buffered load / compute / store pipeline of one core group.

    Two input buffers and two output buffers: loading tile i+1 may start once tile i-1's
    inputs are consumed; computing tile i needs its inputs loaded and a free output
    buffer; storing tile i frees its output buffer.
    """

    def __init__(self, model: Model, datapath, group: CoreGroup, then: Callable) -> None:
        self.model = model
        self.datapath = datapath
        self.group = group
        self.tiles = group.tiles
        self.then = then
        self.free_inputs, self.loaded, self.free_outputs, self.computed = 2, 0, 2, 0
        self.next_load = self.next_compute = self.next_store = 0
        self.loading = self.computing = self.storing = False
        self.compute_started = 0.0
        for member in group.members:
            member.tiles = len(self.tiles)

    def start(self, _event=None) -> None:
        self._try_load()

    def _move(self, direction: str, index: int, then: Callable) -> None:
        """Move tile ``index`` of every operand in ``direction``, then call ``then()``.

        Each operand's tile is its own transfer and asks for its own engine, so the
        operands move side by side as far as the core's (or the pool's) engines allow.
        Operand k's tiles always show on thread ``direction.k``: one after the other,
        never overlapping.
        """
        model, job = self.model, self.model.job
        operands = job.inputs if direction == LOAD else job.outputs
        first, stop = self.tiles[index]
        nbytes = (stop - first) * job.itemsize
        waiting = [len(operands)]
        started = model.env.now

        def one_done():
            waiting[0] -= 1
            if not waiting[0]:
                # busy: while any of the direction's transfers was in flight
                self.group.busy[direction] += model.env.now - started
                then()

        for k, operand in enumerate(operands):
            thread = direction if len(operands) == 1 else f"{direction}.{k}"
            _TileTransfer(self, direction, thread, operand, index, nbytes, one_done).start()

    # loader
    def _try_load(self) -> None:
        if self.loading or self.next_load == len(self.tiles) or not self.free_inputs:
            return
        self.loading = True
        self.free_inputs -= 1
        self._move(LOAD, self.next_load, self._loaded)

    def _loaded(self, _event=None) -> None:
        self.loading = False
        self.next_load += 1
        self.loaded += 1
        self._try_compute()
        self._try_load()

    # vector core
    def _try_compute(self) -> None:
        if self.computing or not self.loaded or not self.free_outputs:
            return
        self.computing = True
        self.loaded -= 1
        self.free_outputs -= 1
        self.compute_started = self.model.env.now
        first, stop = self.tiles[self.next_compute]
        self.datapath.compute(self.group, stop - first, self._computed)

    def _computed(self, _event=None) -> None:
        now = self.model.env.now
        self.group.busy[COMPUTE] += now - self.compute_started
        if self.model.log is not None:
            self.model.log.compute(self.group, self.next_compute, self.compute_started, now)
        self.computing = False
        self.next_compute += 1
        self.free_inputs += 1
        self.computed += 1
        # the store first: it frees the output buffer the vector unit needs next, while
        # the load it would compete with is for a tile that is not needed before then
        self._try_store()
        self._try_load()
        self._try_compute()

    # storer
    def _try_store(self) -> None:
        if self.storing or not self.computed:
            return
        self.storing = True
        self.computed -= 1
        self._move(STORE, self.next_store, self._stored)

    def _stored(self, _event=None) -> None:
        self.storing = False
        self.next_store += 1
        self.free_outputs += 1
        if self.next_store == len(self.tiles):
            for member in self.group.members:
                member.finish = self.model.env.now
            self.then()
            return
        self._try_compute()
        self._try_store()


def _run_shared(model: Model, datapath, groups: list[CoreGroup], stagger: float = 0.0) -> None:
    """Launch, every core group's pipeline (the k-th ``k * stagger`` cycles after the
    launch), barrier."""
    env, cfg, log = model.env, model.config, model.log
    running = [len(groups)]

    barrier_start = [0.0]

    def barrier_done(_event):
        if log is not None:
            log.call("barrier", barrier_start[0], env.now, cfg.barrier_cycles)

    def one_core_done(_event=None):
        running[0] -= 1
        if not running[0]:
            barrier_start[0] = env.now
            model.after(cfg.barrier_cycles, barrier_done)

    def launched(_event):
        if log is not None:
            log.call("launch", 0.0, env.now, cfg.launch_cycles)
        for index, group in enumerate(groups):
            pipeline = _Pipeline(model, datapath, group, one_core_done)
            if stagger and index:
                model.after(index * stagger, pipeline.start)
            else:
                pipeline.start()

    model.after(cfg.launch_cycles, launched)


def _run_private(model: Model, datapath, group: CoreGroup) -> None:
    """The vector loop over the whole range, straight from the core's L2."""
    member = group.members[0]

    def done(_event=None):
        now = model.env.now
        group.busy[COMPUTE] += now
        member.finish = now
        if model.log is not None:
            model.log.compute(group, None, 0.0, now)

    member.tiles = 1
    datapath.compute(group, member.elements, done)


def dma_timing(config: ChipConfig, job: Job, cores: list[CoreTiming], tile_size: int,
               fidelity: str) -> str:
    """How the call's transfers are timed: ``"fluid"``, ``"staggered"``, ``"bursts"``
    or ``"none"`` (private storage).

    The fast model uses fluid flows when tile transfers are long enough for fluid sharing
    to be accurate. Shorter ones go burst by burst, unless the call is too large for that
    (:data:`BURST_BUDGET`): then fluid flows all the same, ``"staggered"``: identical
    cores in perfect lock-step would set up their transfers at the same instants and leave
    DDR idle together, where arbitration staggers them (its round-robin serves their first
    bursts one after another, and the cores drift out of phase from there), so each core
    starts one burst's time on the shared link after the previous one and is simulated
    on its own. Tiles of one core differ by at most a vector, so the longest core's first
    tile stands for the call.
    """
    if job.storage == "private":
        return "none"
    if fidelity != "fast":
        return "bursts"
    burst = config.dma.burst_bytes
    longest = max((min(tile_size, c.elements) for c in cores), default=0)
    if longest * job.itemsize >= FLUID_MIN_BURSTS * burst:
        return "fluid"
    operands = len(job.inputs) + len(job.outputs)
    bursts = operands * -(-job.length * job.itemsize // burst)
    return "staggered" if bursts > BURST_BUDGET else "bursts"


def _simulate(config: ChipConfig, job: Job, cost: VectorCost, cores: list[CoreTiming],
              tile_size: int, *, record_slices: bool, fidelity: str,
              mirror_cores: bool) -> Timing:
    """Run the call once with ``tile_size``-element tiles (the whole range if private)."""
    model = Model(config, job, cost, record_slices, tuple(c.core for c in cores))
    dma_model = dma_timing(config, job, cores, tile_size, fidelity)
    dma = {"none": None, "fluid": FluidDMA, "bursts": BurstDMA,
           "staggered": lambda m: FluidDMA(m, staggered=True)}[dma_model]
    vector = ClosedFormVector if fidelity == "fast" else IssuedVector
    datapath = Datapath(dma and dma(model), vector(model))
    # only fluid flows in lock-step keep identical cores in step, so only they may share
    # one simulation; and only while each core has engines of its own (a shared pool
    # serves them in turn)
    mirror = dma_model == "fluid" and mirror_cores and not config.dma.shared
    groups = group_cores(cores, tile_size, cost.lanes, mirror=mirror)
    used = {o.span.region for o in job.inputs + job.outputs}
    stagger = (config.dma.burst_bytes / min(model.links[r].capacity for r in used)
               if dma_model == "staggered" else 0.0)
    if job.storage == "private":
        if job.length:
            _run_private(model, datapath, groups[0])
    elif job.length:
        _run_shared(model, datapath, groups, stagger)
    model.env.run()
    if not math.isfinite(model.env.now):
        raise ConfigError(
            f"{config.source}: this call would take {model.env.now} cycles: the chip's "
            f"bandwidths are too small or its cycle counts too large to simulate")
    datapath.finish()
    for group in groups:
        for member in group.members:
            member.busy = dict(group.busy)
    return Timing(
        cycles=float(model.env.now), cores=cores, tile_elements=tile_size, vector=cost,
        bytes_read=model.bytes_read, bytes_written=model.bytes_written,
        roofline_terms=roofline_terms(config, job, cost, [c.elements for c in cores]),
        slice_log=model.log, ddr_samples=model.ddr_samples,
        scheduled_events=model.env.scheduled_events, fidelity=fidelity, dma_model=dma_model)


def _fresh_cores(job: Job, lanes: int) -> list[CoreTiming]:
    if job.storage == "private":
        return [CoreTiming(job.cores[0], 0, job.length, 0, {e: 0.0 for e in ENGINES}, 0.0)]
    return [CoreTiming(core, start, stop, 0, {e: 0.0 for e in ENGINES}, 0.0)
            for core, start, stop in partition(job.length, job.cores, lanes)]


def run_job(config: ChipConfig, job: Job, *, record_slices: bool = True,
            fidelity: str = "fast", mirror_cores: bool = True) -> Timing:
    """Simulate one call and return its timing.

    ``fidelity`` is ``"fast"`` (fluid DMA flows, or bursts for short transfers; closed-form
    vector loops) or ``"detailed"`` (DMA bursts with round-robin arbitration, every vector
    iteration issued; slower, for small lengths). A shared-storage call first chooses its
    tile size (:func:`~dspsim.sim.tiling.choose_tiling`, timing candidates with the fast
    model, so that both fidelities run the same tiling). ``mirror_cores=False`` makes the
    fast model simulate every core even when several do identical work (the results are
    the same to the last bit; it exists to show that). Raises CapacityError if tiles
    cannot fit, ConfigError if the chip lacks an instruction the job issues, ArgumentError
    for an unknown fidelity.
    """
    check_fidelity(fidelity)
    cost = plan(config, job)

    def simulate(tile_size: int, fidelity: str = fidelity) -> Timing:
        return _simulate(config, job, cost, _fresh_cores(job, cost.lanes), tile_size,
                         record_slices=record_slices, fidelity=fidelity,
                         mirror_cores=mirror_cores)

    if job.storage == "private" or not job.length:
        return simulate(job.length)
    parts = partition(job.length, job.cores, cost.lanes)
    # candidates are timed with the fast model, so that both fidelities run one tiling
    tiling, timing = choose_tiling(config, job, cost, parts,
                                   lambda tile: simulate(tile, "fast"))
    if timing is None or fidelity != "fast":
        timing = simulate(tiling.tile_elements)
    timing.tiling = tiling
    return timing
