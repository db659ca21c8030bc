"""What a call's cores are and do: their engines' names, each core's part, core groups.

Shared by the timeline (:mod:`dspsim.sim.engine.model`), the slice log
(:mod:`dspsim.sim.engine.slices`) and both fidelities' pipelines.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

#: Trace thread names of a core's engines, in display order.
LOAD, COMPUTE, STORE = "dma-in", "vector", "dma-out"
ENGINES = (LOAD, COMPUTE, STORE)
#: The pseudo-core that holds call-level slices (launch, barrier).
CALL_TRACK = -1
#: The model fidelities ``run_job`` accepts; the first is the default.
Fidelity = Literal["fast", "detailed"]
FIDELITIES: tuple[Fidelity, ...] = get_args(Fidelity)


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


# ----------------------------------------------------------------------------- core groups
@dataclass
class CoreGroup:
    """Cores that do the same work at the same instants; the first one is simulated.

    The others are its mirror images: same tiles (shifted by their first element), same
    transfer and compute times, on their own L2 ports of equal capacity.
    """

    members: list[CoreTiming]
    tiles: list[tuple[int, int]]  # the first member's tiles
    busy: dict[str, float]

    @property
    def core(self) -> int:
        return self.members[0].core

    @property
    def weight(self) -> int:
        return len(self.members)
