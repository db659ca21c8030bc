"""The operator library: each operator's math, C names and per-vector instruction mix.

Pure description and numpy; nothing here knows how the chip is simulated.
"""
from dspsim.kernels.dtypes import DTYPES, DType
from dspsim.kernels.loading import ENTRY_POINT_GROUP, KernelSource, installed_kernels, kernel_set
from dspsim.kernels.operator import Operator, Param
from dspsim.kernels.registry import (
                                     LIBRARY,
                                     OPERATORS,
                                     CName,
                                     KernelSet,
                                     c_name,
                                     closest,
                                     names_for,
                                     parse,
)

__all__ = ["DTYPES", "DType", "Operator", "Param", "OPERATORS", "LIBRARY", "CName",
           "KernelSet", "KernelSource", "ENTRY_POINT_GROUP", "c_name", "closest",
           "installed_kernels", "kernel_set", "names_for", "parse"]
