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
from dspsim.sim.errors import ArgumentError, CapacityError, ConfigError
from dspsim.sim.job import Job, Operand
from dspsim.sim.model import (CALL_TRACK, COMPUTE, ENGINES, FIDELITIES, LOAD, STORE,
                              CoreGroup, CoreTiming, CountingEnvironment, Model, Slice,
                              SliceLog)
from dspsim.sim.network import FlowNetwork
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
    dma_model: str = "fluid"  # how transfers were timed: "fluid" flows, "bursts" or "none"

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


# ----------------------------------------------------------------------------- work split
def partition(length: int, cores: tuple[int, ...], lanes: int) -> list[tuple[int, int, int]]:
    """Split [0, length) into contiguous balanced parts, whole vectors each.

    Returns (core, start, stop) per core. Full vectors are spread so that no two cores
    differ by more than one vector; the final partial vector goes to the last core that
    has work.
    """
    vectors, tail = divmod(length, lanes)
    base, extra = divmod(vectors, len(cores))
    parts, start = [], 0
    for index, core in enumerate(cores):
        stop = start + (base + (index < extra)) * lanes
        parts.append([core, start, stop])
        start = stop
    if tail:
        last = max((i for i, p in enumerate(parts) if p[2] > p[1]), default=0)
        for i in range(last + 1, len(parts)):
            parts[i][1] = parts[i][2] = length
        parts[last][2] = length
    return [tuple(p) for p in parts]


def balanced_tiles(start: int, stop: int, largest: int, lanes: int) -> list[tuple[int, int]]:
    """Cut [start, stop) into as few tiles as ``largest`` allows, of nearly equal size.

    Equal tiles rather than full tiles plus a runt: the last tile's compute and store are
    not overlapped with anything, so a tile count fixed by L2 capacity is best spread
    evenly (whole vectors each, the partial vector last).
    """
    count = math.ceil((stop - start) / largest)
    if count <= 1:
        return [(start, stop)] if stop > start else []
    vectors = math.ceil((stop - start) / lanes)
    base, extra = divmod(vectors, count)
    tiles, first = [], start
    for index in range(count):
        last = min(stop, first + (base + (index < extra)) * lanes)
        tiles.append((first, last))
        first = last
    return tiles


def tile_elements(config: ChipConfig, job: Job, lanes: int) -> int:
    """Largest whole-vector tile whose doubled input and output buffers fit L2 minus reserve."""
    budget = config.l2.size_bytes - config.l2.reserve_bytes
    buffers = 2 * (len(job.inputs) + len(job.outputs))
    per_vector = buffers * lanes * job.itemsize
    vectors = budget // per_vector
    if vectors < 1:
        raise CapacityError(
            f"{config.name}: {buffers} double-buffered tiles of one {lanes}-lane vector need "
            f"{per_vector} bytes but L2 leaves {budget} bytes after its reserve; enlarge "
            f"memory.l2.size_kib or lower memory.l2.reserve_kib in {config.source}")
    return vectors * lanes


def check_fidelity(fidelity) -> str:
    """``fidelity`` if it names a model fidelity; an ArgumentError saying the choices if not."""
    if not isinstance(fidelity, str) or fidelity not in FIDELITIES:
        raise ArgumentError(f"fidelity={fidelity!r} is not a model fidelity; use one of "
                            f"{', '.join(repr(f) for f in FIDELITIES)} (default 'fast')")
    return fidelity


def plan(config: ChipConfig, job: Job) -> tuple[VectorCost, int]:
    """The checks a job must pass before it runs: its vector cost and tile size.

    Raises ConfigError (an instruction the chip lacks) or CapacityError (tiles that do
    not fit L2). It touches nothing, so a launcher can call it before writing results.
    """
    cost = vector_cost(config, job.dtype, job.mix)
    tile_size = job.length if job.storage == "private" else tile_elements(config, job, cost.lanes)
    return cost, tile_size


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

    def __init__(self, model: Model) -> None:
        self.model = model
        self.network = FlowNetwork(model.env, model.sample_ddr, watched=model.links["ddr"])

    def transfer(self, group: CoreGroup, direction: str, operand: Operand, nbytes: int,
                 then: Callable) -> None:
        """Move ``nbytes`` of ``operand`` for every core of ``group``, then call ``then()``."""
        model = self.model
        # every core of the group crosses the shared region; each crosses its own L2 port,
        # which the representative's port stands for
        links = (model.links[operand.span.region], model.l2_ports[group.core])
        self.network.start(nbytes, links, model.engine_rate, then, (group.weight, 1))

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


