"""Lower bounds that each resource alone puts on a call (the roofline terms).

The call's time can beat none of them: the fixed launch and barrier plus the busiest
resource is a true lower bound whatever the tiling, the arbitration or the engine
assignment. Every term counts the bytes or iterations that must cross the resource and
divides by what the resource sustains.
"""
from __future__ import annotations

import math

from dspsim.sim.chip.load import ChipConfig
from dspsim.sim.engine.dma import sharing_cores
from dspsim.sim.engine.job import Job
from dspsim.sim.engine.vector import VectorCost

#: every resource a call's roofline may name; a call's JSON lists each (null if it has none)
ROOFLINE_TERMS = ("launch overhead", "DMA engine", "L2 port", "vector unit", "DDR",
                  "shared SRAM")


def roofline_bound(terms: dict[str, float]) -> tuple[float, str | None]:
    """The lower bound ``terms`` put on a call: its fixed launch overhead plus its busiest
    resource's term, and that resource (None if there is none but the launch)."""
    rest = {term: cycles for term, cycles in terms.items() if term != "launch overhead"}
    busiest = max(rest, key=lambda term: rest[term], default=None)
    return (terms.get("launch overhead", 0.0) + (rest[busiest] if busiest else 0.0),
            busiest)


def roofline_terms(config: ChipConfig, job: Job, cost: VectorCost,
                   part_elements: list[int]) -> dict[str, float]:
    """Cycles each resource needs for the call; ``part_elements`` are the cores' parts."""
    most_elements = max(part_elements, default=0)
    vector = most_elements and math.ceil(most_elements / cost.lanes) * cost.iteration_cycles
    if job.storage == "private":
        return {"vector unit": vector}
    dma = config.dma
    port = config.l2.load_store_bytes_per_cycle
    # An engine serves one transfer at a time, and a transfer crosses its core's L2 port:
    # an engine moves at most the slower of its own rate and that port's.
    rates = [min(config.bytes_per_cycle(e.bandwidth_gbps), port) for e in dma.engines]
    operand_bytes = most_elements * job.itemsize
    operands = len(job.inputs) + len(job.outputs)
    # The DMA engines: one operand's tiles move one after the other (each on one engine at
    # a time), and all the bytes the engines move share their combined rate: the busiest
    # core's with its own engines (behind its one L2 port), every core's of a pool that
    # cores share (behind the ports of its cores that have work).
    # The pools the chip's DMA model makes cores share: the busiest pool bounds the call.
    elements = dict(zip(job.cores, part_elements, strict=True))
    pool_cycles = 0.0
    for pool in sharing_cores(config, job.cores):
        busy = [elements.get(core, 0) for core in pool if elements.get(core, 0)]
        if busy:
            combined = min(sum(rates), len(busy) * port)
            pool_cycles = max(pool_cycles, sum(busy) * job.itemsize * operands / combined)
    terms = {
        "launch overhead": config.launch_cycles + config.barrier_cycles,
        "DMA engine": max(operand_bytes / max(rates), pool_cycles),
        "L2 port": operand_bytes * operands / config.l2.load_store_bytes_per_cycle,
        "vector unit": vector,
    }
    for region in config.shared_regions:
        region_bytes = sum(job.length * job.itemsize for o in job.inputs + job.outputs
                           if o.span.region == region.name)
        terms[region.label] = region_bytes / config.bytes_per_cycle(region.bandwidth_gbps)
    return terms
