"""Sweeps from Python: the axes of ``dspsim sweep`` as arguments, the rows as the answer."""
from __future__ import annotations

import os
import tempfile
from typing import Any, Iterable, Mapping, Sequence

from dspsim.sweep.driver import run_sweep
from dspsim.sweep.executors import make_executor
from dspsim.sweep.plan import DEFAULT_FIDELITY, SweepSpec, plan
from dspsim.sweep.store import RowStore
from dspsim.sim.chip.load import packaged_chips
from dspsim.sim.errors import ArgumentError


class SweepRows(list):
    """The rows of a sweep (dicts, the columns of rows.csv), in plan order, with the sweep's
    ``notes`` (combinations skipped and why) and the ``folder`` that keeps them (None when
    the sweep ran in a temporary folder)."""

    def __init__(self, rows: Iterable[dict[str, Any]], notes: list[str], folder: str | None):
        super().__init__(rows)
        self.notes = notes
        self.folder = folder


def _as_list(name: str, values, kind) -> list | None:
    if values is None:
        return None
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        values = [values]
    values = list(values)
    for value in values:
        if not isinstance(value, kind) or isinstance(value, bool):
            what = "a number" if isinstance(kind, tuple) else f"a {kind.__name__}"
            raise ArgumentError(f"{name}: {value!r} is not {what}")
    return values


def sweep(ops: str | Sequence[str], chips: str | Sequence[str] | None = None, *,
          lengths: int | Sequence[int], dtypes: str | Sequence[str] = ("fp32",),
          core_masks: Sequence[int] | None = None, cores: Sequence[int] | None = None,
          params: Mapping[str, float] | None = None,
          sets: Mapping[str, Sequence[float]] | None = None, timing_only: bool = False,
          seed: int = 0, fidelity: str = DEFAULT_FIDELITY, workers: int = 1,
          scheduler: str | None = None, out: str | None = None,
          kernels=None) -> SweepRows:
    """Run a sweep and return its rows: what ``dspsim sweep`` does, from Python.

    ``sets`` maps chip key paths to values (``{"vector.lane_width_bits": [128, 256]}``),
    as ``--set`` does: each combination is a chip of its own, a combination that fails
    validation is skipped with a note, and every row records its ``overrides`` and
    ``config_digest``. With ``out``, rows are kept in that folder and a second call
    resumes; without it they live in a temporary folder for the call only. Pass the rows
    to :func:`dspsim.sweep.elasticities` or :func:`dspsim.sweep.whatif_points`.
    ``kernels``: users' own operators, kernel files as ``Chip(kernels=...)`` takes them.
    """
    sets = dict(sets or {})
    spec = SweepSpec(
        operators=_as_list("ops", ops, str),
        chips=_as_list("chips", chips, str) or sorted(packaged_chips()),
        lengths=_as_list("lengths", lengths, int), dtypes=_as_list("dtypes", dtypes, str),
        core_masks=_as_list("core_masks", core_masks, int),
        core_counts=_as_list("cores", cores, int), params=dict(params or {}),
        numerics=not timing_only, seed=seed, fidelity=fidelity,
        chip_sets={key: _as_list(f"sets[{key!r}]", values, (int, float))
                   for key, values in sets.items()},
        kernels=tuple([kernels] if isinstance(kernels, (str, os.PathLike)) else kernels or ()))
    if spec.core_masks and spec.core_counts:
        raise ArgumentError("give core_masks or cores, not both")
    the_plan = plan(spec)
    with tempfile.TemporaryDirectory(prefix="dspsim-sweep-") as scratch:
        folder = out or scratch
        with RowStore(folder) as store, make_executor(workers, scheduler) as executor:
            outcome = run_sweep(the_plan, store, executor)
            rows = [store.rows[key] for key in outcome.keys]
    return SweepRows(rows, outcome.notes, out)
