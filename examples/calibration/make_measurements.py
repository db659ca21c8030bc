"""Make examples/calibration/measured.csv: synthetic measurements of FT78NE.

The cycles are the simulator's own, on an FT78NE changed on purpose (DDR efficiency,
DMA setup and launch cycles below), times 1.5% random noise: a stand-in for cycles
measured on hardware, so that a calibration of the packaged FT78NE has something to find.

    python examples/calibration/make_measurements.py
"""
import os

from dspsim.calibration import calls, synthetic_measurements, write_measurements

#: the values the "hardware" has; the packaged chip says 0.8, 200 and 300
TRUTH = {"memory.ddr.efficiency": 0.62, "dma.setup_cycles": 310, "call.launch_cycles": 380}
NOISE = 0.015
SEED = 7

rows = (calls(["fp_relu_grad_s", "fp_gelu_grad_s", "fp_l_relu_s"], [2048, 8192, 32768],
              [0x1, 0x3, 0xFF])
        + calls(["fp_gelu_grad_p", "fp_relu_grad_p"], [1024, 4096], [None]))
measured = synthetic_measurements("ft78ne", rows, TRUTH, noise=NOISE, seed=SEED)
header = (f"Synthetic measurements, not from hardware: FT78NE with "
          f"{', '.join(f'{k}={v}' for k, v in TRUTH.items())}, cycles times exp({NOISE} N(0,1)) "
          f"noise (seed {SEED}). Made by examples/calibration/make_measurements.py.")
path = write_measurements(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                       "measured.csv"), measured, header)
print(f"{len(measured)} rows: {path}")
