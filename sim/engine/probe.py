"""DMA experiments: transfers timed on their own, the way published DMA benchmarks are run.

Vendors characterise a DMA controller with bare transfers, not operator calls: one
transfer of a few bytes to measure the overhead from trigger to completion, one large
transfer per transfer controller for its maximum throughput, several controllers at once
for the throughput a shared memory keeps under load. :func:`run_transfers` sets up such an
experiment on a chip's own timeline (its DDR and shared-SRAM links, each core's L2 port,
its setup cycles and burst size) and names the engine that moves each transfer, as a
benchmark does when it maps its channels to a controller's queue. Engines are taken as
named, never chosen by the pool, so an experiment measures one controller's path and not
the pool's policy.

``fast`` times the data as fluid flows (max-min fair sharing of every link); ``detailed``
as bursts arbitrated round-robin on every link, as the two call fidelities do.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import NamedTuple

from dspsim.sim.chip.load import ChipConfig
from dspsim.sim.engine.detailed import BurstDMA, _BurstTransfer
from dspsim.sim.engine.model import FIDELITIES, LOAD, STORE, Timeline
from dspsim.sim.engine.network import FlowNetwork
from dspsim.sim.errors import ArgumentError

#: The directions a probe transfer may take: into a core's L2, or out of it.
DIRECTIONS = (LOAD, STORE)


@dataclass(frozen=True)
class ProbeTransfer:
    """One transfer of an experiment.

    ``nbytes`` move between shared region ``region`` (``ddr`` or ``shared_sram``) and the L2
    of core ``core``, into the L2 for ``direction`` ``"dma-in"``, out of it for
    ``"dma-out"``; or, with ``to_region``, from ``region`` to that other shared region (a
    copy between shared memories, which no L2 port sees; ``core`` and ``direction`` are then
    unused). Engine ``engine`` (a name of ``config.dma.engines``, e.g.
    ``edma3cc1.tc.0``) moves it; it is triggered at cycle ``start`` and pays the chip's
    setup cycles before its data moves. Transfers given to one engine move one after the
    other, in the order given.
    """

    engine: str
    region: str
    nbytes: int
    core: int = 0
    direction: str = LOAD
    start: float = 0.0
    to_region: str | None = None


class _Span(NamedTuple):
    region: str


class _Operand(NamedTuple):
    span: _Span


class _Group(NamedTuple):
    core: int
    weight: int = 1


def _check(config: ChipConfig, transfers: list[ProbeTransfer], fidelity: str) -> None:
    """Every problem of an experiment as one ArgumentError, before anything runs."""
    if fidelity not in FIDELITIES:
        raise ArgumentError(f"fidelity={fidelity!r} is not a model fidelity; use one of "
                            f"{', '.join(repr(f) for f in FIDELITIES)}")
    engines = {spec.name: spec for spec in config.dma.engines}
    regions = [r.name for r in config.shared_regions]
    for i, t in enumerate(transfers):
        where = f"transfer {i}"
        if t.engine not in engines:
            raise ArgumentError(f"{where}: {config.name} has no DMA engine {t.engine!r}; its "
                                f"engines are {', '.join(engines)}")
        ends = (t.region,) if t.to_region is None else (t.region, t.to_region)
        for end in ends:
            if end not in regions:
                raise ArgumentError(f"{where}: unknown region {end!r}; use one of "
                                    f"{', '.join(regions)}")
            if end not in engines[t.engine].regions:
                raise ArgumentError(f"{where}: engine {t.engine} does not reach {end}; it "
                                    f"reaches {', '.join(sorted(engines[t.engine].regions))}")
        if t.to_region == t.region:
            raise ArgumentError(f"{where}: to_region must differ from region ({t.region}): "
                                "a copy within one region is not modelled")
        if not isinstance(t.nbytes, int) or t.nbytes <= 0:
            raise ArgumentError(f"{where}: nbytes must be a positive whole number, "
                                f"got {t.nbytes!r}")
        if not isinstance(t.core, int) or not 0 <= t.core < config.cores:
            raise ArgumentError(f"{where}: core must be one of 0..{config.cores - 1}, "
                                f"got {t.core!r}")
        if t.direction not in DIRECTIONS:
            raise ArgumentError(f"{where}: direction must be one of {', '.join(DIRECTIONS)}, "
                                f"got {t.direction!r}")
        if not t.start >= 0:
            raise ArgumentError(f"{where}: start must be a cycle >= 0, got {t.start!r}")


def run_transfers(config: ChipConfig, transfers: list[ProbeTransfer],
                  fidelity: str = "fast") -> list[float]:
    """The cycle at which each of ``transfers`` has delivered its last byte, counted from
    cycle 0 of one timeline on which all of them run (so they share links as they overlap).

    Raises ArgumentError for an unknown engine, region, direction or fidelity, an engine
    that does not reach the region, or a non-positive size.
    """
    transfers = list(transfers)
    _check(config, transfers, fidelity)
    timeline = Timeline(config)
    env = timeline.env
    rates = {spec.name: config.bytes_per_cycle(spec.bandwidth_gbps)
             for spec in config.dma.engines}
    if fidelity == "fast":
        network = FlowNetwork(env)

        def move(t: ProbeTransfer, then) -> None:
            far = (timeline.l2_ports[t.core] if t.to_region is None
                   else timeline.links[t.to_region])
            network.start(t.nbytes, (timeline.links[t.region], far), rates[t.engine], then)
    else:
        bursts = BurstDMA(timeline)

        def move(t: ProbeTransfer, then) -> None:
            if t.to_region is None:
                bursts.transfer(_Group(t.core), t.direction, _Operand(_Span(t.region)),
                                t.nbytes, rates[t.engine], then)
                return
            # a copy between shared regions: each burst is read from one, then written to
            # the other, arbitrated on both as a load's bursts are on its region and port
            path = (bursts.arbiters[t.region], bursts.arbiters[t.to_region])
            _BurstTransfer(timeline, path, t.nbytes, config.dma.burst_bytes, rates[t.engine],
                           then).issue()

    finished: list[float | None] = [None] * len(transfers)
    queues: dict[str, deque[int]] = {}  # per engine: set-up transfers waiting for it
    busy: set[str] = set()

    def take(engine: str) -> None:
        if engine in busy or not queues.get(engine):
            return
        index = queues[engine].popleft()
        busy.add(engine)

        def done(_event=None) -> None:
            finished[index] = float(env.now)
            busy.discard(engine)
            take(engine)

        move(transfers[index], done)

    def set_up(index: int) -> None:
        engine = transfers[index].engine
        queues.setdefault(engine, deque()).append(index)
        take(engine)

    for index, t in enumerate(transfers):
        timeline.after(t.start + config.dma.setup_cycles,
                       lambda _event, index=index: set_up(index))
    env.run()
    ended = [cycle for cycle in finished if cycle is not None]
    assert len(ended) == len(finished), "every transfer ends once the timeline runs dry"
    return ended


def throughput_gbps(config: ChipConfig, nbytes: float, cycles: float) -> float:
    """``nbytes`` moved in ``cycles`` core cycles, in GB/s (1e9 bytes a second)."""
    return nbytes / cycles * config.clock_mhz / 1e3
