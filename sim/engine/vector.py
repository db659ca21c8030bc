"""Cost of vector work on one core: a VLIW issue bound over the chip's functional units.

An instruction the chip has no unit for (a C66x has no special-function unit: its exp and
divide are software sequences) is defined in the chip's config as the instructions it
expands to; the mix is expanded here, once, and both fidelities cost the expanded mix.

The cost is a compute model (:class:`ComputeModel`), named by the chip file's
``vector.model`` and looked up in :data:`COMPUTE_MODELS`; ``vliw_issue`` is the built-in
one. Another registers itself with :func:`register_compute_model`.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Protocol

from dspsim.sim.chip.model import DTYPE_BITS, ChipConfig
from dspsim.sim.errors import ConfigError


@dataclass(frozen=True)
class VectorCost:
    """The per-iteration cost of an instruction mix on one chip and dtype."""

    lanes: int
    mix: Mapping[str, int]  # the unit-issued instructions of one iteration, expansions resolved
    issue_cycles: float  # max over units of (occupancy on that unit / units of that kind)
    l2_cycles: float  # the iteration's loads and stores at the L2 load/store bandwidth
    unit_cycles: Mapping[str, float]
    fill_cycles: float
    overhead_cycles: float

    @property
    def iteration_cycles(self) -> float:
        return max(self.issue_cycles, self.l2_cycles)

    @property
    def bounding_unit(self) -> str:
        """The chip's functional unit that bounds an iteration, or "L2 port" when the
        loads and stores outrun the L2's bandwidth (the roofline's name for it)."""
        if self.l2_cycles > self.issue_cycles:
            return "L2 port"
        return max(self.unit_cycles, key=self.unit_cycles.__getitem__)

    def iterations(self, elements: int) -> int:
        return math.ceil(elements / self.lanes)

    def tile_cycles(self, elements: int) -> float:
        """Cycles to process one tile of ``elements``: fill, loop overhead, iterations."""
        if elements <= 0:
            return 0.0
        return (self.fill_cycles + self.overhead_cycles
                + self.iterations(elements) * self.iteration_cycles)


def vector_cost(config: ChipConfig, dtype: str, mix: Mapping[str, int]) -> VectorCost:
    """Cost one vector iteration of ``mix`` on ``config`` for ``dtype``.

    Instructions the chip defines as expansions are replaced by what they expand to; the
    iteration then costs the busiest unit's occupancy over its count, or the L2 load/store
    bandwidth if that is slower.
    """
    vec = config.vector
    for instruction in mix:
        if instruction not in vec.instructions:
            raise ConfigError(
                f"{config.source}: vector.instructions has no {instruction!r}, which this kernel "
                f"issues; add it with its unit and occupancy_cycles, or with expand (the "
                f"instructions it stands for) (known: {', '.join(vec.instructions)})")
    issued = vec.expand(mix)
    per_unit = {unit: 0.0 for unit in vec.units}
    for instruction, count in issued.items():
        unit, occupancy = vec.instructions[instruction].occupancy
        per_unit[unit] += count * occupancy
    unit_cycles = {unit: load / vec.units[unit] for unit, load in per_unit.items()}
    vector_bytes = vec.lane_width_bits // 8
    l2_bytes = (issued.get("load", 0) + issued.get("store", 0)) * vector_bytes
    return VectorCost(
        lanes=vec.lane_width_bits // DTYPE_BITS[dtype],
        mix=MappingProxyType(issued),
        issue_cycles=max(unit_cycles.values()),
        l2_cycles=l2_bytes / config.l2.load_store_bytes_per_cycle,
        unit_cycles=unit_cycles,
        fill_cycles=vec.pipeline_fill_cycles,
        overhead_cycles=vec.loop_overhead_cycles_per_tile,
    )


class ComputeModel(Protocol):
    """What one vector iteration of an instruction mix costs on a chip."""

    #: the name a chip file gives under ``vector.model``
    name: str

    def cost(self, config: ChipConfig, dtype: str, mix: Mapping[str, int]) -> VectorCost:
        """The per-iteration cost of ``mix`` in ``dtype``; a ConfigError for an
        instruction the chip cannot run."""
        ...


class VliwIssue:
    """The VLIW issue bound of :func:`vector_cost`: the busiest unit, or L2 load/store."""

    name = "vliw_issue"

    def cost(self, config: ChipConfig, dtype: str, mix: Mapping[str, int]) -> VectorCost:
        return vector_cost(config, dtype, mix)


#: The compute models by the name a chip file gives them.
COMPUTE_MODELS: dict[str, ComputeModel] = {}


def register_compute_model(model: ComputeModel) -> ComputeModel:
    """Add ``model`` to :data:`COMPUTE_MODELS` under its ``name``; returns it."""
    COMPUTE_MODELS[model.name] = model
    return model


register_compute_model(VliwIssue())


def compute_model(name: str, where: str = "vector.model") -> ComputeModel:
    """The compute model called ``name``; a ConfigError naming the known ones if none is."""
    if name not in COMPUTE_MODELS:
        raise ConfigError(f"{where}: unknown compute model {name!r}; known models: "
                          f"{', '.join(sorted(COMPUTE_MODELS))}")
    return COMPUTE_MODELS[name]


def call_cost(config: ChipConfig, dtype: str, mix: Mapping[str, int]) -> VectorCost:
    """The cost of one vector iteration of ``mix`` by the chip's own compute model."""
    return compute_model(config.vector.model).cost(config, dtype, mix)
