"""Studies over many simulated calls: plan a grid, run it anywhere, keep every row.

:mod:`~dspsim.sweep.plan` expands the axes into runs, :mod:`~dspsim.sweep.executors`
runs them here or on a cluster, :mod:`~dspsim.sweep.run` is what one run does,
:mod:`~dspsim.sweep.store` keeps the rows resumably, and :mod:`~dspsim.sweep.driver`
joins them.
"""
from dspsim.sweep.driver import (SweepOutcome, SweepSpec, plan, row_group, rows_for_plots,
                                 run_sweep)

__all__ = ["SweepSpec", "SweepOutcome", "plan", "run_sweep", "row_group", "rows_for_plots"]
