"""DMA engines and how a transfer finds one.

A chip describes its DMA either as engines private to each core or as a pool of transfer
controllers that every core shares (the C6678's EDMA3). To the model both are an
:class:`~dspsim.sim.engine.pool.EnginePool`: a transfer asks the pool of its core for an
engine that reaches its region, holds it while its data moves, and gives it back. Which
description a chip uses changes only which pool a core asks. How a pool picks an engine
for a transfer is :mod:`dspsim.sim.engine.pool`'s.

Which cores share a pool is a :class:`DmaModel`, named by the chip file's ``dma.model``
and looked up in :data:`DMA_MODELS`. Two are built in (``per_core_engines``,
``shared_pool``); a module of this folder named ``dma_<anything>.py`` that calls
:func:`register_dma_model` adds another (see :mod:`dspsim.sim.engine.dma_clusters`).
"""
from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Callable
from typing import Protocol

from dspsim.sim.chip.model import ChipConfig, DmaConfig
from dspsim.sim.engine.pool import Engine, EnginePool
from dspsim.sim.errors import ConfigError


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


def engine_on(config: ChipConfig, name: str, core: int, other: int) -> str:
    """The name of the engine of ``other``'s pool that is ``name`` in ``core``'s pool."""
    model = dma_model(config.dma.model)
    mine = model.pool_label(config.dma, model.pool_of(config.dma, core))
    theirs = model.pool_label(config.dma, model.pool_of(config.dma, other))
    return theirs + name[len(mine):] if name.startswith(mine) else name


def engine_pools(config: ChipConfig, cores: tuple[int, ...],
                 clock: Callable[[], float],
                 made: dict[int, EnginePool] | None = None) -> dict[int, EnginePool]:
    """The pool each of ``cores`` takes its engines from (one object per pool the chip's
    DMA model makes them share); ``clock()`` is the simulation's current cycle. ``made``
    holds the pools built so far, by pool number, and gains the new ones."""
    model = dma_model(config.dma.model)
    links = {r.name: config.bytes_per_cycle(r.bandwidth_gbps) for r in config.shared_regions}
    port = config.l2.load_store_bytes_per_cycle
    made = {} if made is None else made
    pools = {}
    for core in cores:
        key = model.pool_of(config.dma, core)
        if key not in made:
            prefix = model.pool_label(config.dma, key)
            made[key] = EnginePool([Engine(prefix + spec.name,
                                           config.bytes_per_cycle(spec.bandwidth_gbps),
                                           spec.regions) for spec in config.dma.engines],
                                   clock, links, port, config.dma.burst_bytes)
        pools[core] = made[key]
    return pools
