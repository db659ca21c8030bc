"""The SimPy model of one call: cores, DMA engines, the tile pipeline, launch and barrier.

Shared-storage jobs split ``length`` over the selected cores into balanced contiguous
parts; each core runs a double-buffered pipeline in which loading tile i+1, computing
tile i and storing tile i-1 overlap. Loads and stores are DMA transfers on the core's own
engines (half of them load, the rest store), sharing DDR / shared SRAM and the core's L2
port with every other transfer in flight (see :mod:`dspsim.sim.network`).

Private-storage jobs run on one core straight from its L2: vector work only.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import simpy

from dspsim.sim.config import ChipConfig
from dspsim.sim.errors import CapacityError
from dspsim.sim.job import Job, Operand
from dspsim.sim.network import Flow, FlowNetwork, Link
from dspsim.sim.vector import VectorCost, vector_cost

#: Trace thread names of a core's engines, in display order.
LOAD, COMPUTE, STORE = "dma-in", "vector", "dma-out"
ENGINES = (LOAD, COMPUTE, STORE)
#: The pseudo-core that holds call-level slices (launch, barrier).
CALL_TRACK = -1


class CountingEnvironment(simpy.Environment):
    """A SimPy environment that counts the events it schedules."""

    def __init__(self) -> None:
        super().__init__()
        self.scheduled_events = 0

    def schedule(self, event, priority=simpy.core.NORMAL, delay=0):  # noqa: D102
        self.scheduled_events += 1
        super().schedule(event, priority, delay)


@dataclass(frozen=True)
class Slice:
    """One activity of one engine: a tile transfer or a tile's vector work."""

    core: int  # CALL_TRACK for call-level slices
    engine: str
    name: str
    start: float
    end: float
    args: dict


@dataclass
class CoreTiming:
    """What one core did during the call."""

    core: int
    start: int  # first element (inclusive)
    stop: int  # last element (exclusive)
    tiles: int
    busy: dict[str, float]
    finish: float  # cycle at which its last store completed

    @property
    def elements(self) -> int:
        return self.stop - self.start


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
    slices: list[Slice] = field(default_factory=list)
    ddr_samples: list[tuple[float, float]] = field(default_factory=list)  # (cycle, bytes/cycle)
    scheduled_events: int = 0

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