class _EngineQueue:
    """One DMA engine moving its operands of one tile, one transfer after the other."""

    __slots__ = ("pipeline", "direction", "engine", "operands", "tile", "nbytes", "next",
                 "started", "then")

    def __init__(self, pipeline: "_Pipeline", direction: str, engine: str,
                 operands: tuple[Operand, ...], tile: int, nbytes: int, then: Callable) -> None:
        self.pipeline = pipeline
        self.direction = direction
        self.engine = engine
        self.operands = operands
        self.tile = tile
        self.nbytes = nbytes
        self.next = 0
        self.started = 0.0
        self.then = then

    def run(self, _event=None) -> None:
        model = self.pipeline.model
        self.started = model.env.now
        model.after(model.config.dma.setup_cycles, self._set_up)

    def _set_up(self, _event) -> None:
        self.pipeline.datapath.transfer(self.pipeline.group, self.direction,
                                        self.operands[self.next], self.nbytes, self._moved)

    def _moved(self, _event=None) -> None:
        pipeline = self.pipeline
        model, group = pipeline.model, pipeline.group
        operand = self.operands[self.next]
        ledger = model.bytes_read if self.direction == LOAD else model.bytes_written
        ledger[operand.span.region] += self.nbytes * group.weight
        now = model.env.now
        group.busy[self.direction] += now - self.started
        if model.log is not None:
            model.log.transfer(group, self.engine, operand, self.tile, self.started, now)
        self.next += 1
        if self.next < len(self.operands):
            self.run()
        else:
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

    def start(self) -> None:
        self._try_load()

    def _move(self, direction: str, index: int, then: Callable) -> None:
        """Move tile ``index`` of every operand in ``direction``, then call ``then()``."""
        config, job = self.model.config, self.model.job
        if direction == LOAD:
            operands, engines = job.inputs, config.dma.load_engines
        else:
            operands, engines = job.outputs, config.dma.store_engines
        first, stop = self.tiles[index]
        nbytes = (stop - first) * job.itemsize
        # operands are dealt to the engines round-robin; engines beyond them stay idle
        groups = [operands[e::engines] for e in range(min(engines, len(operands)))]
        if len(groups) == 1:
            _EngineQueue(self, direction, direction, groups[0], index, nbytes, then).run()
            return
        waiting = [len(groups)]

        def one_engine_done(_event=None):
            waiting[0] -= 1
            if not waiting[0]:
                then()

        for e, operands_of_engine in enumerate(groups):
            _EngineQueue(self, direction, f"{direction}.{e}", operands_of_engine, index, nbytes,
                         one_engine_done).run()

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
        self._try_load()
        self._try_store()
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


def _run_shared(model: Model, datapath, groups: list[CoreGroup]) -> None:
    """Launch, every core group's pipeline, barrier."""
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
        for group in groups:
            _Pipeline(model, datapath, group, one_core_done).start()

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


