"""Studies over many simulated runs: plan a grid, run it anywhere, keep every row.

One engine serves both kinds of study. :mod:`~dspsim.sweep.plan` expands call sweeps
(operators × chips × dtypes × lengths × masks) and :mod:`~dspsim.sweep.program_study`
program studies (a program file's parameters) into lazily built runs
(:mod:`~dspsim.sweep.study`), :mod:`~dspsim.sweep.chips` gives each chip once and its
what-if variants, :mod:`~dspsim.sweep.executors` runs them here or on a cluster,
:mod:`~dspsim.sweep.run` is what one call does, :mod:`~dspsim.sweep.store` keeps the rows
resumably, :mod:`~dspsim.sweep.driver` joins them, :mod:`~dspsim.sweep.api` is the same
from Python, and :mod:`~dspsim.sweep.whatif` ranks what each chip parameter does.
"""
from dspsim.sweep.api import SweepRows, sweep
from dspsim.sweep.driver import SweepOutcome, SweepSpec, plan, row_group, rows_for_plots, run_sweep
from dspsim.sweep.program_study import ProgramSweepSpec, plan_program
from dspsim.sweep.study import DEFAULT_MAX_RUNS, Plan
from dspsim.sweep.whatif import Elasticity, WhatIfPoint, elasticities, whatif_points

__all__ = ["SweepSpec", "ProgramSweepSpec", "Plan", "SweepOutcome", "SweepRows", "plan",
           "plan_program", "run_sweep", "row_group", "rows_for_plots", "sweep",
           "elasticities", "whatif_points", "Elasticity", "WhatIfPoint", "DEFAULT_MAX_RUNS"]
