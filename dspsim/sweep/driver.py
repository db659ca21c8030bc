"""core_mask scaling studies: many simulated calls, one row each.

A sweep is the product operators × chips × dtypes × lengths × core masks
(:mod:`dspsim.sweep.plan`). :func:`run_sweep` runs the planned calls on an
:class:`~dspsim.sweep.executors.Executor` (:mod:`dspsim.sweep.run` is what a worker does) and
appends each finished row to a :class:`~dspsim.sweep.store.RowStore`, skipping rows
already there, so that rerunning a sweep resumes it.

Speedup is measured against the one-core run (core_mask 0x1) of the same chip, operator,
dtype and length. Those baseline runs go first, so every other row carries its speedup,
parallel efficiency and the ceiling that DDR bandwidth puts on the speedup the moment it
is written; a baseline the user did not ask for is added (and noted).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

from dspsim.sweep.executors import Executor
from dspsim.sweep.plan import BASELINE_MASK, DEFAULT_FIDELITY, Plan, RunSpec, SweepSpec, plan
from dspsim.sweep.run import Task, execute
from dspsim.sweep.store import RowStore

__all__ = ["SweepSpec", "SweepOutcome", "plan", "run_sweep", "row_group", "rows_for_plots"]


@dataclass
class SweepOutcome:
    """What a call of :func:`run_sweep` did."""

    planned: int  # runs in the plan
    already_done: int  # found in the store and skipped
    ran: int  # rows written by this call
    notes: list[str]
    keys: list[str]  # rows of this sweep (planned runs and their baselines), in plan order


def _is_done(run: RunSpec, rows: dict[str, dict]) -> bool:
    row = rows.get(run.key)
    return row is not None and (not run.numerics or bool(row.get("numerics")))


def run_sweep(the_plan: Plan, store: RowStore, executor: Executor, *,
              on_start: Callable[[int], None] | None = None,
              on_row: Callable[[dict[str, Any]], None] | None = None) -> SweepOutcome:
    """Run every row of ``the_plan`` (see :func:`plan`) not already in ``store``; append
    each as it finishes.

    ``on_start(total)`` is called once with the number of runs to do; ``on_row(row)``
    after each is stored (notes from refused runs pass ``{}``). Exceptions other than
    the chip refusing a run stop the sweep; rows stored until then stay.
    """
    notes = list(the_plan.notes) + list(executor.notes)
    if store.repaired_bytes:
        notes.append(f"cut a torn last line ({store.repaired_bytes} bytes) off rows.jsonl; "
                     f"that run is done again")
    store.notes = notes  # the same list: notes added below reach rows.json too
    todo = [run for run in the_plan.runs if not _is_done(run, store.rows)]
    baselines = {}
    for run in todo:
        base = run.baseline()
        if not _is_done(base, store.rows):
            baselines.setdefault(base.key, base)
    planned_keys = {run.key for run in the_plan.runs}
    extra = [b for b in baselines.values() if b.key not in planned_keys]
    if extra:
        notes.append(f"added {len(extra)} one-core baseline run(s) (core_mask 0x1) that "
                     f"speedup is measured against")
    rest = [run for run in todo if run.key not in baselines]
    if on_start:
        on_start(len(baselines) + len(rest))

    baseline_cycles = {row_group(row): row["cycles"] for row in store.rows.values()
                       if row.get("core_mask") == BASELINE_MASK}
    ran = 0
    for phase in (list(baselines.values()), rest):
        tasks = [Task(run, baseline_cycles.get(run.group)) for run in phase]
        for task, outcome in executor.map_unordered(execute, tasks):
            if "row" in outcome:
                store.append(outcome["row"])
                ran += 1
                if task.run.core_mask == BASELINE_MASK:
                    baseline_cycles[task.run.group] = outcome["row"]["cycles"]
            else:
                notes.append(outcome["note"])
            if on_row:
                on_row(outcome.get("row", {}))
    keys = dict.fromkeys(k for run in the_plan.runs for k in (run.baseline().key, run.key))
    return SweepOutcome(len(the_plan.runs), len(the_plan.runs) - len(todo), ran, notes,
                        [k for k in keys if k in store.rows])


def row_group(row: dict[str, Any]) -> tuple:
    """The baseline group of a stored row (see :attr:`RunSpec.group`)."""
    params = tuple((k, float(v)) for k, _, v in
                   (p.partition("=") for p in row.get("params", "").split(",") if p))
    return (row["chip"], row["config_digest"], row["operator"], row["length"], params,
            row.get("fidelity") or DEFAULT_FIDELITY)


def rows_for_plots(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows sorted for display: chip (as given before its what-if variants), operator,
    dtype, length, cores, mask."""
    return sorted(rows, key=lambda r: (r["chip"], r.get("overrides") or "", r["operator"],
                                       r["dtype"], r["length"], r["cores"], r["core_mask"]))
