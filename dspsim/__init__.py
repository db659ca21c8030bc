"""dspsim: a cycle-approximate simulator of multi-core DSP chips and their operator library.

The hardware model lives in :mod:`dspsim.sim`, the operator library in
:mod:`dspsim.kernels`; this package joins them (:class:`Chip`, :func:`simulate`) and
holds the command line.
"""
__version__ = "0.1.0"

from dspsim.arrays import simulate
from dspsim.chip import Chip, load_chip
from dspsim.sim.errors import (
    AddressError,
    ArgumentError,
    CapacityError,
    ConfigError,
    DspSimError,
    DTypeError,
)

__all__ = [
    "Chip",
    "load_chip",
    "simulate",
    "DspSimError",
    "ConfigError",
    "AddressError",
    "DTypeError",
    "ArgumentError",
    "CapacityError",
]
