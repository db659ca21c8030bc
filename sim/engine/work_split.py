"""How a shared-storage call's work is cut: cores' parts, and tiles within each part.

``length`` is split over the cores into contiguous balanced parts (:func:`partition`);
each core then streams its part through L2 in tiles (:func:`balanced_tiles`), as large
as its double buffers allow (:func:`tile_elements`) or as many as a tiling asks for
(:func:`tile_for_count`). Which count is chosen is :mod:`dspsim.sim.engine.tiling`'s.
"""
from __future__ import annotations

import math

import numpy as np

from dspsim.sim.chip.load import ChipConfig
from dspsim.sim.engine.job import Job
from dspsim.sim.errors import CapacityError


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
    return [(p[0], p[1], p[2]) for p in parts]


def balanced_tiles(start: int, stop: int, largest: int, lanes: int) -> list[tuple[int, int]]:
    """Cut [start, stop) into as few tiles as ``largest`` allows, of nearly equal size.

    Equal tiles rather than full tiles plus a runt: the last tile's compute and store are
    not overlapped with anything, so a tile count is best spread evenly (whole vectors
    each, the partial vector last).
    """
    count = math.ceil((stop - start) / largest)
    if count <= 1:
        return [(start, stop)] if stop > start else []
    vectors = math.ceil((stop - start) / lanes)
    base, extra = divmod(vectors, count)
    # tile i starts after i tiles of `base` vectors and min(i, extra) extra vectors; only
    # the last bound can pass `stop` (by less than a vector)
    index = np.arange(count + 1, dtype=np.int64)
    bounds = np.minimum(start + lanes * (index * base + np.minimum(index, extra)), stop).tolist()
    return list(zip(bounds[:-1], bounds[1:], strict=True))


def tile_elements(config: ChipConfig, job: Job, lanes: int) -> int:
    """Largest whole-vector tile whose doubled input and output buffers fit L2 minus reserve."""
    budget = config.l2.size_bytes - config.l2.reserve_bytes
    buffers = 2 * (len(job.inputs) + len(job.outputs))
    per_vector = buffers * lanes * job.itemsize
    vectors = budget // per_vector
    if vectors < 1:
        raise CapacityError(
            f"{config.name}: {buffers} double-buffered tiles of one {lanes}-lane vector need "
            f"{per_vector:,} bytes but L2 leaves {budget:,} bytes after its reserve; enlarge "
            f"memory.l2.size_kib or lower memory.l2.reserve_kib in {config.source}")
    return vectors * lanes


def tile_for_count(elements: int, tiles: int, lanes: int) -> int:
    """The whole-vector tile size that cuts ``elements`` into ``tiles`` balanced tiles."""
    return math.ceil(math.ceil(elements / lanes) / tiles) * lanes
