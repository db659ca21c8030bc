"""What a tiling costs without simulating it: a closed-form estimate and a lower bound.

The estimate (:func:`estimated_cycles`) ranks tile counts so that the search starts where
the best one probably is; the lower bound (:func:`cycles_lower_bound`) is one no timing of
the call can beat, so that a tiling whose bound exceeds a simulated time is not simulated.
"""
from __future__ import annotations

import numpy as np

from dspsim.sim.chip.load import ChipConfig
from dspsim.sim.engine.dma import sharing_cores
from dspsim.sim.engine.job import Job
from dspsim.sim.engine.roofline import roofline_bound, roofline_terms
from dspsim.sim.engine.vector import VectorCost
from dspsim.sim.engine.work_split import balanced_tiles, tile_for_count


def estimated_cycles(config: ChipConfig, job: Job, cost: VectorCost, busy_cores: int,
                     elements: int, tiles: np.ndarray) -> np.ndarray:
    """Closed-form cycles of the busiest core's pipeline for each count in ``tiles``.

    Fill (the first tile's loads), steady state (one tile per period of the slowest stage:
    the DMA of a tile's loads and stores at the core's share of the links and engines, or
    its vector work) and drain (the last tile's compute and stores). The estimate only
    ranks tile counts; the simulator times the best of them.
    """
    dma, lanes, size = config.dma, cost.lanes, job.itemsize
    tile = np.ceil(np.ceil(elements / lanes) / tiles) * lanes
    transfers = len(job.inputs) + len(job.outputs)
    rates = sorted((config.bytes_per_cycle(e.bandwidth_gbps) for e in dma.engines), reverse=True)
    # engines one core can keep busy at once (its pool's, shared with the busy cores the
    # chip's DMA model puts in the same pool), and their combined rate
    sharers = max(len(pool) for pool in sharing_cores(config, job.cores[:max(busy_cores, 1)]))
    usable = max(1.0, len(rates) / sharers)
    usable = min(usable, transfers)
    engine_rate = sum(rates[:int(usable)]) + (usable % 1) * rates[min(int(usable), len(rates) - 1)]
    regions = {o.span.region for o in job.inputs + job.outputs}
    link = min(config.bytes_per_cycle(r.bandwidth_gbps)
               for r in config.shared_regions if r.name in regions)
    core_rate = min(engine_rate, link / busy_cores, config.l2.load_store_bytes_per_cycle)
    single = min(rates[0], link / busy_cores)  # one transfer alone
    # an engine is held beyond its data for the last burst's trip over the faster links
    hops = sorted(dma.burst_bytes / c for c in (link, config.l2.load_store_bytes_per_cycle))
    nbytes = tile * size

    def stage(operands: int) -> np.ndarray:  # one stage: its transfers side by side
        together = min(core_rate, single * min(operands, usable))
        return dma.setup_cycles + operands * nbytes / together + hops[0]

    # a tile's loads and stores: each stage pays its setup as latency; the core's share of
    # the links and engines bounds them together (other cores' data hides the setups)
    shared = transfers * (nbytes + hops[0] * core_rate) / core_rate
    dma_period = np.maximum(np.maximum(stage(len(job.inputs)), stage(len(job.outputs))), shared)
    compute = (cost.fill_cycles + cost.overhead_cycles
               + np.ceil(tile / lanes) * cost.iteration_cycles)
    fill, drain = stage(len(job.inputs)), stage(len(job.outputs))
    return fill + compute + drain + (tiles - 1) * np.maximum(dma_period, compute)


#: The estimate ranks tile counts for the length rounded up to a multiple of a power of
#: two whole vectors, the largest no more than this fraction of it.
ESTIMATE_GRAIN = 256


