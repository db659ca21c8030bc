"""The picture of a calibration: predicted against measured cycles, before and after."""
from __future__ import annotations

import os

import numpy as np

from dspsim.calibration.results import Calibration
from dspsim.plots import pyplot, save_figure


def plot_calibration(calibration: Calibration, path: str | os.PathLike) -> str:
    """Predicted against measured cycles on log-log axes, one marker per row before the fit
    (hollow) and after it (filled), the line predicted = measured and ±10% beside it.
    Writes ``path`` (.png, .svg or .pdf) and returns it."""
    plt = pyplot()
    measured = np.array([r.measurement.cycles for r in calibration.rows])
    before = np.array([r.before for r in calibration.rows], dtype=float)
    after = np.array([r.after for r in calibration.rows], dtype=float)
    fig, ax = plt.subplots(figsize=(6.4, 6.0), layout="constrained")
    everything = np.concatenate([measured, before, after])
    low, high = everything.min() / 1.5, everything.max() * 1.5
    line = np.array([low, high])
    ax.plot(line, line, color="black", linewidth=1, label="predicted = measured")
    for factor in (0.9, 1.1):
        ax.plot(line, line * factor, color="grey", linewidth=0.8, linestyle=":",
                label="±10%" if factor < 1 else None)
    ax.scatter(measured, before, facecolors="none", edgecolors="tab:orange", s=42,
               label=f"before: mean error {calibration.mean_error_before:.1%}, "
                     f"largest {calibration.max_error_before:.1%}")
    ax.scatter(measured, after, color="tab:blue", s=16,
               label=f"after: mean error {calibration.mean_error_after:.1%}, "
                     f"largest {calibration.max_error_after:.1%}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(low, high)
    ax.set_ylim(low, high)
    ax.set_aspect("equal")
    ax.set_xlabel("measured cycles")
    ax.set_ylabel("predicted cycles")
    fitted = ", ".join(k.key for k in calibration.keys)
    ax.set_title(f"{calibration.chip_name}: {len(calibration.rows)} calls of "
                 f"{os.path.basename(calibration.measured_path)}\nfitted: {fitted}",
                 fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(loc="upper left", fontsize=8)
    try:
        return save_figure(fig, path)
    finally:
        plt.close(fig)
