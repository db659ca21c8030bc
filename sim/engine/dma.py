"""DMA engines, how a transfer finds one, and the DMA models a chip file names.

A chip describes its DMA either as engines private to each core or as a pool of transfer
controllers that every core shares (the C6678's EDMA3). To the model both are an
:class:`EnginePool`: a transfer asks the pool of its core for an engine that reaches its
region, holds it for the setup and the data, and gives it back. A pool serves its waiting
transfers first come, first served; when several engines are free, the fastest takes the
transfer, and a much slower one only if it would still finish first.

Which description a chip uses changes only which pool a core asks: that is a
:class:`DmaModel`, named by the chip file's ``dma.model`` and looked up in
:data:`DMA_MODELS`. Two are built in (``per_core_engines``, ``shared_pool``); a module
of this folder named ``dma_<anything>.py`` that calls :func:`register_dma_model` adds
another (see :mod:`dspsim.sim.engine.dma_clusters`).
"""
from __future__ import annotations

import importlib
import os
import pkgutil
from collections import deque
from typing import Callable, Protocol

from dspsim.sim.chip.model import ChipConfig, DmaConfig
from dspsim.sim.errors import ConfigError


class Engine:
    """One DMA engine or transfer controller: its rate and the regions it reaches."""

    __slots__ = ("name", "rate", "regions", "busy", "free_at")

    def __init__(self, name: str, rate: float, regions: frozenset[str]) -> None:
        self.name = name
        self.rate = rate  # bytes per core cycle
        self.regions = regions
        self.busy = False
        self.free_at = 0.0  # when its transfer in hand should end, at its own rate

    def __repr__(self) -> str:
        return f"Engine({self.name!r}, {self.rate:.3f} B/cycle)"


class EnginePool:
    """Engines shared by some cores, granted to transfers first come, first served.

    A transfer takes the fastest free engine that reaches its region, unless a faster
    busy one would finish it sooner (its transfer in hand ending at its own rate, then
    this one at its rate): then it waits for that one, as a library that maps transfers
    to the queues of a chip's controllers would not put one on a controller many times
    slower than the next to free. With engines of one speed this is plain first come,
    first served.
    """

    def __init__(self, engines: list[Engine], clock: Callable[[], float]) -> None:
        # fastest first, so that a free fast engine is always the one taken
        self.engines = sorted(engines, key=lambda e: -e.rate)
        self.clock = clock
        self.waiting: deque[tuple[str, float, Callable[[Engine], None]]] = deque()

    def _worth_taking(self, engine: Engine, region: str, nbytes: float) -> bool:
        """Whether ``engine`` (free) ends a transfer of ``nbytes`` no later than waiting
        for a busy faster engine would."""
        now = self.clock()
        alone = nbytes / engine.rate
        for other in self.engines:
            if other.rate <= engine.rate:
                break  # sorted fastest first: the rest are no faster
            if other.busy and region in other.regions and \
                    max(other.free_at - now, 0.0) + nbytes / other.rate < alone:
                return False
        return True

    def _grant(self, engine: Engine, nbytes: float, then: Callable[[Engine], None]) -> None:
        engine.busy = True
        engine.free_at = self.clock() + nbytes / engine.rate
        then(engine)

    def request(self, region: str, nbytes: float, then: Callable[[Engine], None]) -> None:
        """Call ``then(engine)`` with an engine reaching ``region`` for a transfer of
        ``nbytes``, now or once a suitable one frees."""
        for engine in self.engines:
            if not engine.busy and region in engine.regions:
                if self._worth_taking(engine, region, nbytes):
                    self._grant(engine, nbytes, then)
                    return
                break  # the fastest free one is not worth it: no slower one is
        self.waiting.append((region, nbytes, then))

    def release(self, engine: Engine) -> None:
        """``engine`` has finished its transfer: hand it to the first waiter it suits."""
        engine.busy = False
        for index, (region, nbytes, then) in enumerate(self.waiting):
            if region in engine.regions and self._worth_taking(engine, region, nbytes):
                del self.waiting[index]
                self._grant(engine, nbytes, then)
                return


