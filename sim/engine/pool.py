"""Transfer engines and the pool a transfer asks for one: which engine it gets, and when.

A transfer goes to the engine that would finish it first by what it would really get
there: the least of the engine's rate, its max-min share of the shared region's link and
its share of its core's L2 port (counting the transfers the pool already has in flight),
after the engine's transfer in hand and the transfers already waiting for it. A free
controller of a third of the nominal rate thus takes a transfer whenever the link or the
port would hold a faster one to that third anyway, as on a C6678 whose eight cores stream
from MSMC SRAM through all ten EDMA3 transfer controllers; and a transfer still waits for
a busy fast controller when a free slow one would take longer than the wait and the fast
transfer together; a busy engine is weighed against a free one on the same crowd of
transfers in flight, and only when it is faster than every free one that would not waste
its time on the core's L2 port. Ends closer than one burst's trip are ties: the fast
timing's fluid flows and the detailed timing's bursts end a transfer up to that far
apart. Among the waiters whose best engine is free, one whose core's L2 port already
carries a transfer of the pool, and would hold its transfer below what the rest of its
path allows, is passed over for a later one: it would keep a whole engine moving at a
fraction of the port while another core's port stood idle. When engines are fewer than
cores and the ports bind (FT78NE redrawn with five 77.7 GB/s controllers for eight cores
and 4-byte ports), serving first come first served left each held engine moving 3.2
B/cycle instead of 4, and the cycles hung on which transfer reached an engine a burst
earlier: fast and detailed 9.7% apart. Where DDR binds instead, first come first served
stands: a core whose loads all get engines starts computing sooner. The choice uses only
what the pool itself knows (grants, releases and the chip's capacities), never the
datapath's rates, so that both fidelities make it alike.

Which cores share a pool is :mod:`dspsim.sim.engine.dma`'s.
"""
from __future__ import annotations

from bisect import bisect_right, insort
from collections.abc import Callable
from functools import lru_cache
from typing import NamedTuple

from dspsim.sim.engine.network import Flow, Link, max_min_rates

__all__ = ["Engine", "EnginePool", "fair_level"]


#: Instants or durations closer than this fraction of the clock are equal to the pool:
#: far above floating-point rounding, far below a cycle. Ends that are equal by
#: construction (a transfer waiting for an engine ends where its predecessor's did) must
#: compare equal whatever the clock reads, or the same state would be decided one way at
#: one tile and the other way a period later.
_SLACK = 1e-9



class Engine:
    """One DMA engine or transfer controller: its rate and the regions it reaches."""

    __slots__ = ("name", "rate", "regions", "busy", "free_at", "carrying", "expected")

    def __init__(self, name: str, rate: float, regions: frozenset[str]) -> None:
        self.name = name
        self.rate = rate  # bytes per core cycle
        self.regions = regions
        self.busy = False
        # when its transfer in hand should end, and the rate it should move at, as the pool
        # last estimated them (at every grant and release, see EnginePool._reestimate)
        self.free_at = 0.0
        self.expected = 0.0
        # (region, core, own rate) of that transfer: what the pool's rates are keyed by
        self.carrying: tuple[str, int, float] | None = None

    def __repr__(self) -> str:
        return f"Engine({self.name!r}, {self.rate:.3f} B/cycle)"


class _Waiter(NamedTuple):
    core: int
    region: str
    nbytes: float
    then: Callable[[Engine], None]


def fair_level(capacity: float, others: list[float], cap: float) -> float:
    """The max-min fair rate of one more flow capped at ``cap`` on a link of ``capacity``
    that already carries flows capped at ``others`` (water-filling on that one link)."""
    left, count = capacity, len(others) + 1
    for other in sorted(others + [cap]):
        share = left / count
        if other >= share:
            return min(cap, share)
        if other == cap and cap <= share:
            return cap
        left -= other
        count -= 1
    return cap


#: Load of one core: (region, engine rate) of each transfer it has in flight, sorted.
_Load = tuple[tuple[str, float], ...]


@lru_cache(maxsize=1 << 14)
def _rates_by_load(capacities: tuple[tuple[tuple[str, float], ...], float],
                   mix: tuple[_Load, ...]) -> dict[tuple[_Load, str, float], float]:
    """Max-min fair rates of the transfers of ``mix`` (each core's load) on links of
    ``capacities`` ((region, bytes per cycle) of each link, and a port's), by (load,
    region, engine rate), remembered for the whole process: rates do not depend on which
    core is which. Cores of equal loads, and a core's equal transfers, get equal rates to
    the last bit: max-min sharing raises alike flows to each level together."""
    links, port_capacity = capacities
    shared = {region: Link(region, capacity) for region, capacity in links}
    flows, owners = [], []
    for index, load in enumerate(mix):
        port = Link(f"port {index}", port_capacity)
        for region, rate in load:
            flows.append(Flow(1.0, (shared[region], port), rate, None))
            owners.append((load, region, rate))
    max_min_rates(flows)
    return {owner: flow.rate for owner, flow in zip(owners, flows, strict=True)}


