"""Studies over many simulated calls: plan a grid, run it anywhere, keep every row.

:mod:`~dspsim.sweep.plan` expands the axes into runs (:mod:`~dspsim.sweep.chips`: each chip
once, and its what-if variants), :mod:`~dspsim.sweep.executors` runs them here or on a
cluster, :mod:`~dspsim.sweep.run` is what one run does, :mod:`~dspsim.sweep.store` keeps
the rows resumably, :mod:`~dspsim.sweep.driver` joins them, :mod:`~dspsim.sweep.api` is
the same from Python, and :mod:`~dspsim.sweep.whatif` ranks what each chip parameter does.
"""
from dspsim.sweep.api import SweepRows, sweep
from dspsim.sweep.driver import (SweepOutcome, SweepSpec, plan, row_group, rows_for_plots,
                                 run_sweep)
from dspsim.sweep.whatif import Elasticity, WhatIfPoint, elasticities, whatif_points

__all__ = ["SweepSpec", "SweepOutcome", "SweepRows", "plan", "run_sweep", "row_group",
           "rows_for_plots", "sweep", "elasticities", "whatif_points", "Elasticity",
           "WhatIfPoint"]
