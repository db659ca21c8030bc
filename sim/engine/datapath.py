"""How the fast fidelity times a call's two kinds of work, and which DMA timing it uses.

* DMA: :class:`FluidDMA` moves a transfer as a fluid flow whose rate is its max-min fair
  share of the links it crosses (:mod:`dspsim.sim.engine.network`). The flow network belongs to
  the timeline, so that every call on it shares DDR transfer by transfer. Calls whose
  tile transfers are short go burst by burst instead (:class:`~dspsim.sim.engine.detailed.BurstDMA`,
  also the timeline's), see :func:`dma_timing`.
* Vector work: :class:`ClosedFormVector`, a tile's loop as one delay.

:class:`Datapath` joins one transfer model and one vector timing for a call's pipeline.
Both are extension points: a :class:`TransferModel` registered in :data:`TRANSFER_MODELS`
under a :data:`TransferTiming` name, a :class:`VectorTiming` in :data:`VECTOR_TIMINGS`
under a fidelity.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Literal, Protocol, get_args

from dspsim.sim.chip.load import ChipConfig
from dspsim.sim.engine.detailed import BurstDMA
from dspsim.sim.engine.detailed_vector import IssuedVector
from dspsim.sim.engine.job import Job, Operand
from dspsim.sim.engine.model import ENGINES, CoreGroup, CoreTiming, Model
from dspsim.sim.engine.network import FlowNetwork
from dspsim.sim.engine.settle import LOCKSTEP_BURSTS
from dspsim.sim.engine.tiling import balanced_tiles

#: Tile transfers of at least this many bursts are timed as fluid flows in the fast model;
#: shorter ones burst by burst. Over B bursts, round-robin arbitration among k transfers
#: ends them up to (k-1) bursts apart where fluid sharing ends them together: an error
#: below 1/B of a transfer, so under 1% here.
FLUID_MIN_BURSTS = 128
#: ... unless the call moves more bursts than this in all: then fluid flows all the same,
#: so that the fast model stays fast whatever the tile size (the error stays under 1/B of
#: each transfer; the detailed fidelity has none) ...
BURST_BUDGET = 16384
#: ... and a call on one core whose tile transfers are shorter than this many bursts goes
#: burst by burst whatever its size: one pipeline repeats itself within a few tiles, which
#: the steady state advances, and staggered flows, whose load and store end together where
#: round-robin ends the load sooner, missed detailed there by up to 2.5% (FT78NE, one
#: core, 300,001 elements: 1.10% at 16 bursts, 0.81% at 32, 0.08% at 64). From this many
#: bursts on, the few tiles the steady state needs cost a call more than its error is worth.
ONE_CORE_MIN_BURSTS = FLUID_MIN_BURSTS // 2
#: ... and so does any call whose tile transfers are this many bursts or fewer, on any
#: number of cores: as a fluid flow such a transfer costs as many events as its bursts
#: (its start, its end, and a new share for every flow beside it at each), and flows
#: that short end together where round-robin ends them a burst apart, which keeps cores
#: in lock-step (packaged MT7004 ``hp_gelu_grad_s`` over 2^21 elements on two cores with
#: 512-byte tiles: staggered flows 5.8% above detailed; FT78NE ``fp_l_relu_s`` over
#: 300,001 elements with 256-byte tiles on two cores: 12.3%).
FEWEST_FLUID_BURSTS = 2
#: How a call's transfers are timed (see :func:`dma_timing`): fluid flows, fluid flows with
#: staggered cores and path fill, burst by burst, or not at all (private storage).
TransferTiming = Literal["fluid", "staggered", "bursts", "none"]
TRANSFER_TIMINGS: tuple[TransferTiming, ...] = get_args(TransferTiming)


class TransferModel(Protocol):
    """Moves a tile's bytes for a group of cores over the links of the timeline."""

    def transfer(self, group: CoreGroup, direction: str, operand: Operand, nbytes: int,
                 rate: float, then: Callable) -> None:
        """Move ``nbytes`` of ``operand`` for every core of ``group`` (``direction`` is
        dma-in or dma-out), each at most at ``rate`` bytes/cycle, then call ``then()``."""
        ...