class DmaModel(Protocol):
    """How a chip's cores share DMA engines: which pool each core's transfers use.

    Every pool holds one copy of the chip's ``dma`` engines (``engines_per_core`` engines,
    or the ``controllers`` groups). The model decides only which cores share a pool.
    """

    #: the name a chip file gives under ``dma.model``
    name: str
    #: the keys of the ``dma`` section that describe its engines: ``"per_core"``
    #: (engines_per_core, engine_bandwidth_gbps) or ``"controllers"``
    engines_from: str
    #: whether it reads ``dma.cores_per_pool`` (required then, refused otherwise)
    uses_cores_per_pool: bool

    def pool_of(self, dma: DmaConfig, core: int) -> int:
        """The pool that ``core``'s transfers use (pools are numbered from 0)."""
        ...

    def pool_label(self, dma: DmaConfig, pool: int) -> str:
        """The prefix of a pool's engine names in traces (``"core 3 "``, ``""``)."""
        ...


class PerCoreEngines:
    """Every core has engines of its own (``engines_per_core``)."""

    name = "per_core_engines"
    engines_from = "per_core"
    uses_cores_per_pool = False

    def pool_of(self, dma: DmaConfig, core: int) -> int:
        return core

    def pool_label(self, dma: DmaConfig, pool: int) -> str:
        return f"core {pool} "


class SharedPool:
    """One pool of transfer controllers serves every core (the C6678's EDMA3)."""

    name = "shared_pool"
    engines_from = "controllers"
    uses_cores_per_pool = False

    def pool_of(self, dma: DmaConfig, core: int) -> int:
        return 0

    def pool_label(self, dma: DmaConfig, pool: int) -> str:
        return ""


#: The DMA models by the name a chip file gives them.
DMA_MODELS: dict[str, DmaModel] = {}


def register_dma_model(model: DmaModel) -> DmaModel:
    """Add ``model`` to :data:`DMA_MODELS` under its ``name``; returns it."""
    DMA_MODELS[model.name] = model
    return model


register_dma_model(PerCoreEngines())
register_dma_model(SharedPool())
_DISCOVERED = False


def dma_models() -> dict[str, DmaModel]:
    """Every DMA model, including those of this folder's ``dma_*.py`` modules."""
    global _DISCOVERED
    if not _DISCOVERED:
        _DISCOVERED = True
        for info in pkgutil.iter_modules([os.path.dirname(__file__)]):
            if info.name.startswith("dma_"):
                importlib.import_module(f"{__package__}.{info.name}")
    return DMA_MODELS


def dma_model(name: str, where: str = "dma.model") -> DmaModel:
    """The DMA model called ``name``; a ConfigError naming the known ones if none is."""
    models = dma_models()
    if name not in models:
        raise ConfigError(f"{where}: unknown DMA model {name!r}; known models: "
                          f"{', '.join(sorted(models))}")
    return models[name]


def sharing_cores(config: ChipConfig, cores: tuple[int, ...]) -> list[list[int]]:
    """``cores`` grouped by the DMA pool they share, in pool order."""
    model = dma_model(config.dma.model)
    pools: dict[int, list[int]] = {}
    for core in cores:
        pools.setdefault(model.pool_of(config.dma, core), []).append(core)
    return [pools[key] for key in sorted(pools)]


def engine_pools(config: ChipConfig, cores: tuple[int, ...],
                 clock: Callable[[], float],
                 made: dict[int, EnginePool] | None = None) -> dict[int, EnginePool]:
    """The pool each of ``cores`` takes its engines from (one object per pool the chip's
    DMA model makes them share); ``clock()`` is the simulation's current cycle. ``made``
    holds the pools built so far, by pool number, and gains the new ones."""
    model = dma_model(config.dma.model)
    made = {} if made is None else made
    pools = {}
    for core in cores:
        key = model.pool_of(config.dma, core)
        if key not in made:
            prefix = model.pool_label(config.dma, key)
            made[key] = EnginePool([Engine(prefix + spec.name,
                                           config.bytes_per_cycle(spec.bandwidth_gbps),
                                           spec.regions) for spec in config.dma.engines], clock)
        pools[core] = made[key]
    return pools
