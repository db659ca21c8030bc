"""The one runner of studies: many simulated runs, one row each, kept and resumed.

A study is a call sweep (operators × chips × dtypes × lengths × core masks,
:mod:`dspsim.sweep.plan`) or a program study (a program file's parameters,
:mod:`dspsim.sweep.program_study`), either with what-if axes over the chip. Both give a
:class:`~dspsim.sweep.study.Plan`; :func:`run_sweep` runs its runs on an
:class:`~dspsim.sweep.executors.Executor` (:data:`EXECUTORS` says what a worker does with
each kind of run) and appends each finished row to a
:class:`~dspsim.sweep.store.RowStore`, skipping rows already there, so that rerunning a
study resumes it.

The plan is consumed in chunks of :data:`CHUNK` runs: memory stays flat whatever the
grid. Within a chunk, the runs others are measured against go first: a call's speedup
is measured against the one-core run (core_mask 0x1) of the same chip, operator, dtype
and length, so every other row carries its speedup, parallel efficiency and the ceiling
that DDR bandwidth puts on the speedup the moment it is written; a baseline the user did
not ask for is added (and counted apart in the summary).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from dspsim.sweep.chips import parse_overrides
from dspsim.sweep.executors import Executor
from dspsim.sweep.plan import DEFAULT_FIDELITY, RunSpec, SweepSpec, plan
from dspsim.sweep.program_study import ProgramRun, execute_program
from dspsim.sweep.run import execute_call
from dspsim.sweep.store import RowStore
from dspsim.sweep.study import Plan, Run
from dspsim.sweep.whatif import numeric_order

__all__ = ["SweepSpec", "SweepOutcome", "EXECUTORS", "plan", "run_sweep", "row_group",
           "rows_for_plots"]

#: What a worker does with each kind of run: ``fn(run, baseline_cycles)`` returns
#: ``{"row": {...}}`` or ``{"note": "..."}`` (a run the chip or file refused). A new kind
#: of study registers its run type here.
EXECUTORS: dict[type, Callable[[Any, int | None], dict[str, Any]]] = {
    RunSpec: execute_call, ProgramRun: execute_program}
#: Runs built and held at a time.
CHUNK = 256


@dataclass(frozen=True)
class Task:
    """What a worker receives: a run and, if known, the cycles of the run it is measured
    against."""

    run: Any
    baseline_cycles: int | None


def execute(task: Task) -> dict[str, Any]:
    """Execute one task (module-level, so that worker processes and Dask can run it)."""
    return EXECUTORS[type(task.run)](task.run, task.baseline_cycles)


@dataclass
class SweepOutcome:
    """What a call of :func:`run_sweep` did."""

    planned: int  # runs of the plan (the ones asked for, without added baselines)
    already_done: int  # planned runs and baselines found in the store and skipped
    ran: int  # rows written by this call (planned runs and added baselines)
    notes: list[str]
    keys: list[str]  # rows of this sweep (planned runs and their baselines), in plan order
    baselines: int = 0  # one-core baselines added to the planned runs (done now or before)

    def summary(self, folder: str) -> str:
        """``32 runs done, 0 already in F (16 planned + 16 one-core baselines)``."""
        added = (f" + {self.baselines:,} one-core baseline{'s' * (self.baselines != 1)}"
                 if self.baselines else "")
        return (f"{self.ran:,} run{'s' * (self.ran != 1)} done, {self.already_done:,} "
                f"already in {folder} ({self.planned:,} planned{added})")


def _is_done(run, rows: dict[str, dict]) -> bool:
    row = rows.get(run.key)
    return row is not None and (not run.numerics or bool(row.get("numerics")))


def _chunks(runs: Iterator, size: int) -> Iterator[list]:
    """Runs in lists of about ``size``, never parting runs that share a baseline (the plan
    yields them one after the other), so that a baseline is run once, before its group."""
    chunk: list = []
    for run in runs:
        if len(chunk) >= size and not _same_baseline(chunk[-1], run):
            yield chunk
            chunk = []
        chunk.append(run)
    if chunk:
        yield chunk


def _same_baseline(one, other) -> bool:
    base, theirs = one.baseline(), other.baseline()
    return base is not None and theirs is not None and base.key == theirs.key


def run_sweep(the_plan: Plan, store: RowStore, executor: Executor, *,
              on_start: Callable[[int], None] | None = None,
              on_row: Callable[[dict[str, Any]], None] | None = None,
              on_progress: Callable[[int, int], None] | None = None) -> SweepOutcome:
    """Run every run of ``the_plan`` (see :func:`plan`) not already in ``store``; append
    each row as it finishes.

    ``on_start(total)`` is called once with the plan's runs at most (planned and
    baselines); ``on_row(row)`` after each run is stored (notes from refused runs pass
    ``{}``); ``on_progress(done, total)`` as runs finish or are found done. Exceptions
    other than the chip refusing a run stop the sweep; rows stored until then stay.
    """
    notes = list(the_plan.notes) + list(executor.notes)
    if store.repaired_bytes:
        notes.append(f"cut a torn last line ({store.repaired_bytes} bytes) off rows.jsonl; "
                     f"that run is done again")
    store.notes = notes  # the same list: notes added below reach rows.json too
    total = the_plan.total
    if on_start:
        on_start(total)
    counts = {"planned": 0, "done_before": 0, "ran": 0, "baselines": 0, "progress": 0}
    keys: dict[str, None] = {}

    def progress(step: int = 1) -> None:
        counts["progress"] += step
        if on_progress:
            on_progress(counts["progress"], max(total, counts["progress"]))

    def store_outcome(task: Task, outcome: dict[str, Any]) -> None:
        if "row" in outcome:
            store.append(outcome["row"])
            counts["ran"] += 1
        else:
            notes.append(outcome["note"])
        if on_row:
            on_row(outcome.get("row", {}))
        progress()

    planned_notes: list[str] = []
    for chunk in _chunks(the_plan.iter_runs(planned_notes), CHUNK):
        chunk_keys = {run.key for run in chunk}
        bases: dict[str, Run] = {}
        for run in chunk:
            base = run.baseline()
            if base is not None:
                bases.setdefault(base.key, base)
                keys.setdefault(base.key)
            keys.setdefault(run.key)
        added = [base for key, base in bases.items() if key not in chunk_keys]
        counts["planned"] += len(chunk)
        counts["baselines"] += len(added)
        first = [base for base in bases.values() if not _is_done(base, store.rows)]
        rest = [run for run in chunk if run.key not in bases and not _is_done(run, store.rows)]
        found = len(chunk) + len(added) - len(first) - len(rest)
        counts["done_before"] += found
        progress(found)
        for phase in (first, rest):  # a phase's tasks are made once the phase before ended
            tasks = [Task(run, _baseline_cycles(run, store.rows)) for run in phase]
            for task, outcome in executor.map_unordered(execute, tasks):
                store_outcome(task, outcome)
    notes.extend(planned_notes)
    if counts["baselines"]:
        notes.append(f"added {counts['baselines']:,} one-core baseline run(s) (core_mask 0x1) "
                     f"that speedup is measured against")
    return SweepOutcome(counts["planned"], counts["done_before"], counts["ran"], notes,
                        [k for k in keys if k in store.rows], counts["baselines"])


def _baseline_cycles(run, rows: dict[str, dict]) -> int | None:
    """The cycles of the run ``run`` is measured against, if stored."""
    base = run.baseline()
    if base is None:
        return None
    row = rows.get(base.key)
    return row["cycles"] if row is not None else None


def row_group(row: dict[str, Any]) -> tuple:
    """The baseline group of a stored row (see :attr:`RunSpec.group`)."""
    params = tuple((k, float(v)) for k, _, v in
                   (p.partition("=") for p in row.get("params", "").split(",") if p))
    return (row["chip"], row["config_digest"], row["operator"], row["length"], params,
            row.get("fidelity") or DEFAULT_FIDELITY)


def rows_for_plots(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows sorted for display: chip (as given before its what-if variants, which follow
    in the numeric order of their values), then operator, dtype, length, cores and mask
    for calls, or program and parameters (numerically) for programs."""
    def order(row: dict[str, Any]) -> tuple:
        variant = tuple((key, value) for key, value in parse_overrides(row.get("overrides")))
        if row.get("study") == "program":
            case: tuple = (row["program"], numeric_order(row.get("parameters", "")))
        else:
            case = (row["operator"], row["dtype"], row["length"], row["cores"],
                    row["core_mask"])
        return (row["chip"], len(variant) > 0, variant, case)
    return sorted(rows, key=order)
