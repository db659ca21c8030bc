"""Fitting chip keys to measured cycles.

The fit works in log space on both sides: each key is scaled by ``exp(u)`` from its value
in the chip file, and each row's residual is ``log(predicted / measured)``, so a 10% miss
counts the same on a 500-cycle call as on a 5-million-cycle one, and a key in GB/s weighs
the same as one in cycles. The model is piecewise (a call is bound by one resource, then
another; tile counts switch), so derivatives are secants over a step of 5% rather than
infinitesimal ones, and scipy's bounded trust-region least squares takes them from there.

Shared-storage calls search for their best tile size at every simulation, which is most
of a simulation's cost. During a fit each call keeps the tile it chose at the start
instead; the fit is then redone from where it ended with the tiles chosen there, until
the tiles no longer change, so the values returned are fitted to the model as it is.

How well the data determine each key comes from the Jacobian at the fitted values, the
elasticities of every row's cycles to every key: a key that no row is sensitive to, or
that moves the rows only as another key does (collinear columns), is not pinned down.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from dspsim.calibration.measurements import MeasurementError
from dspsim.calibration.model import CallTimer, ChipModel
from dspsim.sim.errors import ConfigError

#: Secant step in log space (5%): wide enough to see across the model's small steps.
JAC_STEP = 0.05
#: Residual (log scale) of every row at values the chip cannot have.
PENALTY = 10.0
#: Steps of the solver between full secant Jacobians (Broyden updates in between).
BROYDEN_STEPS = 3
#: The solver stops when a step lowers the sum of squares by less than this fraction, or
#: moves the values by less than this fraction (log scale).
FTOL = 1e-3
XTOL = 1e-3
#: A fit stops when its best sum of squares fell by less than this fraction over its last
#: (number of keys + 2) evaluations.
STALL_GAIN = 0.1
#: The tiles a fit used count as settled when the RMS of ln(searched / fixed-tile cycles)
#: over the rows at the fitted values is below SETTLED, or when a round moved no key by
#: more than ROUND_MOVE (log scale) or half its standard error from where the round
#: before ended.
SETTLED = 1e-3
ROUND_MOVE = 5e-3
#: Rounds of fit-then-retile before giving up on the tiles settling.
MAX_ROUNDS = 5

Progress = Callable[[str, int, int], None]
#: every row's cycles and the tile size each call used (None: private storage), or None
#: where the chip cannot have the values evaluated
Evaluation = tuple[np.ndarray, list[int | None]] | None


class _Stop(Exception):
    """The fit has used its budget of evaluations."""


class Objective:
    """Residuals of the rows at values of the keys, remembered, with the best point seen."""

    def __init__(self, model: ChipModel, timer: CallTimer, measured: np.ndarray,
                 budget: int, progress: Progress | None) -> None:
        self.model, self.timer = model, timer
        self.log_measured = np.log(measured)
        self.budget, self.progress = budget, progress
        self.memo: dict[tuple, Evaluation] = {}
        self.evaluations = 0
        self.tiles: list[int | None] | None = None
        self.best: tuple[float, np.ndarray] | None = None
        self.limited = False  # whether evaluations beyond the budget stop the fit
        #: how the last local fit ended: "converged", "budget" (out of evaluations) or
        #: "not converged" (the solver gave up)
        self.ended = "converged"
        self.progress_of_round: list[float] = []  # best cost after each new evaluation
        self.last_jacobian: np.ndarray | None = None  # carried from one round to the next

    def values(self, u: np.ndarray) -> np.ndarray:
        return self.model.originals * np.exp(u)

    def key(self, u: np.ndarray, tiles: Sequence[int | None] | None) -> tuple:
        """What an evaluation depends on: the values as applied, and the tiles."""
        applied = self.model.applied(self.values(u))
        return tuple(applied.values()), None if tiles is None else tuple(tiles)

    def remember(self, u: np.ndarray, tiles: Sequence[int | None], cycles: np.ndarray) -> None:
        """Record cycles timed with ``tiles`` at ``u``: the same as fixing those tiles."""
        self.memo[self.key(u, tiles)] = (cycles, list(tiles))

    def cycles(self, u: np.ndarray, tiles: list[int | None] | None) -> Evaluation:
        """Cycles at ``u`` and tiles used (None where the chip cannot have these values)."""
        key = self.key(u, tiles)
        if key not in self.memo:
            if self.limited and self.evaluations >= self.budget:
                raise _Stop
            self.evaluations += 1
            try:
                config = self.model.config_for(self.values(u))
                self.memo[key] = self.timer.time(config, tiles)
            except (ConfigError, MeasurementError):
                self.memo[key] = None
            if self.progress:
                self.progress("fitting", self.evaluations, self.budget)
        return self.memo[key]

    def try_residuals(self, u: np.ndarray) -> np.ndarray | None:
        """ln(predicted / measured) of every row at ``u`` with the current tiles; None
        where the chip cannot have these values."""
        evaluated = self.cycles(u, self.tiles)
        if evaluated is None:
            return None
        r = np.log(evaluated[0]) - self.log_measured
        cost = float(r @ r)
        if self.best is None or cost < self.best[0]:
            self.best = (cost, np.array(u, dtype=float))
        if self.limited and len(self.progress_of_round) < self.evaluations:
            self._check_stall()
        return r

    def _check_stall(self) -> None:
        """Stop a fit whose best sum of squares has fallen by less than STALL_GAIN over the
        last evaluations (one step and a Jacobian's worth): the fixed tiles it fits with
        are only right near the end, so polishing further buys nothing."""
        history = self.progress_of_round
        assert self.best is not None, "a stall is checked after an evaluation that ran"
        history.append(self.best[0])
        window = len(self.model.keys) + 2
        if len(history) > window and history[-1] > (1 - STALL_GAIN) * history[-1 - window]:
            raise _Stop

    def residuals(self, u: np.ndarray) -> np.ndarray:
        """As :meth:`try_residuals`, with a large constant residual where the chip cannot
        have the values, so that the solver steps back."""
        r = self.try_residuals(u)
        return np.full(len(self.log_measured), PENALTY) if r is None else r

    def step(self, u: np.ndarray, index: int) -> float:
        """The secant step for key ``index``: 5%, or enough to move a whole number by 1."""
        fit_key = self.model.keys[index]
        if not fit_key.whole:
            return JAC_STEP
        value = self.values(u)[index]
        return max(JAC_STEP, math.log((value + 1) / value))

    def jacobian(self, u: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
        """Secant elasticities d ln(cycles) / d ln(value), stepping away from the bounds
        and from values the chip cannot have (a column of zeros if both sides fail)."""
        u = np.asarray(u, dtype=float)
        base = self.try_residuals(u)
        if base is None:
            return np.zeros((len(self.log_measured), len(u)))
        base_values = np.array(list(self.model.applied(self.values(u)).values()), dtype=float)
        columns = []
        for j in range(len(u)):
            h = self.step(u, j)
            columns.append(np.zeros(len(base)))
            tries = [(d, s) for d in ((1, -1) if u[j] + h <= upper[j] else (-1, 1))
                     for s in (1, 2, 4)]
            for direction, scale in tries:
                moved = u.copy()
                moved[j] = u[j] + direction * h * scale
                if not lower[j] - 1e-12 <= moved[j] <= upper[j] + 1e-12:
                    continue
                value = list(self.model.applied(self.values(moved)).values())[j]
                actual = math.log(value / base_values[j])  # whole numbers move in steps
                if actual == 0:
                    continue
                r = self.try_residuals(moved)
                if r is not None:
                    columns[j] = (r - base) / actual
                    break
        return np.column_stack(columns)


    def secant_jacobian(self, lower: np.ndarray, upper: np.ndarray,
                        refresh_every: int = BROYDEN_STEPS) -> Callable[[np.ndarray], np.ndarray]:
        """A Jacobian for the solver that costs one evaluation per key only now and then.

        In between, Broyden's rank-one update makes the last Jacobian agree with the step
        the solver just took, at no extra evaluation. A full secant Jacobian is taken at
        the start, every ``refresh_every`` steps, and whenever the solver had to reject a
        step since the last one (a sign that the updated Jacobian misled it).
        """
        state: dict = {"jacobian": self.last_jacobian, "steps": 0,
                       "evaluations": self.evaluations}

        def jacobian(u: np.ndarray) -> np.ndarray:
            u = np.asarray(u, dtype=float)
            r = self.residuals(u)
            rejected = self.evaluations - state.get("evaluations", 0) > 1
            if state["jacobian"] is None or state["steps"] >= refresh_every or rejected:
                state.update(jacobian=self.jacobian(u, lower, upper), steps=0)
            elif "u" in state:  # the round's first call keeps the Jacobian carried over
                step = u - state["u"]
                if step @ step > 0:
                    J = state["jacobian"]
                    J = J + np.outer(r - state["r"] - J @ step, step) / (step @ step)
                    state.update(jacobian=J, steps=state["steps"] + 1)
            state.update(u=u, r=r, evaluations=self.evaluations)
            self.last_jacobian = state["jacobian"]
            return state["jacobian"]

        return jacobian


def local_fit(objective: Objective, start: np.ndarray, lower: np.ndarray,
              upper: np.ndarray) -> np.ndarray:
    """Bounded trust-region least squares from ``start`` with the objective's tiles; the
    best point seen (the objective's budget of evaluations may stop it early)."""
    from scipy.optimize import least_squares  # noqa: PLC0415 - heavy; only fits need it

    start = np.clip(start, lower, upper)
    objective.best = None
    objective.progress_of_round = [float("inf")] * objective.evaluations
    objective.limited = True
    try:
        objective.residuals(start)
        solved = least_squares(objective.residuals, start,
                               jac=objective.secant_jacobian(lower, upper),
                               bounds=(lower, upper), method="trf", x_scale=1.0, ftol=FTOL,
                               xtol=XTOL, gtol=1e-12)
        objective.ended = "converged" if solved.status > 0 else "not converged"
    except _Stop:
        objective.ended = "budget"
    finally:
        objective.limited = False
    return objective.best[1] if objective.best is not None else start


def starting_point(objective: Objective, u0: np.ndarray, lower: np.ndarray,
                   upper: np.ndarray) -> np.ndarray:
    """Where to start: a coarse look around the chip file's values.

    Each key is tried a quarter of the way (on the log scale) to each of its bounds (a
    factor of 1.8 with the default bounds), whole numbers also half-way, the others kept;
    then the point that takes every key's best try together. The best of these and the
    chip file's values is where the solver starts: a flat or rugged start (a key that no
    row feels yet, or a whole number whose neighbours are worse) need not trap it.
    """
    tried = [u0]
    best_each = u0.copy()
    for j in range(len(u0)):
        costs = {u0[j]: _cost(objective, u0)}
        fractions = (0.25, 0.5) if objective.model.keys[j].whole else (0.25,)
        for end in (lower[j], upper[j]):
            for fraction in fractions:
                u = u0.copy()
                u[j] = u0[j] + (end - u0[j]) * fraction
                costs[u[j]] = _cost(objective, u)
                tried.append(u)
        best_each[j] = min(costs, key=costs.__getitem__)
    tried.append(best_each)
    return min(tried, key=lambda u: _cost(objective, u))


def _cost(objective: Objective, u: np.ndarray) -> float:
    r = objective.residuals(u)
    return float(r @ r)


#: The first step of the final search, in log space, and the smallest (whole numbers stop
#: at one unit).
POLISH_FIRST_STEP = 2 * JAC_STEP
POLISH_LAST_STEP = XTOL
#: Evaluations the final search may take, per key.
POLISH_PER_KEY = 10


def polish(objective: Objective, u: np.ndarray, lower: np.ndarray,
           upper: np.ndarray) -> np.ndarray:
    """A compass search from ``u`` on the cycles with each point's own best tiles.

    The fit before it holds tiles fixed and takes secant steps; where the rows' best
    tilings change with the keys, the cycles step, and it can stop short of the values
    that fit (a fixed point of fit-then-retile that is not the best). Each key is moved by
    a step up and down, a move kept where it lowers the sum of squares, the step halved
    when none does, until the step is below :data:`POLISH_LAST_STEP` or the evaluations
    run out.
    """
    def cost(v: np.ndarray) -> float:
        evaluated = objective.cycles(v, None)
        if evaluated is None:
            return math.inf
        r = np.log(evaluated[0]) - objective.log_measured
        return float(r @ r)

    best, best_cost = np.array(u, dtype=float), cost(u)
    budget = objective.evaluations + POLISH_PER_KEY * len(u)
    step = POLISH_FIRST_STEP
    while step >= POLISH_LAST_STEP and objective.evaluations < budget:
        moved = False
        for j in range(len(best)):
            for direction in (1.0, -1.0):
                trial = best.copy()
                trial[j] = min(upper[j], max(lower[j], best[j] + direction * step))
                if trial[j] == best[j] or objective.evaluations >= budget:
                    continue
                trial_cost = cost(trial)
                if trial_cost < best_cost:
                    best, best_cost, moved = trial, trial_cost, True
                    break
        if not moved:
            step /= 2
    return best
