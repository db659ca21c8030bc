"""What a chip is, once its description is validated: immutable dataclasses.

:class:`ChipConfig` and its parts are built by :func:`dspsim.sim.chip.load.config_from_dict`
from a chip file; the simulator reads them and nothing else.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Mapping

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

    def expand(self, mix: Mapping[str, int]) -> dict[str, int]:
        """The unit-issued instructions that ``mix`` comes to, expansions resolved.

        Every name in ``mix`` must be one of :attr:`instructions`.
        """
        out: dict[str, int] = {}
        for name, count in mix.items():
            for issued, per_use in self.issued[name].items():
                out[issued] = out.get(issued, 0) + count * per_use
        return out


@dataclass(frozen=True)
class RegionConfig:
    """A shared memory region (DDR or shared SRAM)."""

    name: str
    base_address: int
    size_bytes: int
    bandwidth_gbps: float  # what the link sustains (achievable, not peak)
    peak_bandwidth_gbps: float

    @property
    def end_address(self) -> int:
        return self.base_address + self.size_bytes


@dataclass(frozen=True)
class L2Config:
    base_address: int
    core_stride_bytes: int  # 0: every core sees only its own L2, at base_address
    local_alias_address: int | None
    size_bytes: int
    load_store_bytes_per_cycle: float
    reserve_bytes: int


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

    engines: tuple[EngineSpec, ...]  # per core (shared=False) or of the whole chip's pool
    shared: bool
    setup_cycles: float
    burst_bytes: int

    def describe(self) -> str:
        """One line: '2 per core x 12.8 GB/s' or the pool's controller groups."""
        groups: dict[tuple[str, float], int] = {}
        for engine in self.engines:
            key = (engine.name.rsplit(".", 1)[0], engine.bandwidth_gbps)
            groups[key] = groups.get(key, 0) + 1
        parts = [f"{count} x {gbps:.4g} GB/s" + (f" ({name})" if self.shared else "")
                 for (name, gbps), count in groups.items()]
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
    ddr: RegionConfig
    shared_sram: RegionConfig
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
        return (self.ddr, self.shared_sram)

