"""The tile search stops a candidate once it cannot win, and chooses what a search that
simulated every candidate to its end would choose."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_timing import timed

import dspsim
from dspsim.sim.engine import cutoff, machine, tile_walk, tiling
from dspsim.sim.engine.tiling import TIE_CYCLES, Abandoned, search_counts

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
    # one core, 65,536 elements: 4 tiles (fill too long) and 28 tiles (setups and loop
    # overheads) lose, the 28-tile one only once its last tile's store is counted; 219
    # tiles are not simulated at all (55 -> 110 saved 0.06%, so 110 -> 219 could save at
    # most 0.03%, under a step)
    assert stopped[CALLS[0]] == 2


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


#: calls whose fastest tiling takes the call's floor (DDR-bound on every core), and one
#: whose fastest does not (gelu_grad's vector work and fill stay above it)
FLOORED = [("mt7004", "hp_relu_grad_s", 1 << 16, 0xf), ("ft78ne", "fp_relu_grad_s", 1 << 14, 0xff),
           ("mt7004", "hp_relu_grad_s", 1 << 14, 0x7)]
ABOVE_FLOOR = ("ft78ne", "fp_gelu_grad_s", 1 << 14, 0xff)


def without_floor(monkeypatch, call):
    """The call as a search that never stops at the floor finds it, and how many
    candidates that search simulated."""
    with monkeypatch.context() as patch:
        patch.setattr(tiling, "cycles_floor", lambda *args: (0.0, "none"))
        result, outcomes = searched(monkeypatch, call)
    return result, outcomes


@pytest.mark.parametrize("call", FLOORED + [ABOVE_FLOOR],
                         ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}-{c[3]:#x}")
def test_every_candidate_takes_at_least_the_floor(monkeypatch, call):
    """The floor (launch, barrier, a setup, the busiest roofline term) is a lower bound
    on every tiling the search without it simulates (up to the 0.1% an orbit may skip)."""
    result, outcomes = without_floor(monkeypatch, call)
    floor = result.timing.roofline_cycles + dspsim.Chip(call[0]).config.dma.setup_cycles
    simulated = [o.cycles for o in outcomes if not isinstance(o, Abandoned)]
    assert len(simulated) >= 3
    assert min(simulated) >= floor * (1 - 1e-3), (min(simulated), floor)


@pytest.mark.parametrize("call", FLOORED, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}-{c[3]:#x}")
def test_a_search_that_reaches_the_floor_stops_there(monkeypatch, call):
    result, outcomes = searched(monkeypatch, call)
    full, full_outcomes = without_floor(monkeypatch, call)
    assert result.cycles == full.cycles
    assert result.tiling["tiles_per_core"] <= full.tiling["tiles_per_core"]
    assert len(outcomes) < len(full_outcomes)
    assert "none can be faster: it takes the call's least possible time" in \
        result.tiling["reason"]
    assert "DDR term" in result.tiling["reason"]


def test_a_search_above_the_floor_is_unchanged(monkeypatch):
    result, outcomes = searched(monkeypatch, ABOVE_FLOOR)
    full, full_outcomes = without_floor(monkeypatch, ABOVE_FLOOR)
    assert (result.cycles, result.tiling) == (full.cycles, full.tiling)
    assert len(outcomes) == len(full_outcomes)
    assert "least possible time" not in result.tiling["reason"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=40), min_size=64, max_size=64),
       st.integers(min_value=1, max_value=64), st.integers(min_value=0, max_value=1000))
def test_stopping_at_the_floor_never_finds_a_slower_count(above, start, floor):
    """On any curve no lower than its floor, the walk that stops at the floor ends as fast
    (up to a tie) as the walk that does not."""
    curve = {count: floor + 10.0 * extra for count, extra in enumerate(above, start=1)}

    def walk(with_floor: float) -> float:
        seen: dict[int, float] = {}

        def time_count(count: int) -> float:
            seen[count] = curve[count]
            return seen[count]

        search_counts(time_count, 1, 64, start, with_floor)
        return min(seen.values())

    assert walk(floor) <= walk(0.0) + TIE_CYCLES


def _walk(curve, start: int) -> tuple[dict[int, float], int | None]:
    seen: dict[int, float] = {}

    def time_count(count: int) -> float:
        seen[count] = curve(count)
        return seen[count]

    return seen, search_counts(time_count, 1, 1024, start)


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=1e3, max_value=1e7), st.floats(min_value=0.0, max_value=1e7),
       st.floats(min_value=0.0, max_value=1e3), st.integers(min_value=1, max_value=1024))
def test_a_step_left_untimed_could_not_have_saved_one(fixed, fill, per_tile, start):
    """On a pipeline's curve (a fixed part, a fill and drain that shrink with the tile, an
    overhead per tile), the walk that leaves a step untimed ends within a step of the walk
    that times every one, and never times the count it reports."""
    def curve(count: int) -> float:
        return fixed + fill / count + per_tile * count

    seen, unworthy = _walk(curve, start)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tile_walk, "step_saves_at_most", lambda before, after: float("inf"))
        every, none_left = _walk(curve, start)
    assert none_left is None
    assert unworthy is None or unworthy not in seen
    assert not tile_walk.saves(min(seen.values()), min(every.values()))
    assert len(seen) <= len(every)


def test_a_step_that_cannot_save_one_is_not_simulated(monkeypatch):
    # FT78NE relu_grad over 65,536 elements on one core: 55 -> 110 tiles saves 0.06%
    result, outcomes = searched(monkeypatch, CALLS[0])
    assert result.tiling["tiles_per_core"] == 110
    assert ("219 per core not simulated: a step of the walk saves at most half"
            in result.tiling["reason"])
    simulated = {c["tiles_per_core"] for c in result.tiling["candidates"]}
    bounded = {c["tiles_per_core"] for c in result.tiling["not_simulated_lower_bounds"]}
    assert 219 not in simulated | bounded
    assert len(outcomes) == len(simulated) + 2  # and the two stopped candidates