class VectorTiming(Protocol):
    """Times a tile's vector loop on a group of cores."""

    def compute(self, group: CoreGroup, elements: int, then: Callable) -> None:
        """Run the loop over ``elements`` on the group's cores, then call ``then()``."""
        ...


def group_cores(cores: list[CoreTiming], tile_size: int, lanes: int,
                mirror: bool) -> list[CoreGroup]:
    """Groups of cores with work; with ``mirror``, cores with equal element counts share one."""
    groups: dict[object, CoreGroup] = {}
    for timing in cores:
        if not timing.elements:
            continue
        key = timing.elements if mirror else timing.core
        if key in groups:
            groups[key].members.append(timing)
        else:
            tiles = balanced_tiles(timing.start, timing.stop, tile_size, lanes)
            groups[key] = CoreGroup([timing], tiles, {e: 0.0 for e in ENGINES})
    return list(groups.values())


class FluidDMA:
    """Transfers as max-min fair fluid flows, one flow for a whole group of mirror cores."""

    def __init__(self, model: Model, staggered: bool = False) -> None:
        self.model = model
        self.staggered = staggered  # short transfers: their path fill matters
        timeline = model.timeline
        self.network = timeline.shared("fluid", lambda: FlowNetwork(
            timeline.env, timeline.sample_ddr, watched=timeline.links[timeline.config.ddr.name]))

    def transfer(self, group: CoreGroup, direction: str, operand: Operand, nbytes: int,
                 rate: float, then: Callable) -> None:
        """Move ``nbytes`` of ``operand`` for every core of ``group``, each at most at
        ``rate`` bytes/cycle (its engine's), then call ``then()``."""
        model = self.model
        # every core of the group crosses the shared region; each crosses its own L2 port,
        # which the representative's port stands for
        links = (model.links[operand.span.region], model.l2_ports[group.core])
        fill = self.path_fill(links, nbytes)
        if fill:
            self.network.start(nbytes, links, rate, lambda: model.after(fill, lambda _e: then()),
                               (group.weight, 1))
        else:
            self.network.start(nbytes, links, rate, then, (group.weight, 1))

    def path_fill(self, links, nbytes: int) -> float:
        """Latency a burst train pays beyond its bottleneck: its last burst (what the full
        bursts before it leave) still crosses every faster link of the path after the
        bottleneck (store and forward)."""
        if not self.staggered:
            return 0.0
        burst = self.model.config.dma.burst_bytes
        last = nbytes % burst or burst
        times = sorted(last / link.capacity for link in links)
        return sum(times[:-1])


class ClosedFormVector:
    """A tile's vector loop as one delay: fill + loop overhead + iterations x iteration cost."""

    def __init__(self, model: Model) -> None:
        self.model = model

    def compute(self, group: CoreGroup, elements: int, then: Callable) -> None:
        """Run the vector loop over ``elements`` on the group's cores, then call ``then()``."""
        self.model.after(self.model.cost.tile_cycles(elements), then)


#: The transfer models by timing name; None for calls that move nothing. The burst model
#: belongs to the timeline, so that every call on it arbitrates the same links.
TRANSFER_MODELS: dict[str, Callable[[Model], TransferModel | None]] = {
    "fluid": lambda model: FluidDMA(model),
    "staggered": lambda model: FluidDMA(model, staggered=True),
    "bursts": lambda model: model.timeline.shared("bursts", lambda: BurstDMA(model.timeline)),
    "none": lambda model: None,
}
#: The vector timings by fidelity: a tile's loop as one delay, or every iteration issued.
VECTOR_TIMINGS: dict[str, Callable[[Model], VectorTiming]] = {
    "fast": ClosedFormVector,
    "detailed": IssuedVector,
}