class _Model:
    """State shared by the processes of one simulated call."""

    def __init__(self, config: ChipConfig, job: Job, record_slices: bool) -> None:
        self.config = config
        self.job = job
        self.env = CountingEnvironment()
        self.cost = vector_cost(config, job.dtype, job.mix)
        self.record_slices = record_slices
        self.slices: list[Slice] = []
        self.ddr_samples: list[tuple[float, float]] = []
        self.links = {r.name: Link(r.name, config.bytes_per_cycle(r.bandwidth_gbps))
                      for r in config.shared_regions}
        self.l2_ports = {core: Link(f"l2 port {core}", config.l2.load_store_bytes_per_cycle)
                         for core in job.cores}
        self.engine_rate = config.bytes_per_cycle(config.dma.engine_bandwidth_gbps)
        self.network = FlowNetwork(self.env, self._sample_ddr)
        self.bytes_read = {r.name: 0 for r in config.shared_regions}
        self.bytes_written = {r.name: 0 for r in config.shared_regions}

    def _sample_ddr(self, now: float, flows: list[Flow]) -> None:
        ddr = self.links["ddr"]
        rate = sum(f.rate for f in flows if ddr in f.links)
        if self.ddr_samples and self.ddr_samples[-1][0] == now:
            self.ddr_samples[-1] = (now, rate)
        elif not self.ddr_samples or self.ddr_samples[-1][1] != rate:
            self.ddr_samples.append((now, rate))

    def _record(self, core, engine, name, start, args):
        if self.record_slices:
            self.slices.append(Slice(core, engine, name, start, self.env.now, args))

    # --------------------------------------------------------------- DMA
    def _engine_run(self, core: int, engine: str, operands: list[Operand], tile: int,
                    first: int, stop: int, busy: dict[str, float]):
        """One DMA engine moving its share of a tile's operands, one transfer at a time."""
        env, job = self.env, self.job
        nbytes = (stop - first) * job.itemsize
        for operand in operands:
            start = env.now
            yield env.timeout(self.config.dma.setup_cycles)
            link = self.links[operand.span.region]
            yield self.network.transfer(nbytes, (link, self.l2_ports[core]), self.engine_rate)
            ledger = self.bytes_read if engine.startswith(LOAD) else self.bytes_written
            ledger[operand.span.region] += nbytes
            busy[engine.split(".")[0]] += env.now - start
            self._record(core, engine, f"{operand.name}[{tile}]", start, {
                "tile": tile, "operand": operand.name, "bytes": nbytes,
                "address": hex(operand.span.address + first * job.itemsize),
                "region": operand.span.region, "setup_cycles": self.config.dma.setup_cycles,
                "elements": [first, stop]})

    def _move(self, core: int, direction: str, tile: int, first: int, stop: int,
              busy: dict[str, float]):
        """Move one tile of every operand in ``direction`` (LOAD or STORE)."""
        if direction == LOAD:
            operands, engines = self.job.inputs, self.config.dma.load_engines
        else:
            operands, engines = self.job.outputs, self.config.dma.store_engines
        groups = [list(operands[e::engines]) for e in range(engines) if operands[e::engines]]
        if len(groups) == 1:
            yield from self._engine_run(core, direction, groups[0], tile, first, stop, busy)
            return
        yield simpy.AllOf(self.env, [
            self.env.process(self._engine_run(core, f"{direction}.{e}", group, tile, first, stop,
                                              busy))
            for e, group in enumerate(groups)])

    # --------------------------------------------------------------- pipeline
    def core_pipeline(self, timing: CoreTiming, tile_size: int):
        """Double-buffered load / compute / store over the core's tiles."""
        env, busy, core = self.env, timing.busy, timing.core
        tiles = balanced_tiles(timing.start, timing.stop, tile_size, self.cost.lanes)
        timing.tiles = len(tiles)
        free_inputs = simpy.Container(env, capacity=2, init=2)
        loaded = simpy.Container(env, capacity=2, init=0)
        free_outputs = simpy.Container(env, capacity=2, init=2)
        computed = simpy.Container(env, capacity=2, init=0)

        def loader():
            for index, (first, stop) in enumerate(tiles):
                yield free_inputs.get(1)
                yield from self._move(core, LOAD, index, first, stop, busy)
                yield loaded.put(1)

        def computer():
            for index, (first, stop) in enumerate(tiles):
                yield loaded.get(1)
                yield free_outputs.get(1)
                start = env.now
                yield env.timeout(self.cost.tile_cycles(stop - first))
                busy[COMPUTE] += env.now - start
                self._record(core, COMPUTE, f"{self.job.label}[{index}]", start, {
                    "tile": index, "elements": [first, stop],
                    "iterations": self.cost.iterations(stop - first)})
                yield free_inputs.put(1)
                yield computed.put(1)

        def storer():
            for index, (first, stop) in enumerate(tiles):
                yield computed.get(1)
                yield from self._move(core, STORE, index, first, stop, busy)
                yield free_outputs.put(1)

        yield simpy.AllOf(env, [env.process(loader()), env.process(computer()),
                                env.process(storer())])
        timing.finish = env.now

    def private_run(self, timing: CoreTiming):
        start = self.env.now
        yield self.env.timeout(self.cost.tile_cycles(timing.elements))
        timing.busy[COMPUTE] += self.env.now - start
        timing.tiles = 1 if timing.elements else 0
        self._record(timing.core, COMPUTE, self.job.label, start, {
            "elements": [timing.start, timing.stop],
            "iterations": self.cost.iterations(timing.elements)})
        timing.finish = self.env.now

    def call(self, cores: list[CoreTiming], tile_size: int):
        """Launch, run every core, barrier."""
        env, cfg = self.env, self.config
        start = env.now
        yield env.timeout(cfg.launch_cycles)
        self._record(CALL_TRACK, "call", "launch", start, {"cycles": cfg.launch_cycles})
        yield simpy.AllOf(env, [env.process(self.core_pipeline(t, tile_size))
                                for t in cores if t.elements])
        start = env.now
        yield env.timeout(cfg.barrier_cycles)
        self._record(CALL_TRACK, "call", "barrier", start, {"cycles": cfg.barrier_cycles})


def _roofline_terms(config: ChipConfig, job: Job, cost: VectorCost,
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


def run_job(config: ChipConfig, job: Job, *, record_slices: bool = True) -> Timing:
    """Simulate one call and return its timing. Raises CapacityError if tiles cannot fit."""
    model = _Model(config, job, record_slices)
    cost = model.cost
    if job.storage == "private":
        tile_size = job.length
        cores = [CoreTiming(job.cores[0], 0, job.length, 0, {e: 0.0 for e in ENGINES}, 0.0)]
        model.env.process(model.private_run(cores[0]))
    else:
        tile_size = tile_elements(config, job, cost.lanes)
        cores = [CoreTiming(core, start, stop, 0, {e: 0.0 for e in ENGINES}, 0.0)
                 for core, start, stop in partition(job.length, job.cores, cost.lanes)]
        if job.length:
            model.env.process(model.call(cores, tile_size))
    model.env.run()
    return Timing(
        cycles=float(model.env.now), cores=cores, tile_elements=tile_size, vector=cost,
        bytes_read=model.bytes_read, bytes_written=model.bytes_written,
        roofline_terms=_roofline_terms(config, job, cost, cores), slices=model.slices,
        ddr_samples=model.ddr_samples, scheduled_events=model.env.scheduled_events)
