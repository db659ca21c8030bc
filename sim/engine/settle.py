"""Giving up on timing a large call burst by burst once its steady state does not settle.

A call too large to time every burst of (:data:`~dspsim.sim.engine.datapath.BURST_BUDGET`)
whose tile transfers are short is timed as staggered fluid flows. Where they are only a
few bursts long, flows that share a link end together while round-robin ends them a burst
apart, and cores in lock-step as flows fall out of phase as bursts: on two cores, FT78NE
``fp_l_relu_s`` over 300,001 elements with 512-byte tiles is 7.3% above detailed as
flows. Burst by burst costs little where the pipelines settle into a periodic state
within a few tiles, which the steady state then advances in closed form; it costs every
burst where they never settle (FT78NE's pool serving eight cores). So such a call is
first timed burst by burst under a :class:`SettleWatch`, which gives up
(:class:`Unsettled`) once the pipelines have run :data:`SETTLE_TILES` tiles without a
period to advance; the call is then timed as staggered flows.
"""
from __future__ import annotations

from collections.abc import Callable

__all__ = ["LOCKSTEP_BURSTS", "SETTLE_TILES", "SettleWatch", "Unsettled"]

#: Tile transfers of at most this many bursts are worth that attempt: staggered flows
#: missed detailed by up to 12% at 2 bursts, 7.3% at 4, 3.4% at 8, about 1% at 16 and
#: 0.8% at 32 (the cases of ``docs/dma-and-invariants.md``).
LOCKSTEP_BURSTS = 16
#: Tiles of the first pipeline simulated burst by burst with no period advanced before
#: the attempt gives up: a call over the budget with transfers of at most
#: :data:`LOCKSTEP_BURSTS` bursts has at least this many tiles per core, so that what a
#: failed attempt costs stays within the budget.
SETTLE_TILES = 32


class Unsettled(Exception):
    """A burst-timed call whose pipelines did not settle within :data:`SETTLE_TILES` tiles."""


class SettleWatch:
    """Watches a call's pipelines and raises :class:`Unsettled` once the first one has
    computed :data:`SETTLE_TILES` tiles since the start (or since the steady state last
    advanced) without a period advanced. ``skipped`` reads how many periods the call's
    steady state has advanced so far."""

    def __init__(self, pipelines: list, skipped: Callable[[], int],
                 within: int = SETTLE_TILES) -> None:
        self.first = pipelines[0]
        self.skipped = skipped
        self.within = within
        self.periods = 0  # periods advanced when last seen
        self.since = 0  # the first pipeline's tile when a period was last advanced

    def tile_computed(self, pipeline) -> None:
        """A pipeline finished computing a tile: on the first one, give up if it has
        gone :data:`SETTLE_TILES` tiles without a period advanced."""
        if pipeline is not self.first:
            return
        periods = self.skipped()
        if periods != self.periods:
            self.periods, self.since = periods, pipeline.next_compute
        elif pipeline.next_compute - self.since >= self.within:
            raise Unsettled(f"no period within {self.within} tiles")
