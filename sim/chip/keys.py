"""The keys a chip file may hold, and what each must be (see :mod:`dspsim.sim.chip.schema`)."""
from __future__ import annotations

from dspsim.sim.chip.model import LEVEL_KINDS
from dspsim.sim.chip.schema import Field

ADDRESS_LIMIT = 1 << 32
#: How a chip's operator library picks tile sizes (see :mod:`dspsim.sim.engine.tiling`).
TILING_POLICIES = ("optimal", "fixed")
#: More cores than a chip description may have (core masks and per-core tables are walked
#: core by core).
MAX_CORES = 4096


def _unit_fraction(value: float) -> str | None:
    return None if 0 < value <= 1 else f"must be in (0, 1], got {value}"


def _address(value: int) -> str | None:
    return None if 0 <= value < ADDRESS_LIMIT else f"must be a 32-bit address, got {value:#x}"


#: An instruction either issues on a functional unit for a number of cycles, or, on a chip
#: with no unit for it, stands for a sequence of other instructions (``expand``: counts of
#: each per use). Which of the two forms is given is checked in :func:`_build`.
_INSTRUCTION = {
    "unit": Field("str", optional=True),
    "occupancy_cycles": Field("number", optional=True, positive=True),
    "expand": Field("mapping", optional=True, item=Field("int", positive=True)),
}

#: One group of identical transfer controllers in a shared DMA pool. Its bandwidth is
#: either given, or follows from its data-bus width and its clock (the chip's clock divided
#: by ``clock_divider``), as data manuals describe them.
_CONTROLLER = {
    "name": Field("str"),
    "count": Field("int", positive=True, check=lambda v: None if v <= MAX_CORES else
                    f"must be at most {MAX_CORES}, got {v}"),
    "bandwidth_gbps": Field("number", optional=True, positive=True),
    "width_bits": Field("int", optional=True, positive=True,
                         check=lambda v: None if v % 8 == 0 else f"must be whole bytes, got {v}"),
    "clock_divider": Field("number", optional=True, positive=True),
    "reaches": Field("list", optional=True, item=Field("str")),
}

#: One memory level. Which keys a level takes depends on its kind (LEVEL_KEYS); a level
#: without ``kind`` is ``private`` if it has load_store_bytes_per_cycle, ``dram`` if it
#: has a peak bandwidth or an efficiency, ``sram`` otherwise. Its size is in MiB or in KiB.
_LEVEL = {
    "kind": Field("str", optional=True, check=lambda v: None if v in LEVEL_KINDS else
                   f"must be one of {', '.join(LEVEL_KINDS)}, got {v!r}"),
    "label": Field("str", optional=True),
    "base_address": Field("int", check=_address),
    "size_mib": Field("int", optional=True, positive=True),
    "size_kib": Field("int", optional=True, positive=True),
    "peak_bandwidth_gbps": Field("number", optional=True, positive=True),
    "efficiency": Field("number", optional=True, check=_unit_fraction),
    "bandwidth_gbps": Field("number", optional=True, positive=True),
    "core_stride_bytes": Field("int", optional=True, non_negative=True),
    "local_alias_address": Field("int", optional=True, check=_address),
    "load_store_bytes_per_cycle": Field("number", optional=True, positive=True),
    "reserve_kib": Field("int", optional=True, non_negative=True),
}
#: The keys each kind of level requires, then those it may have.
LEVEL_KEYS = {
    "dram": (("peak_bandwidth_gbps", "efficiency"), ()),
    "sram": (("bandwidth_gbps",), ()),
    "private": (("load_store_bytes_per_cycle", "reserve_kib"),
                ("core_stride_bytes", "local_alias_address")),
}

CHIP_SCHEMA: dict[str, Field] = {
    "name": Field("str"),
    "description": Field("str", optional=True),
    "clock_mhz": Field("number", positive=True),
    "cores": Field("int", positive=True, check=lambda v: None if v <= MAX_CORES else
                    f"must be at most {MAX_CORES}, got {v}"),
    "dtypes": Field("list", item=Field("str")),
    "vector": Field("section", schema={
        # what a mix costs (sim/engine/vector.py: COMPUTE_MODELS); vliw_issue by default
        "model": Field("str", optional=True),
        "lane_width_bits": Field("int", positive=True),
        "pipeline_fill_cycles": Field("number", non_negative=True),
        "loop_overhead_cycles_per_tile": Field("number", non_negative=True),
        "units": Field("mapping", item=Field("int", positive=True)),
        "instructions": Field("mapping", item=Field("section", schema=_INSTRUCTION)),
    }),
    # the memory levels by name (ddr, shared_sram, l2, msmc...); each level's kind says
    # which of these keys it takes (LEVEL_KEYS), checked in sim/chip/levels.py
    "memory": Field("mapping", item=Field("section", schema=_LEVEL)),
    "dma": Field("section", schema={
        # which cores share a pool of engines (sim/engine/dma.py: DMA_MODELS); by default
        # per_core_engines with engines_per_core, shared_pool with controllers
        "model": Field("str", optional=True),
        "cores_per_pool": Field("int", optional=True, positive=True),
        # either engines private to each core ...
        "engines_per_core": Field("int", optional=True, positive=True),
        "engine_bandwidth_gbps": Field("number", optional=True, positive=True),
        # ... or a pool of transfer controllers shared by all cores
        "controllers": Field("list", optional=True, item=Field("section", schema=_CONTROLLER)),
        "setup_cycles": Field("number", non_negative=True),
        "burst_bytes": Field("int", positive=True),
    }),
    "tiling": Field("section", optional=True, schema={
        "policy": Field("str", check=lambda v: None if v in TILING_POLICIES else
                         f"must be one of {', '.join(TILING_POLICIES)}, got {v!r}"),
        "tile_bytes": Field("int", optional=True, positive=True),
    }),
    "call": Field("section", schema={
        "launch_cycles": Field("number", non_negative=True),
        "barrier_cycles": Field("number", non_negative=True),
    }),
    # plausible ranges of assumed values, by key path (see dspsim.sim.chip.ranges)
    "assumed_ranges": Field("mapping", optional=True, item=Field("section", schema={
        "low": Field("number", optional=True),
        "high": Field("number", optional=True),
        "reason": Field("str"),
    })),
    "example_addresses": Field("section", optional=True, schema={
        "shared_inputs": Field("list", item=Field("int", check=_address)),
        "shared_output": Field("int", check=_address),
        "private": Field("list", item=Field("int", check=_address)),
    }),
}