def roofline_terms(config: ChipConfig, job: Job, cost: VectorCost,
                   cores: list[CoreTiming]) -> dict[str, float]:
    """Lower bounds, in cycles, that each resource alone puts on the call."""
    most_elements = max((t.elements for t in cores), default=0)
    vector = most_elements and math.ceil(most_elements / cost.lanes) * cost.iteration_cycles
    if job.storage == "private":
        return {"vector unit": vector}
    dma = config.dma
    engine = config.bytes_per_cycle(dma.engine_bandwidth_gbps)
    operand_bytes = most_elements * job.itemsize
    per_core_in = operand_bytes * len(job.inputs)
    per_core_out = operand_bytes * len(job.outputs)
    # operands are dealt to a direction's engines round-robin: the busiest engine moves
    # ceil(operands / engines) of them
    terms = {
        "launch overhead": config.launch_cycles + config.barrier_cycles,
        "DMA engine": operand_bytes / engine * max(
            math.ceil(len(job.inputs) / dma.load_engines),
            math.ceil(len(job.outputs) / dma.store_engines)),
        "L2 port": (per_core_in + per_core_out) / config.l2.load_store_bytes_per_cycle,
        "vector unit": vector,
    }
    for region in config.shared_regions:
        moved = sum(job.length * job.itemsize for o in job.inputs + job.outputs
                    if o.span.region == region.name)
        label = "DDR" if region.name == "ddr" else "shared SRAM"
        terms[label] = moved / config.bytes_per_cycle(region.bandwidth_gbps)
    return terms


def fluid_is_accurate(config: ChipConfig, job: Job, cores: list[CoreTiming],
                      tile_size: int) -> bool:
    """Whether the fast model times the call's transfers as fluid flows.

    They are when they are long enough for fluid sharing to be accurate, or when the call
    is too large to move burst by burst. Tiles of one core differ by at most a vector, so
    the longest core's first tile stands for the call.
    """
    burst = config.dma.burst_bytes
    longest = max((min(tile_size, c.elements) for c in cores), default=0)
    operands = len(job.inputs) + len(job.outputs)
    bursts = operands * -(-job.length * job.itemsize // burst)
    return longest * job.itemsize >= FLUID_MIN_BURSTS * burst or bursts > BURST_BUDGET


def run_job(config: ChipConfig, job: Job, *, record_slices: bool = True,
            fidelity: str = "fast", mirror_cores: bool = True) -> Timing:
    """Simulate one call and return its timing.

    ``fidelity`` is ``"fast"`` (fluid DMA flows, or bursts for short transfers; closed-form
    vector loops) or ``"detailed"`` (DMA bursts with round-robin arbitration, every vector
    iteration issued; slower, for small lengths). ``mirror_cores=False`` makes the fast
    model simulate every core even when several do identical work (the results are the
    same to the last bit; it exists to show that). Raises CapacityError if tiles cannot
    fit, ConfigError if the chip lacks an instruction the job issues, ArgumentError for an
    unknown fidelity.
    """
    check_fidelity(fidelity)
    cost, tile_size = plan(config, job)
    if job.storage == "private":
        cores = [CoreTiming(job.cores[0], 0, job.length, 0, {e: 0.0 for e in ENGINES}, 0.0)]
    else:
        cores = [CoreTiming(core, start, stop, 0, {e: 0.0 for e in ENGINES}, 0.0)
                 for core, start, stop in partition(job.length, job.cores, cost.lanes)]
    model = Model(config, job, cost, record_slices, tuple(c.core for c in cores))
    if job.storage == "private":
        dma_model = "none"
    elif fidelity == "fast" and fluid_is_accurate(config, job, cores, tile_size):
        dma_model = "fluid"
    else:
        dma_model = "bursts"
    dma = {"none": None, "fluid": FluidDMA, "bursts": BurstDMA}[dma_model]
    vector = ClosedFormVector if fidelity == "fast" else IssuedVector
    datapath = Datapath(dma and dma(model), vector(model))
    # only fluid flows keep identical cores in step, so only they may share one simulation
    groups = group_cores(cores, tile_size, cost.lanes,
                         mirror=dma_model == "fluid" and mirror_cores)
    if job.storage == "private":
        if job.length:
            _run_private(model, datapath, groups[0])
    elif job.length:
        _run_shared(model, datapath, groups)
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
        roofline_terms=roofline_terms(config, job, cost, cores), slice_log=model.log,
        ddr_samples=model.ddr_samples, scheduled_events=model.env.scheduled_events,
        fidelity=fidelity, dma_model=dma_model)
