"""``calibrate``: fit chosen chip keys to a file of measured cycles (see :mod:`.fit`)."""
from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Mapping, Sequence

import numpy as np

from dspsim.calibration.bounds import log_bounds
from dspsim.calibration.determination import determination
from dspsim.calibration.fit import (
    MAX_ROUNDS,
    ROUND_MOVE,
    SETTLED,
    Objective,
    Progress,
    local_fit,
    polish,
    starting_point,
)
from dspsim.calibration.measurements import MeasurementError, load_measurements
from dspsim.calibration.model import CallTimer, ChipModel, reported_cycles
from dspsim.calibration.results import Calibration, KeyFit, RowFit
from dspsim.kernels import kernel_set

#: Evaluations of every row a fit may spend per key fitted (besides a fixed few): a
#: trust-region step costs one evaluation plus one per key.
EVALUATIONS_PER_KEY = 12
EVALUATIONS_BASE = 20
#: How much worse (RMS of ln(predicted / measured)) the rows may fit with a key that they
#: do not pin down put back to its value in the chip file, which is then left alone.
REVERT_TOLERANCE = 1e-3


def calibrate(chip: str | os.PathLike, measured: str | os.PathLike, keys: Sequence[str],
              bounds: Mapping[str, tuple[float, float]] | None = None, *,
              max_evaluations: int | None = None,
              progress: Progress | None = None, kernels=None) -> Calibration:
    """Fit ``keys`` of ``chip`` (a packaged name or a YAML path) to the cycles in the CSV
    file ``measured`` (see :mod:`dspsim.calibration.measurements`).

    ``bounds`` maps keys to (low, high) values (default: a tenth to ten times the chip's
    value, narrowed to what the chip accepts). ``max_evaluations`` caps the evaluations of
    every row during the fit itself. ``progress(stage, done, total)`` is called as it goes.
    ``kernels``: users' own operators the measured rows may name (as ``Chip(kernels=)``).
    Raises a DspSimError naming the key, or the file's line, of any problem.
    """
    started, started_cpu = time.perf_counter(), time.process_time()
    report = progress or (lambda *args: None)
    measured_path = os.fspath(measured)
    known_kernels = kernel_set(kernels)
    rows = load_measurements(measured_path, known_kernels)
    model = ChipModel(chip, keys)
    if len(rows) < len(model.keys):
        raise MeasurementError(
            f"{measured_path}: {len(rows)} measured row{'s' * (len(rows) != 1)} for "
            f"{len(model.keys)} keys; a fit needs at least as many rows as keys (and "
            f"rows that differ in what bounds them)")
    lower, upper = log_bounds(model, bounds or {})
    timer = CallTimer(rows, measured_path, known_kernels)
    before, tiles = timer.time(model.config,
                               progress=lambda done, total: report("timing the measured calls",
                                                                   done, total))
    measured_cycles = np.array([row.cycles for row in rows])
    budget = max_evaluations or EVALUATIONS_BASE + EVALUATIONS_PER_KEY * len(model.keys)
    objective = Objective(model, timer, measured_cycles, budget, progress)
    objective.tiles = tiles
    u0 = np.clip(np.zeros(len(model.keys)), lower, upper)
    objective.remember(u0, tiles, before)
    u = starting_point(objective, u0, lower, upper)

    notes: list[str] = []
    names = [k.key for k in model.keys]
    for rounds in range(1, MAX_ROUNDS + 1):
        previous = u
        u = local_fit(objective, u, lower, upper)
        fixed = objective.cycles(u, objective.tiles)
        searched = objective.cycles(u, None)
        if searched is None:
            raise MeasurementError(f"{measured_path}: no values of {', '.join(keys)} within "
                                   f"the bounds run every row; check the bounds")
        cycles, used = searched
        objective.remember(u, used, cycles)
        objective.tiles = used
        agree = (fixed is not None
                 and np.sqrt(np.mean(np.log(cycles / fixed[0]) ** 2)) < SETTLED)
        if agree or (rounds > 1 and _small_move(objective, u - previous, cycles, names)):
            break
    else:
        notes.append(f"the rows' best tile sizes still moved the fit after {MAX_ROUNDS} "
                     f"rounds; the values are fitted with the tiles of the last round but one")

    polished = polish(objective, u, lower, upper)
    if not np.array_equal(polished, u):
        searched = objective.cycles(polished, None)
        assert searched is not None, "the search keeps only points every row runs at"
        u, (cycles, _) = polished, searched
    ended = objective.ended  # how the last round's solver ended, before the checks below
    residuals = np.log(cycles) - np.log(measured_cycles)
    jacobian = objective.jacobian(u, lower, upper)
    found = determination(jacobian, residuals, names)
    if ended != "converged" and _settled(jacobian, residuals, u, lower, upper,
                                         found.std_error):
        ended = "converged"  # out of budget, but where one more step would not move it
    unfinished = {"budget": f"the budget of {budget} evaluations ran out before the fit "
                            f"converged (--max-evaluations)",
                  "not converged": "the solver stopped without converging"}.get(ended)
    if unfinished:
        short = ("the fit did not converge (its budget ran out)" if ended == "budget" else
                 "the fit did not converge")
        for j in range(len(names)):
            found.reasons[j] = "; ".join(r for r in (short, found.reasons[j]) if r)
    notes += structural_notes(names)
    written = [True] * len(names)
    rms = math.sqrt(float(np.mean(residuals ** 2)))
    for j, reason in enumerate(found.reasons):
        if not reason.startswith("no row") or not lower[j] <= 0 <= upper[j]:
            continue
        back = u.copy()
        back[j] = 0.0
        r = objective.try_residuals(back)
        if r is not None and math.sqrt(float(np.mean(r ** 2))) <= rms + REVERT_TOLERANCE:
            u, written[j] = back, False
        else:
            found.reasons[j] += ("; the fitted value is kept: the rows fit worse with the old "
                                 "one, so they bound the key from one side")
    if not all(written):
        searched = objective.cycles(u, None)
        # the keys put back ran every row with the fixed tiles, so they do with searched ones
        assert searched is not None, "the values put back no longer run every row"
        cycles = searched[0]

    applied = model.applied(objective.values(u))
    fits = [KeyFit(key=k.key, original=k.original, whole=k.whole,
                   fitted=applied[k.key] if written[j] else k.original,
                   lower=float(k.original * math.exp(lower[j])),
                   upper=float(k.original * math.exp(upper[j])),
                   sensitivity=float(found.sensitivity[j]),
                   largest_elasticity=float(found.largest[j]),
                   std_error=float(found.std_error[j]), pinned=not found.reasons[j],
                   reason=found.reasons[j], written=written[j])
            for j, k in enumerate(model.keys)]
    row_fits = [RowFit(row, reported_cycles(b), reported_cycles(a))
                for row, b, a in zip(rows, before, cycles, strict=True)]
    return Calibration(
        chip_path=model.path, chip_name=model.config.name, measured_path=measured_path,
        keys=fits, rows=row_fits, evaluations=objective.evaluations + 1,
        simulations=timer.simulations, seconds=time.perf_counter() - started,
        cpu_seconds=time.process_time() - started_cpu, rounds=rounds,
        message=(f"fitted {len(keys)} key{'s' * (len(keys) != 1)} to {len(rows)} rows"
                 if not unfinished else
                 f"NOT converged ({unfinished}): {len(keys)} key{'s' * (len(keys) != 1)} "
                 f"against {len(rows)} rows"),
        notes=notes, chip_text=model.text)



