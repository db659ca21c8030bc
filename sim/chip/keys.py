"""The keys a chip file may hold, and what each must be (see :mod:`dspsim.sim.chip.schema`)."""
from __future__ import annotations

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

CHIP_SCHEMA: dict[str, Field] = {
    "name": Field("str"),
    "description": Field("str", optional=True),
    "clock_mhz": Field("number", positive=True),
    "cores": Field("int", positive=True, check=lambda v: None if v <= MAX_CORES else
                    f"must be at most {MAX_CORES}, got {v}"),
    "dtypes": Field("list", item=Field("str")),
    "vector": Field("section", schema={
        "lane_width_bits": Field("int", positive=True),
        "pipeline_fill_cycles": Field("number", non_negative=True),
        "loop_overhead_cycles_per_tile": Field("number", non_negative=True),
        "units": Field("mapping", item=Field("int", positive=True)),
        "instructions": Field("mapping", item=Field("section", schema=_INSTRUCTION)),
    }),
    "memory": Field("section", schema={
        "ddr": Field("section", schema={
            "base_address": Field("int", check=_address),
            "size_mib": Field("int", positive=True),
            "peak_bandwidth_gbps": Field("number", positive=True),
            "efficiency": Field("number", check=_unit_fraction),
        }),
        "shared_sram": Field("section", schema={
            "base_address": Field("int", check=_address),
            "size_kib": Field("int", positive=True),
            "bandwidth_gbps": Field("number", positive=True),
        }),
        "l2": Field("section", schema={
            "base_address": Field("int", check=_address),
            "core_stride_bytes": Field("int", optional=True, non_negative=True),
            "local_alias_address": Field("int", optional=True, check=_address),
            "size_kib": Field("int", positive=True),
            "load_store_bytes_per_cycle": Field("number", positive=True),
            "reserve_kib": Field("int", non_negative=True),
        }),
    }),
    "dma": Field("section", schema={
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

