"""dspsim: a cycle-approximate simulator of multi-core DSP chips and their operator library.

The hardware model lives in :mod:`dspsim.sim`, the operator library in
:mod:`dspsim.kernels`; this package joins them (:class:`Chip`, :func:`simulate`) and
holds the command line.
"""
import os as _os

# In a source checkout the repository's top-level sim/, kernels/ and configs/ folders are
# this package's subpackages (an installed wheel puts them inside it). Extending __path__
# lets `import dspsim.sim` work from the checkout root whichever way it was installed.
_checkout_root = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if _os.path.isfile(_os.path.join(_checkout_root, "sim", "__init__.py")) and not _os.path.isdir(
    _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "sim")
):
    __path__.append(_checkout_root)  # noqa: F821 - __path__ is set for packages

__version__ = "0.1.0"

from dspsim.sim.errors import (  # noqa: E402
    AddressError,
    ArgumentError,
    CapacityError,
    ConfigError,
    DspSimError,
    DTypeError,
)
from dspsim.chip import Chip, load_chip  # noqa: E402
from dspsim.arrays import simulate  # noqa: E402

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
