"""Sweeps from Python: the axes of ``dspsim sweep`` as arguments, the rows as the answer."""
from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dspsim.sim.chip.load import packaged_chips
from dspsim.sim.errors import ArgumentError
from dspsim.sweep.driver import run_sweep
from dspsim.sweep.executors import make_executor
from dspsim.sweep.plan import DEFAULT_FIDELITY, SweepSpec, plan
from dspsim.sweep.program_study import ProgramSweepSpec, plan_program
from dspsim.sweep.store import RowStore


class SweepRows(list):
    """The rows of a sweep (dicts, the columns of rows.csv), in plan order, with the sweep's
    ``notes`` (combinations skipped and why) and the ``folder`` that keeps them (None when
    the sweep ran in a temporary folder)."""

    def __init__(self, rows: Iterable[dict[str, Any]], notes: list[str], folder: str | None):
        super().__init__(rows)
        self.notes = notes
        self.folder = folder


def _optional_list(name: str, values: object, kind: type | tuple[type, ...]) -> list | None:
    """``values`` (one or several) as a checked list, or None if not given."""
    return None if values is None else _as_list(name, values, kind)


def _as_list(name: str, values: object, kind: type | tuple[type, ...]) -> list:
    """``values`` (one or several) as a list, each checked to be a ``kind``; None as the
    empty list (which the spec's checks refuse with a message of their own)."""
    if values is None:
        return []
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        values = [values]
    values = list(values)
    for value in values:
        if not isinstance(value, kind) or isinstance(value, bool):
            what = "a number" if isinstance(kind, tuple) else f"a {kind.__name__}"
            raise ArgumentError(f"{name}: {value!r} is not {what}")
    return values


def sweep(ops: str | Sequence[str] | None = None, chips: str | Sequence[str] | None = None,
          *, lengths: int | Sequence[int] | None = None,
          dtypes: str | Sequence[str] = ("fp32",),
          core_masks: Sequence[int] | None = None, cores: Sequence[int] | None = None,
          params: Mapping[str, float] | None = None,
          sets: Mapping[str, Sequence[float]] | None = None, timing_only: bool = False,
          seed: int = 0, fidelity: str = DEFAULT_FIDELITY, workers: int = 1,
          scheduler: str | None = None, out: str | None = None,
          program: str | os.PathLike | None = None,
          vary: Mapping[str, Sequence[float]] | None = None,
          max_runs: int | None = None, kernels=None) -> SweepRows:
    """Run a study and return its rows: what ``dspsim sweep`` does, from Python.

    A call sweep names ``ops`` and ``lengths`` (and optionally chips, dtypes, masks or
    core counts, operator ``params``). A program study names ``program`` (a program
    file) and ``vary``, values of the file's parameters (``{"mask_a": [0x1, 0xf]}``);
    the chip and lengths are the file's.

    ``sets`` maps chip key paths to values (``{"vector.lane_width_bits": [128, 256]}``),
    as ``--set`` does, for either kind: each combination is a chip of its own, a
    combination that fails validation is skipped with a note, and every row records its
    ``overrides`` and ``config_digest``. A study of more than ``max_runs`` runs
    (default :data:`~dspsim.sweep.study.DEFAULT_MAX_RUNS`) is refused before it starts.
    With ``out``, rows are kept in that folder and a second call resumes; without it
    they live in a temporary folder for the call only. Pass the rows to
    :func:`dspsim.sweep.elasticities` or :func:`dspsim.sweep.whatif_points`.
    ``kernels``: users' own operators, kernel files as ``Chip(kernels=...)`` takes them
    (for a program study, besides those its file's ``kernels:`` names).
    """
    chip_sets = {key: _as_list(f"sets[{key!r}]", values, (int, float))
                 for key, values in dict(sets or {}).items()}
    own = tuple([kernels] if isinstance(kernels, (str, os.PathLike)) else kernels or ())
    if program is not None:
        given = [name for name, value in (("ops", ops), ("chips", chips), ("lengths", lengths),
                                          ("core_masks", core_masks), ("cores", cores),
                                          ("params", params)) if value is not None]
        if given:
            raise ArgumentError(f"{', '.join(given)} cannot be given with program: the "
                                f"program file names its chip, lengths and masks; vary its "
                                f"parameters with vary={{NAME: [V1, V2]}}")
        the_plan = plan_program(ProgramSweepSpec(
            os.fspath(program),
            {name: _as_list(f"vary[{name!r}]", values, (int, float))
             for name, values in dict(vary or {}).items()},
            chip_sets, numerics=not timing_only,
            fidelity=fidelity, kernels=own))
    else:
        if vary:
            raise ArgumentError("vary= varies a program file's parameters; give program= "
                                "too, or sweep calls with ops= and lengths=")
        if ops is None or lengths is None:
            raise ArgumentError("give ops= and lengths= (a call sweep) or program= (a "
                                "program study)")
        spec = SweepSpec(
            operators=_as_list("ops", ops, str),
            chips=_as_list("chips", chips, str) or sorted(packaged_chips()),
            lengths=_as_list("lengths", lengths, int), dtypes=_as_list("dtypes", dtypes, str),
            core_masks=_optional_list("core_masks", core_masks, int),
            core_counts=_optional_list("cores", cores, int), params=dict(params or {}),
            numerics=not timing_only, seed=seed, fidelity=fidelity, chip_sets=chip_sets,
            kernels=own)
        if spec.core_masks and spec.core_counts:
            raise ArgumentError("give core_masks or cores, not both")
        the_plan = plan(spec)
    the_plan.check_size(max_runs)
    with tempfile.TemporaryDirectory(prefix="dspsim-sweep-") as scratch:
        folder = out or scratch
        with RowStore(folder, the_plan.schema) as store, \
                make_executor(workers, scheduler) as executor:
            outcome = run_sweep(the_plan, store, executor)
            rows = [store.rows[key] for key in outcome.keys]
    return SweepRows(rows, outcome.notes, out)