@lru_cache(maxsize=1 << 14)
def _shares_beside(link_capacity: float, port_capacity: float, rate: float, core: int,
                   region: str, others: tuple[tuple[float, str, int], ...]
                   ) -> tuple[float, float]:
    """A transfer's fair levels on its region's link (capped at its engine's ``rate``)
    and on its core's L2 port beside the transfers ``others`` ((rate, region, core)),
    remembered: a pool weighs the same few crowds again and again."""
    link = [other for other, held_region, _ in others if held_region == region]
    port = [other for other, _, held_core in others if held_core == core]
    return (fair_level(link_capacity, link, rate), fair_level(port_capacity, port, rate))


#: Rates of the mixes in flight, by the capacities of the pool's links and ports.
_RATES_BY_CAPACITIES: dict[tuple, dict[tuple, dict[tuple[str, int, float], float]]] = {}
#: Mixes remembered per capacities before starting afresh, and capacities remembered
#: (a calibration or a what-if study changes them call after call): memory stays bounded.
_RATE_MEMO_LIMIT = 1 << 12
_CAPACITIES_LIMIT = 8


class EnginePool:
    """Engines shared by some cores, granted to transfers in the order they asked.

    ``link_capacity`` gives each shared region's link in bytes per cycle and
    ``port_capacity`` a core's L2 port. Waiting transfers are considered first come,
    first served; each takes the engine that would end it first (see the module's
    docstring), waiting if that one is busy, and the engines it waits for count its
    transfer as queued work for those behind it.
    """

    def __init__(self, engines: list[Engine], clock: Callable[[], float],
                 link_capacity: dict[str, float], port_capacity: float,
                 burst_bytes: float = 0.0) -> None:
        # fastest first (ties go to the faster, see _best)
        self.engines = sorted(engines, key=lambda e: -e.rate)
        self.clock = clock
        self.link_capacity = link_capacity
        self.port_capacity = port_capacity
        self.waiting: list[_Waiter] = []
        self._free = len(self.engines)  # engines not busy
        self._busy: list[Engine] = []  # engines busy, in the order they were granted
        self._carried: list[tuple[str, int, float]] = []  # what they carry, sorted
        self._capacities = (tuple(sorted(link_capacity.items())), port_capacity)
        # the rates of each mix in flight, shared by every pool of the process with the
        # same capacities: a call's tile candidates and the calls after it meet the same
        # mixes on fresh pools
        if len(_RATES_BY_CAPACITIES) > _CAPACITIES_LIMIT:
            _RATES_BY_CAPACITIES.clear()  # pools keep the memo they were given
        self._rate_memo = _RATES_BY_CAPACITIES.setdefault(self._capacities, {})
        # ends closer than one burst's trip through the narrower of a region's link and
        # the port are ties (see _best): bursts end a transfer up to that far from where
        # fluid flows end it, and a finer choice would go one way in one fidelity and the
        # other way in the other
        self._tie = {region: burst_bytes / min(capacity, port_capacity)
                     for region, capacity in link_capacity.items()}

    def _reestimate(self, now: float, granted: Engine | None = None,
                    nbytes: float = 0.0) -> None:
        """Estimate again when each transfer in flight ends, beside those in flight now.

        The transfers move at their max-min fair shares of their regions' links and their
        cores' L2 ports, each capped at its engine's rate; the bytes a transfer has left
        follow from its previous estimate (``granted`` has all its ``nbytes`` left). A
        transfer granted alone on its core's port slows when its core's next transfers
        join it there; an end estimated once, at its grant, would stay as early as if it
        never did, and transfers would queue for its engine expecting it back long before
        it is (on FT78NE, a core's second and third loads waited for an EDMA3CC0
        controller the first load held three times as long as the pool expected).
        """
        rates = self._fair_rates(tuple(self._carried))
        for engine in self._busy:  # each from its own previous estimate
            # (conditionals rather than max() and min() in the pool's loops: they run for
            # every engine at every grant and release)
            left = engine.free_at - now
            remaining = (nbytes if engine is granted
                         else engine.expected * (left if left > 0.0 else 0.0))
            engine.expected = expected = rates[engine.carrying]  # type: ignore[index]
            engine.free_at = now + remaining / expected

    def _fair_rates(self, carried: tuple[tuple[str, int, float], ...]
                    ) -> dict[tuple[str, int, float], float]:
        """The max-min fair rate of each (region, core, engine rate) of transfers in flight
        ``carried`` (sorted): remembered for every pool of the process with the same
        capacities, since pools see the same few mixes again and again, and transfers
        alike get the same rate.

        Which cores carry them does not matter, only what each core carries: the mix is
        also remembered by its cores' loads (:func:`_rates_by_load`), for every pool of
        the process with the same capacities, so that a call's tile candidates and the
        calls after it compute each mix once.
        """
        rates = self._rate_memo.get(carried)
        if rates is None:
            loads: dict[int, list[tuple[str, float]]] = {}
            for region, core, rate in carried:  # sorted: each core's load comes sorted
                loads.setdefault(core, []).append((region, rate))
            load_of = {core: tuple(load) for core, load in loads.items()}
            mix = tuple(sorted(load_of.values()))
            by_load = _rates_by_load(self._capacities, mix)
            if len(self._rate_memo) > _RATE_MEMO_LIMIT:  # a long program's pool too
                self._rate_memo.clear()
            rates = self._rate_memo[carried] = {
                (region, core, rate): by_load[load_of[core], region, rate]
                for region, core, rate in carried}
        return rates

    def _in_flight(self) -> tuple[list[float], list[tuple[float, str, int]]]:
        """The transfers in flight by estimated end: their ends, and (rate, region, core)."""
        # an engine carries a transfer exactly while it is busy
        flights = sorted([(e.free_at, (e.rate, e.carrying[0], e.carrying[1]))
                          for e in self._busy if e.carrying is not None])
        return [f[0] for f in flights], [f[1] for f in flights]

    def _shares_after(self, engine: Engine, core: int, region: str,
                      others: list[tuple[float, str, int]], still: int,
                      rates: dict[tuple, tuple[float, float]]) -> tuple[float, float]:
        """(the engine's rate or its fair share of the region's link, whichever is less;
        its fair share of the core's L2 port) beside the transfers ``others[still:]``
        (those still in flight once the first ``still`` have ended), remembered in
        ``rates`` by what decides them."""
        key = (engine.rate, core, region, still)
        shares = rates.get(key)
        if shares is None:
            shares = rates[key] = _shares_beside(
                self.link_capacity[region], self.port_capacity, engine.rate, core, region,
                tuple(others[still:]))
        return shares

    def _best(self, waiter: _Waiter, now: float, queued: dict[Engine, float],
              flights: tuple[list[float], list], rates: dict[tuple, tuple[float, float]],
              order: list[Engine]) -> tuple[Engine, float, bool] | None:
        """The engine that would end ``waiter``'s transfer first, its expected time on it
        and whether the core's L2 port would hold it below the rest of its path (wasting
        the engine's time); None if no engine reaches its region.

        On each engine the transfer would start once the engine is free (its transfer in
        hand ended, as estimated at its grant, and the transfers waiting for it moved)
        and move at its expected rate beside the transfers still in flight then.
        ``rates`` remembers those rates while nothing is granted.
        """
        ends, others = flights
        region, core, nbytes = waiter.region, waiter.core, waiter.nbytes
        ceiling = min(self.link_capacity[region], self.port_capacity)
        best, best_end, best_time, best_wasted, best_rate = None, 0.0, 0.0, 0.0, 0.0
        tie = self._tie[region]
        # free engines first (``order``): a busy one is weighed only if it could end
        # sooner, and is faster than every free one that would move the transfer without
        # wasting its time on the core's port (such a free engine gets, from the moment
        # the busy one would free, what the busy one would give, and moves bytes meanwhile)
        fastest_free = 0.0
        for engine in order:
            if region not in engine.regions or (engine.busy and engine.rate <= fastest_free):
                continue
            free_at = engine.free_at
            ready = ((free_at if engine.busy and free_at > now else now)
                     + queued.get(engine, 0.0))
            if best is not None and ready + nbytes / (
                    engine.rate if engine.rate < ceiling else ceiling) > best_end + tie:
                continue
            # the transfers in flight at ``ready``: on a free engine, all of them now (one
            # running past its estimated end has not ended); after a wait for a busy one,
            # those estimated to end later. The busy engine's own transfer is among the
            # ended even when it runs past its estimate: the waiter starts only once it
            # has ended. Counted beside its own successor, a fast controller a few cycles
            # from its end looked as slow as the port share it had, and a transfer took a
            # free slow controller instead (MT7004 redrawn with one 4 GB/s and two 16 GB/s
            # controllers on one core: the detailed run, whose bursts end transfers a few
            # cycles past their estimates, took 15% longer than the fast one)
            slack = _SLACK * (ready if ready > 1.0 else 1.0)
            still = (bisect_right(ends, ready + slack) if engine.busy or ready > now + slack
                     else 0)
            shares = self._shares_after(engine, core, region, others, still, rates)
            rate = shares[0] if shares[0] <= shares[1] else shares[1]
            took = nbytes / rate
            end = ready + took
            rival_end = best_end
            if engine.busy and best is not None and not best.busy and not best_wasted:
                # judge the free engine on the same crowd: it moves bytes until ``ready``
                # too, and from then on as fast as the transfers still in flight let it
                moved = (ready - now) * best_rate
                if moved >= nbytes:
                    continue
                later = self._shares_after(best, core, region, others, still, rates)
                rival_end = ready + (nbytes - moved) / min(later)
            # engine time its core's own L2 port would waste (the engine could serve
            # another core's transfer at the link's rate meanwhile)
            wasted = took if shares[1] < shares[0] else 0.0
            if not engine.busy and not wasted:
                fastest_free = max(fastest_free, engine.rate)
            # a tie goes to the engine whose time the core's port wastes least, then to a
            # free engine (it starts now), then to the faster one (listed first), which
            # can speed up as the transfers beside it end
            tied = best is not None and end <= rival_end + tie + slack
            if best is None or end < rival_end - tie - slack or (tied and (
                    wasted < best_wasted - slack or (
                        wasted <= best_wasted + slack and best.busy
                        and not engine.busy))):
                best, best_end, best_time, best_wasted, best_rate = (
                    engine, end, took, wasted, rate)
        return None if best is None else (best, best_time, best_wasted > 0)

    def _serve(self) -> None:
        """Grant waiters whose best engine is free, in the order they asked, until none is."""
        while self.waiting and self._free:
            granted = self._grant_first()
            if granted is None:
                return
            engine, waiter = granted
            waiter.then(engine)

    def _candidates(self) -> list[Engine]:
        """The engines a waiter weighs, free ones first: one free engine of each kind (rate
        and regions), since another free one like it would end a transfer at the same
        instant and lose the tie to the first, then every busy one."""
        free: dict[tuple[float, frozenset[str]], Engine] = {}
        for engine in self.engines:
            if not engine.busy:
                free.setdefault((engine.rate, engine.regions), engine)
        return list(free.values()) + [e for e in self.engines if e.busy]

    def _grant_first(self) -> tuple[Engine, _Waiter] | None:
        """Grant the first waiter whose best engine is free, passing over those whose
        core's port already carries a transfer of the pool and would hold theirs below the
        rest of its path (unless no other can go); the engines earlier waiters wait for
        carry their transfers as queued work meanwhile."""
        now = self.clock()
        queued: dict[Engine, float] = {}
        rates: dict[tuple, tuple[float, float]] = {}
        flights = self._in_flight()
        order = self._candidates()
        on_port = {core for _, _, core in flights[1]}  # cores whose port carries one
        first = None
        for index, waiter in enumerate(self.waiting):
            choice = self._best(waiter, now, queued, flights, rates, order)
            if choice is None:
                continue
            engine, took, wasted = choice
            if engine.busy:
                queued[engine] = queued.get(engine, 0.0) + took
                continue
            if wasted and waiter.core in on_port:
                if first is None:
                    first = index, engine
                continue
            return self._grant(index, engine, now)
        if first is not None:
            return self._grant(*first, now)
        return None

    def _grant(self, index: int, engine: Engine, now: float) -> tuple[Engine, _Waiter]:
        """Give ``engine`` to waiter ``index`` now."""
        waiter = self.waiting.pop(index)
        engine.busy = True
        self._free -= 1
        engine.carrying = carrying = (waiter.region, waiter.core, engine.rate)
        self._busy.append(engine)
        insort(self._carried, carrying)
        self._reestimate(now, engine, waiter.nbytes)
        return engine, waiter

    def request(self, core: int, region: str, nbytes: float,
                then: Callable[[Engine], None]) -> None:
        """Call ``then(engine)`` with an engine reaching ``region`` for a transfer of
        ``nbytes`` of ``core``, now or once the engine it waits for frees."""
        self.waiting.append(_Waiter(core, region, nbytes, then))
        self._serve()

    def release(self, engine: Engine) -> None:
        """``engine`` has finished its transfer: serve the waiters again."""
        engine.busy = False
        self._free += 1
        self._busy.remove(engine)
        self._carried.remove(engine.carrying)  # type: ignore[arg-type]
        engine.carrying = None
        self._reestimate(self.clock())
        self._serve()