def _settled(jacobian: np.ndarray, residuals: np.ndarray, u: np.ndarray, lower: np.ndarray,
             upper: np.ndarray, spread: np.ndarray) -> bool:
    """Whether the fit stands where it would stay: one more Gauss-Newton step (within the
    bounds) moves every key by less than ROUND_MOVE or its standard error (within the
    uncertainty the data leave)."""
    if not np.all(np.isfinite(jacobian)) or not np.all(np.isfinite(residuals)):
        return False
    step = np.linalg.lstsq(jacobian, -residuals, rcond=None)[0]
    moved = np.clip(u + step, lower, upper) - u
    allowed = np.maximum(ROUND_MOVE, np.nan_to_num(spread, nan=0.0))
    return bool(np.all(np.abs(moved) < allowed))


#: keys that say what a chip is built of (how many, how wide, where), not how fast it runs
STRUCTURAL_KEYS = re.compile(r"^cores$|lane_width_bits$|\.count$|^vector\.units\.|"
                             r"size_(?:kib|mib|bytes)$|base_address$|core_stride_bytes$")


def structural_notes(keys: Sequence[str]) -> list[str]:
    """A warning for each structural key asked to be fitted."""
    return [f"warning: {key} is structural (what the chip is built of, not a rate or a "
            f"latency): fitted to cycles it moves only to make up for other errors of the "
            f"model; fit rates and latencies instead (e.g. memory.ddr.efficiency, "
            f"dma.setup_cycles)" for key in keys if STRUCTURAL_KEYS.search(key)]


def _small_move(objective: Objective, moved: np.ndarray, cycles: np.ndarray,
                names: list[str]) -> bool:
    """Whether a round moved every key by less than ROUND_MOVE, or by less than half its
    standard error: with noisy rows, tile choices that flip near a tie move a loosely
    determined key back and forth within its uncertainty, and more rounds buy nothing."""
    if objective.last_jacobian is None:
        return bool(np.all(np.abs(moved) < ROUND_MOVE))
    residuals = np.log(cycles) - objective.log_measured
    spread = determination(objective.last_jacobian, residuals, names).std_error
    allowed = np.maximum(ROUND_MOVE, 0.5 * np.nan_to_num(spread, nan=0.0))
    return bool(np.all(np.abs(moved) < allowed))
