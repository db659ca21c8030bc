"""DMA shared within clusters of cores: ``dma.model: cluster_pools``.

Many-core DSPs group their cores in clusters, each cluster with transfer controllers of
its own that only its cores use: a transfer queues for a controller of its core's cluster,
never of another. Every cluster holds one copy of the chip file's ``dma.controllers``;
``dma.cores_per_pool`` cores make a cluster (core ``c`` is in cluster
``c // cores_per_pool``). With one core per cluster this is ``per_core_engines`` with
controllers; with every core in one cluster, ``shared_pool``.
"""
from __future__ import annotations

from dspsim.sim.chip.model import DmaConfig
from dspsim.sim.engine.dma import register_dma_model


class ClusterPools:
    """A pool of transfer controllers per cluster of ``dma.cores_per_pool`` cores."""

    name = "cluster_pools"
    engines_from = "controllers"
    uses_cores_per_pool = True

    def pool_of(self, dma: DmaConfig, core: int) -> int:
        return core // (dma.cores_per_pool or 1)

    def pool_label(self, dma: DmaConfig, pool: int) -> str:
        return f"cluster {pool} "


register_dma_model(ClusterPools())