class Datapath:
    """How one call times the two kinds of work: DMA transfers and vector loops.

    ``transfer_timing`` names its :data:`TRANSFER_MODELS` entry (``"none"`` for
    private-storage calls, which move nothing); ``fidelity`` its :data:`VECTOR_TIMINGS`.
    """

    def __init__(self, model: Model, transfer_timing: str, fidelity: str) -> None:
        self.dma = TRANSFER_MODELS[transfer_timing](model)
        self.compute = VECTOR_TIMINGS[fidelity](model).compute
        if self.dma is not None:
            self.transfer = self.dma.transfer


def dma_timing(config: ChipConfig, job: Job, cores: list[CoreTiming], tile_size: int,
               fidelity: str) -> TransferTiming:
    """How the call's transfers are timed: ``"fluid"``, ``"staggered"``, ``"bursts"``
    or ``"none"`` (private storage).

    The fast model uses fluid flows when tile transfers are long enough for fluid sharing
    to be accurate. Shorter ones go burst by burst, unless the call is too large for that
    (:data:`BURST_BUDGET`): then fluid flows all the same, ``"staggered"``: identical
    cores in perfect lock-step would set up their transfers at the same instants and leave
    DDR idle together, where arbitration staggers them (its round-robin serves their first
    bursts one after another, and the cores drift out of phase from there), so each core
    starts one burst's time on the shared link after the previous one and is simulated
    on its own. The longest tile transfer stands for the call (:func:`longest_transfer`).

    A call that runs on one core with transfers shorter than :data:`ONE_CORE_MIN_BURSTS`
    goes burst by burst whatever its size: its one pipeline repeats itself within a few
    tiles, which the steady state then advances in closed form, so the budget buys
    little there. Fluid flows would cost it accuracy: a core's load and store of short
    tiles, sharing DDR, end together as flows where round-robin ends the load a burst or
    more sooner (FT78NE ``fp_l_relu_s`` over 300,001 elements with 256-byte tiles:
    staggered flows 774,223 cycles, bursts 755,481, as the detailed model). So does a
    call on any number of cores whose transfers are :data:`FEWEST_FLUID_BURSTS` bursts
    or fewer: as flows they cost as many events as their bursts do, and end together
    where round-robin ends them a burst apart.

    This is the choice made before the call runs. A call alone that it times as staggered
    flows with transfers of a few bursts is then tried burst by burst all the same, and
    kept so where its steady state settles (:mod:`dspsim.sim.engine.settle`,
    :func:`~dspsim.sim.engine.machine.alone_transfer_timing`).
    """
    if job.storage == "private":
        return "none"
    if fidelity != "fast":
        return "bursts"
    burst = config.dma.burst_bytes
    longest = longest_transfer(job, cores, tile_size)
    if longest >= FLUID_MIN_BURSTS * burst:
        return "fluid"
    if longest <= FEWEST_FLUID_BURSTS * burst:
        return "bursts"
    if (sum(1 for core in cores if core.elements) == 1
            and longest < ONE_CORE_MIN_BURSTS * burst):
        return "bursts"
    return "staggered" if call_bursts(config, job) > BURST_BUDGET else "bursts"


def longest_transfer(job: Job, cores: list[CoreTiming], tile_size: int) -> int:
    """Bytes of the call's longest tile transfer: tiles of one core differ by at most a
    vector, so the longest core's first tile stands for the call."""
    return max((min(tile_size, c.elements) for c in cores), default=0) * job.itemsize


def tried_burst_by_burst(config: ChipConfig, job: Job, cores: list[CoreTiming],
                         tile_size: int, timing: str) -> bool:
    """Whether a call alone that :func:`dma_timing` times as ``timing`` is first tried
    burst by burst (:mod:`dspsim.sim.engine.settle`): staggered, with transfers of at most
    :data:`~dspsim.sim.engine.settle.LOCKSTEP_BURSTS` bursts."""
    return (timing == "staggered" and longest_transfer(job, cores, tile_size)
            <= LOCKSTEP_BURSTS * config.dma.burst_bytes)


def call_bursts(config: ChipConfig, job: Job) -> int:
    """How many DMA bursts the call moves in all (every operand, in and out)."""
    operands = len(job.inputs) + len(job.outputs)
    return operands * -(-job.length * job.itemsize // config.dma.burst_bytes)