def estimated_best_count(config: ChipConfig, job: Job, cost: VectorCost, busy_cores: int,
                         elements: int, fewest: int, most: int) -> int:
    """The tile count the closed-form estimate ranks best, between ``fewest`` and ``most``,
    for the length rounded up as :data:`ESTIMATE_GRAIN` says.

    The estimate counts each tile at its rounded-up size, so it favours counts that cut
    the length evenly. Where its curve is flat, those counts decide its least, and
    lengths one element apart started the walk far apart (30,000 and 30,001 elements at
    25 and 41 tiles, on a pool chip whose times jump a few percent from count to count).
    Rounded up to a multiple of a power of two whole vectors, near lengths are ranked
    alike; a power of two itself is not changed.
    """
    vectors = -(-elements // cost.lanes)
    grain = 1 << max(0, (vectors // ESTIMATE_GRAIN).bit_length() - 1)
    elements = -(-vectors // grain) * grain * cost.lanes
    # sorted and distinct (a sort, not numpy's unique, whose first use imports more of numpy)
    counts = np.sort(np.concatenate([
        np.arange(fewest, min(most, fewest + 64) + 1),
        np.round(np.geomspace(fewest, most, 256)).astype(np.int64)]))
    counts = counts[np.concatenate(([True], counts[1:] != counts[:-1]))]
    estimate = estimated_cycles(config, job, cost, busy_cores, elements, counts)
    return int(counts[int(np.argmin(estimate))])


def cycles_lower_bound(config: ChipConfig, job: Job, cost: VectorCost,
                       parts: list[tuple[int, int, int]], count: int) -> float:
    """Cycles the call cannot beat when its busiest core cuts its part into ``count`` tiles.

    The larger of two chains. The busiest core's: the launch, its first tile's loads
    (their setup, then their bytes no faster than the fastest engine, the link or the L2
    port allows, all of them through the port and the link), every tile's vector work one
    after the other, its last tile's stores likewise, the barrier. And the core that
    finishes its first loads last: not before every core's first tiles have crossed the
    link, after which it still computes all its tiles and stores its last. Both DMA
    timings (fluid and bursts) respect each step, so a tiling whose bound exceeds a
    simulated time need not be simulated.
    """
    lanes, size, dma = cost.lanes, job.itemsize, config.dma
    elements = max(stop - start for _, start, stop in parts)
    tile = tile_for_count(elements, count, lanes)

    def core_tiles(start: int, stop: int) -> np.ndarray:
        return np.array([b - a for a, b in balanced_tiles(start, stop, tile, lanes)])

    def computed(sizes: np.ndarray) -> float:
        return float(np.sum(cost.fill_cycles + cost.overhead_cycles
                            + np.ceil(sizes / lanes) * cost.iteration_cycles))

    cores = [core_tiles(start, stop) for _, start, stop in parts if stop > start]
    busiest = max(cores, key=np.sum)
    own = (moved_lower_bound(config, job.inputs, int(busiest[0]) * size) + computed(busiest)
           + moved_lower_bound(config, job.outputs, int(busiest[-1]) * size))
    first_loads = (sum(int(sizes[0]) for sizes in cores) * size * len(job.inputs)
                   / _widest_link(config, job.inputs) if job.inputs else 0.0)
    after_loads = min(computed(sizes)
                      + moved_lower_bound(config, job.outputs, int(sizes[-1]) * size)
                      for sizes in cores)
    last_loaded = dma.setup_cycles + first_loads + after_loads
    return config.launch_cycles + max(own, last_loaded) + config.barrier_cycles


def cycles_floor(config: ChipConfig, job: Job, cost: VectorCost,
                 parts: list[tuple[int, int, int]]) -> tuple[float, str]:
    """Cycles no tiling of the call can beat, and the resource that sets them.

    The launch and the barrier, one DMA setup (no byte moves before the first transfer is
    set up, and no vector work starts before its first tile has moved), and the busiest
    resource's roofline term (:mod:`dspsim.sim.engine.roofline`). A tiling that takes this
    long is the fastest there is, up to a tie.
    """
    elements = {core: stop - start for core, start, stop in parts}
    bound, busiest = roofline_bound(
        roofline_terms(config, job, cost, [elements.get(core, 0) for core in job.cores]))
    return bound + config.dma.setup_cycles, busiest or "launch overhead"


def _widest_link(config: ChipConfig, operands: tuple) -> float:
    """Bytes per cycle of the fastest shared-region link ``operands`` live behind."""
    regions = {o.span.region for o in operands}
    return max(config.bytes_per_cycle(r.bandwidth_gbps) for r in config.shared_regions
               if r.name in regions)


def moved_lower_bound(config: ChipConfig, operands: tuple, nbytes: int) -> float:
    """Cycles one tile's transfers of ``operands`` (``nbytes`` each) cannot beat: their
    setup, then their bytes no faster than the fastest engine, the link or the L2 port
    allows, all of them through the port and the link."""
    if not operands:
        return 0.0
    shared = _widest_link(config, operands)
    port = config.l2.load_store_bytes_per_cycle
    fastest_engine = max(config.bytes_per_cycle(e.bandwidth_gbps) for e in config.dma.engines)
    single = min(fastest_engine, shared, port)
    return (config.dma.setup_cycles
            + max(nbytes / single, len(operands) * nbytes / min(shared, port)))
