"""DMA engines and how a transfer finds one.

A chip describes its DMA either as engines private to each core or as a pool of transfer
controllers that every core shares (the C6678's EDMA3). To the model both are an
:class:`EnginePool`: a transfer asks the pool of its core for an engine that reaches its
region, holds it for the setup and the data, and gives it back. A pool serves its waiting
transfers first come, first served; when several engines are free, the fastest takes the
transfer, and a much slower one only if it would still finish first. Which description a chip uses changes only which pool a core asks.
"""
from __future__ import annotations

from collections import deque
from typing import Callable

from dspsim.sim.chip.load import ChipConfig


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


def engine_pools(config: ChipConfig, cores: tuple[int, ...],
                 clock: Callable[[], float]) -> dict[int, EnginePool]:
    """The pool each of ``cores`` takes its engines from (one object for a shared pool);
    ``clock()`` is the simulation's current cycle."""
    dma = config.dma

    def build(prefix: str) -> EnginePool:
        return EnginePool([Engine(prefix + spec.name, config.bytes_per_cycle(spec.bandwidth_gbps),
                                  spec.regions) for spec in dma.engines], clock)

    if dma.shared:
        pool = build("")
        return {core: pool for core in cores}
    return {core: build(f"core {core} ") for core in cores}
