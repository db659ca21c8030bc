"""What each key of a chip file means, for the chip-key reference.

The reference (:mod:`dspsim.sim.chip.reference`) walks :data:`~dspsim.sim.chip.keys.CHIP_SCHEMA`
and takes each key's kind and constraints from it; this table adds what the schema cannot
say: the meaning, the unit of a number whose key names none, and the rule behind a custom
check. Keys are written as the schema walk spells them: ``<unit>``, ``<instruction>`` for
the free names of a mapping, ``<i>`` for a list position. A schema key missing here, or a
key here that the schema lacks, fails the reference's generation (and so the docs build).
"""
from __future__ import annotations

from dataclasses import dataclass

from dspsim.sim.chip.keys import ADDRESS_LIMIT, MAX_CORES, TILING_POLICIES
from dspsim.sim.chip.model import DTYPE_BITS


@dataclass(frozen=True)
class KeyDoc:
    """The prose of one key: its meaning, its unit when the key's name gives none, and
    the rule a custom check enforces (the schema's kinds and signs are added to it)."""

    meaning: str
    unit: str | None = None
    rule: str | None = None


_ADDRESS = f"below {ADDRESS_LIMIT:#x} (32-bit)"

KEY_DOCS: dict[str, KeyDoc] = {
    "name": KeyDoc("The chip's name as reports, traces and rows show it."),
    "description": KeyDoc("One line of prose; not part of the chip's digest."),
    "clock_mhz": KeyDoc("Core clock. Cycles are core cycles; time is cycles over this clock."),
    "cores": KeyDoc("Number of cores. Bit i of a core_mask selects core i.", unit="cores",
                    rule=f"at most {MAX_CORES}"),
    "dtypes": KeyDoc("Data types the vector unit computes in; an operator exists in each "
                     "(`fp_`, `hp_`, `bf_`).",
                     rule=f"each one of {', '.join(DTYPE_BITS)}; "
                          "`vector.lane_width_bits` a multiple of each one's width"),
    "vector": KeyDoc("The vector core of every core."),
    "vector.model": KeyDoc("How an instruction mix is costed, by name in the compute-model "
                           "registry (sim/engine/vector.py); absent: `vliw_issue`, the busiest "
                           "unit's issue cycles.", rule="a registered compute model"),
    "vector.lane_width_bits": KeyDoc("SIMD width: lanes = this / the dtype's bits."),
    "vector.pipeline_fill_cycles": KeyDoc("Latency before a tile's first result, paid per tile."),
    "vector.loop_overhead_cycles_per_tile": KeyDoc("Loop set-up and exit per tile."),
    "vector.units": KeyDoc("Functional units by kind (free names, e.g. `alu`, `mul`, `ldst`)."),
    "vector.units.<unit>": KeyDoc("How many units of this kind issue in parallel.",
                                  unit="units"),
    "vector.instructions": KeyDoc("Every vector instruction a kernel's mix may use; `load` "
                                  "and `store` are required."),
    "vector.instructions.<instruction>": KeyDoc(
        "An instruction: either `unit` and `occupancy_cycles`, or `expand`, never both."),
    "vector.instructions.<instruction>.unit": KeyDoc("The unit kind it issues on.",
                                                     rule="a name of `vector.units`"),
    "vector.instructions.<instruction>.occupancy_cycles": KeyDoc(
        "Cycles it holds its unit per vector. An iteration costs the busiest unit kind's "
        "total occupancy over its count (the issue bound)."),
    "vector.instructions.<instruction>.expand": KeyDoc(
        "For an instruction with no unit: the instructions it stands for (a software "
        "sequence); its cost follows from theirs. Expansions may nest, never loop."),
    "vector.instructions.<instruction>.expand.<instruction>": KeyDoc(
        "How many of that instruction one use takes.", unit="instructions per use",
        rule="a name of `vector.instructions`"),
    "memory": KeyDoc("The memory levels, by name (ddr, shared_sram, l2, msmc...): each a "
                     "window of addresses whose `kind` says which keys it takes. No two "
                     "windows may overlap."),
    "memory.<name>": KeyDoc("One memory level."),
    "memory.<name>.kind": KeyDoc("`dram` (external, shared; takes peak_bandwidth_gbps and "
                                 "efficiency), `sram` (on-chip, shared; bandwidth_gbps) or "
                                 "`private` (one per core; load_store_bytes_per_cycle, "
                                 "reserve_kib). Absent: private with a load/store port, dram "
                                 "with a peak or efficiency, sram otherwise.",
                                 rule="dram, sram or private"),
    "memory.<name>.label": KeyDoc("The level's name in reports and bounds (\"DDR\", "
                                  "\"shared SRAM\"); absent: the key's name."),
    "memory.<name>.base_address": KeyDoc("First byte address of the level (core 0's for a "
                                         "private level).", unit="byte address",
                                         rule=_ADDRESS),
    "memory.<name>.size_mib": KeyDoc("Capacity in MiB (or give size_kib); storage is "
                                     "allocated only when written."),
    "memory.<name>.size_kib": KeyDoc("Capacity in KiB (or give size_mib); per core for a "
                                     "private level."),
    "memory.<name>.peak_bandwidth_gbps": KeyDoc("A dram level's peak bandwidth, shared "
                                                "max-min fairly by the transfers in flight."),
    "memory.<name>.efficiency": KeyDoc("A dram level's achievable share of peak (page misses, "
                                       "refresh, bus turnaround): achievable = peak × this.",
                                       unit="fraction", rule="in (0, 1]"),
    "memory.<name>.bandwidth_gbps": KeyDoc("An sram level's bandwidth, shared by all "
                                           "transfers to or from it."),
    "memory.<name>.core_stride_bytes": KeyDoc("A private level: distance from core n's window "
                                              "to core n+1's; absent or 0: one window, local "
                                              "to each core.", rule="at least the level's size"),
    "memory.<name>.local_alias_address": KeyDoc("A private level: where each core also sees "
                                                "its own window; such an address means core 0 "
                                                "unless a call says `core=`.",
                                                unit="byte address", rule=_ADDRESS),
    "memory.<name>.load_store_bytes_per_cycle": KeyDoc("A private level's port: bounds "
                                                       "private-storage calls and the DMA "
                                                       "into and out of it."),
    "memory.<name>.reserve_kib": KeyDoc("A private level: kept out of tile buffers (stack, "
                                        "code, runtime data).", rule="less than the size"),
    "dma": KeyDoc("The DMA: engines of each core's own (`engines_per_core`, "
                  "`engine_bandwidth_gbps`) or a pool of transfer controllers every core "
                  "shares (`controllers`), exactly one of the two."),
    "dma.model": KeyDoc("Which cores share a pool of engines, by name in the DMA-model "
                        "registry (sim/engine/dma.py); absent: `per_core_engines` with "
                        "engines_per_core, `shared_pool` with controllers.",
                        rule="a registered DMA model"),
    "dma.cores_per_pool": KeyDoc("For a DMA model that groups cores: how many cores share one "
                                 "pool.", unit="cores"),
    "dma.engines_per_core": KeyDoc("Engines private to each core.", unit="engines"),
    "dma.engine_bandwidth_gbps": KeyDoc("Each private engine's bandwidth cap."),
    "dma.controllers": KeyDoc("Groups of identical transfer controllers shared by all cores "
                              "(EDMA3 on a C6678); a transfer queues for a free one."),
    "dma.controllers.<i>": KeyDoc("One group of controllers."),
    "dma.controllers.<i>.name": KeyDoc("The group's name; its controllers show in traces as "
                                       "`name.0`, `name.1`, ..."),
    "dma.controllers.<i>.count": KeyDoc("Controllers in the group.", unit="controllers",
                                        rule=f"at most {MAX_CORES}"),
    "dma.controllers.<i>.bandwidth_gbps": KeyDoc("Each controller's bandwidth; or give "
                                                 "`width_bits` and `clock_divider` instead."),
    "dma.controllers.<i>.width_bits": KeyDoc("Data-bus width; bandwidth = width / 8 × chip "
                                             "clock / clock_divider.", rule="whole bytes"),
    "dma.controllers.<i>.clock_divider": KeyDoc("The controller's fabric clock is the chip "
                                                "clock over this.", unit="ratio"),
    "dma.controllers.<i>.reaches": KeyDoc("Regions the group can move data to and from "
                                          "(default both).", rule="`ddr`, `shared_sram`"),
    "dma.setup_cycles": KeyDoc("Latency of programming and submitting one transfer; it "
                               "holds no engine."),
    "dma.burst_bytes": KeyDoc("Burst size: the unit of round-robin arbitration when "
                              "transfers are timed burst by burst."),
    "tiling": KeyDoc("How the operator library picks tile sizes (default: optimal)."),
    "tiling.policy": KeyDoc("`optimal`: the tile that minimises the call's predicted time; "
                            "`fixed`: always `tile_bytes`.",
                            rule=f"one of {', '.join(TILING_POLICIES)}"),
    "tiling.tile_bytes": KeyDoc("The fixed tile size per operand.",
                                rule="with policy fixed, and only then"),
    "call": KeyDoc("Fixed costs of a call."),
    "call.launch_cycles": KeyDoc("Dispatch to the cores of the mask, before any tile."),
    "call.barrier_cycles": KeyDoc("End-of-call synchronisation after the slowest core."),
    "assumed_ranges": KeyDoc("Plausible ranges of assumed values, by key path; they give "
                             "an estimate's uncertainty band (`--uncertainty`). A range can "
                             "also be written in the value's comment: `# assumed, range "
                             "LOW..HIGH: why`."),
    "assumed_ranges.<name>": KeyDoc("The range of the value at that key path."),
    "assumed_ranges.<name>.low": KeyDoc("The lowest plausible value.", unit="the key's unit"),
    "assumed_ranges.<name>.high": KeyDoc("The highest plausible value.", unit="the key's unit"),
    "assumed_ranges.<name>.reason": KeyDoc("Why the value may lie anywhere in the range."),
    "example_addresses": KeyDoc("Where the operator library's C examples place operands; "
                                "`dspsim run` puts generated operands there when they fit."),
    "example_addresses.shared_inputs": KeyDoc("Inputs of shared-storage examples, in order.",
                                              unit="byte addresses", rule=_ADDRESS),
    "example_addresses.shared_output": KeyDoc("Output of shared-storage examples.",
                                              unit="byte address", rule=_ADDRESS),
    "example_addresses.private": KeyDoc("Private-storage examples: inputs, then output.",
                                        unit="byte addresses", rule=_ADDRESS),
}
