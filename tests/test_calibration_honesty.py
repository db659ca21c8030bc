"""A calibration says when it did not converge, gives one uncertainty figure, and warns
about structural keys."""
from __future__ import annotations

import math
import os

from dspsim.calibration import calibrate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEASURED = os.path.join(ROOT, "examples", "calibration", "measured.csv")


def test_a_fit_out_of_budget_pins_nothing_down_and_says_so():
    # two evaluations, too few to fit the setup cycles (the start and one step)
    result = calibrate("ft78ne", MEASURED, ["dma.setup_cycles", "cores"], max_evaluations=2)
    assert result.message.startswith("NOT converged")
    assert all(not k.pinned and "did not converge" in k.reason for k in result.keys)
    (warning,) = [n for n in result.notes if n.startswith("warning:")]
    assert "cores is structural" in warning
    for key in result.keys:  # the reason quotes the same figure the table shows
        if "loosely" in key.reason:
            assert f"±{math.expm1(key.std_error):.0%}" in key.reason
