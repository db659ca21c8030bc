"""The tile search stops a candidate once it cannot win, and chooses what a search that
simulated every candidate to its end would choose."""
import pytest
from test_timing import timed

from dspsim.sim.engine import cutoff, machine
from dspsim.sim.engine.tiling import Abandoned

#: calls whose searches stop some candidates: fills that lose (large tiles on one core),
#: per-tile overheads that lose, burst-timed, fluid and staggered transfers, a pool
CALLS = [("ft78ne", "fp_relu_grad_s", 1 << 16, 0x1),
         ("ft78ne", "fp_gelu_grad_s", 1 << 10, 0xff),
         ("mt7004", "hp_relu_grad_s", 1 << 16, 0xf),
         ("mt7004", "hp_gelu_grad_s", 300_001, 0x7),
         ("ft78ne", "fp_relu_grad_s", 300_001, 0x7)]


def searched(monkeypatch, call, limit=None):
    """The call's result and its candidates' outcomes, each candidate simulated with the
    search's limit (``limit`` None) or with ``limit(searched_limit)`` instead."""
    machine.TILINGS.clear()
    outcomes = []
    candidate = machine._candidate

    def recorded(config, job, cost, tile, search_limit, **kw):
        result = candidate(config, job, cost, tile,
                           search_limit if limit is None else limit(search_limit), **kw)
        outcomes.append(result)
        return result

    with monkeypatch.context() as patch:
        patch.setattr(machine, "_candidate", recorded)
        result = timed(*call)
    machine.TILINGS.clear()
    return result, outcomes


@pytest.mark.parametrize("call", CALLS, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}-{c[3]:#x}")
def test_stopping_candidates_that_cannot_win_changes_no_choice(monkeypatch, call):
    stopping, outcomes = searched(monkeypatch, call)
    full, _ = searched(monkeypatch, call, limit=lambda _: float("inf"))
    assert stopping.cycles == full.cycles
    assert stopping.tiling["tile_elements"] == full.tiling["tile_elements"]
    stopped = [o for o in outcomes if isinstance(o, Abandoned)]
    # each stopped candidate is one the full search found slower than its choice
    full_cycles = {c["tiles_per_core"]: c["cycles"] for c in full.tiling["candidates"]}
    for bound in stopping.tiling["not_simulated_lower_bounds"]:
        tiles = bound["tiles_per_core"]
        if tiles in full_cycles:
            assert bound["cycles_at_least"] <= full_cycles[tiles] + 1e-6
            assert full_cycles[tiles] > full.timing.cycles
    if stopped:
        assert "stopped once a lower bound on" in stopping.tiling["reason"]


def test_some_searches_stop_candidates(monkeypatch):
    stopped = {}
    for call in CALLS:
        _, outcomes = searched(monkeypatch, call)
        stopped[call] = sum(isinstance(o, Abandoned) for o in outcomes)
    assert sum(stopped.values()) >= 5
    # one core, 65,536 elements: 4 tiles (fill too long), 28 and 219 tiles (setups and
    # loop overheads) lose; the 28-tile one only once its last tile's store is counted
    assert stopped[CALLS[0]] == 3


@pytest.mark.parametrize("call", CALLS, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}-{c[3]:#x}")
def test_the_bound_never_exceeds_the_cycles_simulated(monkeypatch, call):
    """Watch every candidate to its end with a limit it never reaches: every bound seen
    along the way is at most the cycles the candidate then takes."""
    seen: list[float] = []
    bound = cutoff.Cutoff.bound

    def watched(self, computed=None):
        seen.append(bound(self, computed))
        return seen[-1]

    monkeypatch.setattr(cutoff.Cutoff, "bound", watched)
    candidate = machine._candidate
    checked = []

    def every_tile(config, job, cost, tile, search_limit, **kw):
        seen.clear()
        result = candidate(config, job, cost, tile, 1e300, **kw)
        assert seen, "the cutoff watched the candidate"
        assert max(seen) <= result.cycles * (1 + 1e-12), (max(seen), result.cycles)
        checked.append(result)
        return result

    monkeypatch.setattr(machine, "_candidate", every_tile)
    machine.TILINGS.clear()
    timed(*call)
    machine.TILINGS.clear()
    assert checked
