"""Calibration: fit numbers of a chip description to measured cycles.

``calibrate(chip, "measured.csv", ["memory.ddr.efficiency", "dma.setup_cycles"])`` times
every measured call on the chip, fits the keys (log-space least squares, see
:mod:`.fit`), and returns a :class:`Calibration`: each key's fitted value with its
sensitivity and whether the data pin it down, and every row before and after.
:func:`write_fitted_chip` writes the chip file with the fitted values, its text and
comments otherwise unchanged; :func:`plot_calibration` draws predicted against measured.
"""
from dspsim.calibration.bounds import parse_bounds
from dspsim.calibration.driver import calibrate
from dspsim.calibration.measurements import Measurement, MeasurementError, load_measurements
from dspsim.calibration.results import Calibration, KeyFit, RowFit
from dspsim.calibration.synthetic import calls, synthetic_measurements, write_measurements

__all__ = ["calibrate", "parse_bounds", "Measurement", "MeasurementError", "load_measurements",
           "Calibration", "KeyFit", "RowFit", "calls", "synthetic_measurements",
           "write_measurements"]
