"""What a chip is, once its description is validated: immutable dataclasses.

:class:`ChipConfig` and its parts are built by :func:`dspsim.sim.chip.load.config_from_dict`
from a chip file; the simulator reads them and nothing else.
"""
from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType

#: Width in bits of every data type a chip may list under ``dtypes``.
DTYPE_BITS = MappingProxyType({"fp32": 32, "fp16": 16, "bf16": 16})


@dataclass(frozen=True)
class Instruction:
    """One vector instruction: the unit it issues on and for how many cycles, or the
    instructions it expands to when the chip has no unit for it."""

    unit: str | None
    occupancy_cycles: float | None
    expand: Mapping[str, int] | None = None  # instruction -> count, for software sequences

    @property
    def issues(self) -> bool:
        """Whether the instruction occupies a unit itself (rather than expanding)."""
        return self.expand is None

    @property
    def occupancy(self) -> tuple[str, float]:
        """The unit an issued instruction occupies, and for how many cycles."""
        assert self.unit is not None and self.occupancy_cycles is not None, \
            "an instruction that expands occupies no unit itself"
        return self.unit, self.occupancy_cycles


@dataclass(frozen=True)
class VectorConfig:
    lane_width_bits: int
    pipeline_fill_cycles: float
    loop_overhead_cycles_per_tile: float
    units: Mapping[str, int]
    instructions: Mapping[str, Instruction]
    #: every instruction as the counts of unit-issued instructions it finally comes to
    #: (an issued instruction maps to itself once), nested expansions resolved
    issued: Mapping[str, Mapping[str, int]]
    #: the compute model (:data:`dspsim.sim.engine.vector.COMPUTE_MODELS`) that costs a mix
    model: str = "vliw_issue"

    def expand(self, mix: Mapping[str, int]) -> dict[str, int]:
        """The unit-issued instructions that ``mix`` comes to, expansions resolved.

        Every name in ``mix`` must be one of :attr:`instructions`.
        """
        out: dict[str, int] = {}
        for name, count in mix.items():
            for issued, per_use in self.issued[name].items():
                out[issued] = out.get(issued, 0) + count * per_use
        return out


#: The kinds of memory level a chip file may describe under ``memory``: ``dram`` (off-chip,
#: a peak bandwidth and the share of it achieved), ``sram`` (on-chip memory every core
#: reaches through its DMA) and ``private`` (each core's own L2, which its vector unit
#: reads; exactly one per chip).
LEVEL_KINDS = ("dram", "sram", "private")


@dataclass(frozen=True)
class RegionConfig:
    """A memory level that every core reaches (DRAM or an on-chip SRAM) and its link."""

    name: str  # its key under ``memory``: what spans, byte ledgers and links are named
    base_address: int
    size_bytes: int
    bandwidth_gbps: float  # what its link sustains (achievable, not peak)
    peak_bandwidth_gbps: float
    kind: str = "sram"  # "dram" or "sram" (see LEVEL_KINDS)
    label: str = ""  # its name in reports and roofline terms ("DDR", "shared SRAM")

    @property
    def end_address(self) -> int:
        return self.base_address + self.size_bytes


@dataclass(frozen=True)
class L2Config:
    """The private level: each core's own memory, its vector unit's load/store port."""

    base_address: int
    core_stride_bytes: int  # 0: every core sees only its own L2, at base_address
    local_alias_address: int | None
    size_bytes: int
    load_store_bytes_per_cycle: float
    reserve_bytes: int
    name: str = "l2"  # its key under ``memory``


@dataclass(frozen=True)
class EngineSpec:
    """One DMA engine (or transfer controller): its name, bandwidth and reach."""

    name: str
    bandwidth_gbps: float
    regions: frozenset[str]  # the shared regions (ddr, shared_sram) it moves data to and from


@dataclass(frozen=True)
class DmaConfig:
    """How the cores move tiles: engines of their own, or a pool they all share.

    The two are the same interface to the model: a transfer takes a free engine that
    reaches its region (from its core's engines, or from the shared pool), pays
    ``setup_cycles`` on it, then moves its bytes at most at the engine's bandwidth.
    """

    engines: tuple[EngineSpec, ...]  # the engines of one pool (see the DMA model)
    shared: bool  # whether cores share a pool (the DMA model puts several in one)
    setup_cycles: float
    burst_bytes: int
    #: the DMA model (:data:`dspsim.sim.engine.dma.DMA_MODELS`): which cores share a pool
    model: str = "per_core_engines"
    #: cores per pool, for models that group cores (``cluster_pools``)
    cores_per_pool: int | None = None

    def describe(self) -> str:
        """One line: '2 x 12.8 GB/s per core', the pool's controller groups, or those of
        each pool of ``cores_per_pool`` cores."""
        groups: dict[tuple[str, float], int] = {}
        for engine in self.engines:
            key = (engine.name.rsplit(".", 1)[0], engine.bandwidth_gbps)
            groups[key] = groups.get(key, 0) + 1
        parts = [f"{count} x {gbps:.4g} GB/s" + (f" ({name})" if self.shared else "")
                 for (name, gbps), count in groups.items()]
        if self.cores_per_pool is not None:
            return f"{', '.join(parts)} per cluster of {self.cores_per_pool} cores"
        return (f"shared pool: {', '.join(parts)}" if self.shared
                else f"{', '.join(parts)} per core")


@dataclass(frozen=True)
class TilingConfig:
    """``optimal``: the tile size that minimises the call's time; ``fixed``: ``tile_bytes``."""

    policy: str = "optimal"
    tile_bytes: int | None = None


@dataclass(frozen=True)
class ExampleAddresses:
    shared_inputs: tuple[int, ...]
    shared_output: int
    private: tuple[int, ...]


@dataclass(frozen=True)
class ChipConfig:
    """A validated chip description. Build it with :func:`load_config`."""

    name: str
    description: str
    source: str
    clock_mhz: float
    cores: int
    dtypes: tuple[str, ...]
    vector: VectorConfig
    #: the levels every core reaches, in the chip file's order (exactly one is DRAM)
    levels: tuple[RegionConfig, ...]
    l2: L2Config
    dma: DmaConfig
    launch_cycles: float
    barrier_cycles: float
    example_addresses: ExampleAddresses | None
    tiling: TilingConfig = TilingConfig()

    @cached_property
    def model_digest(self) -> str:
        """A digest of every value of the description (computed once): equal digests,
        equal timings, so that results derived from the chip can be remembered by it."""
        return hashlib.sha256(repr(self).encode("utf-8")).hexdigest()

    def bytes_per_cycle(self, gbps: float) -> float:
        """Convert a bandwidth in GB/s (1e9 bytes/s) to bytes per core cycle."""
        return gbps * 1e3 / self.clock_mhz

    def lanes(self, dtype: str) -> int:
        """Elements of ``dtype`` in one vector register."""
        return self.vector.lane_width_bits // DTYPE_BITS[dtype]

    @property
    def shared_regions(self) -> tuple[RegionConfig, ...]:
        """The levels every core reaches (DRAM first where the file lists it first)."""
        return self.levels

    @property
    def ddr(self) -> RegionConfig:
        """The chip's DRAM level: what reports call DDR and the DDR counter follows."""
        return next(level for level in self.levels if level.kind == "dram")

    def level(self, name: str) -> RegionConfig | None:
        """The shared level called ``name``, or None."""
        return next((level for level in self.levels if level.name == name), None)

