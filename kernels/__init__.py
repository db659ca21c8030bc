"""The operator library: each operator's math, C names and per-vector instruction mix.

Pure description and numpy; nothing here knows how the chip is simulated.
"""
from dspsim.kernels.dtypes import DTYPES, DType
from dspsim.kernels.operator import Operator, Param
from dspsim.kernels.registry import OPERATORS, CName, c_name, closest, names_for, parse

__all__ = ["DTYPES", "DType", "Operator", "Param", "OPERATORS", "CName", "c_name", "closest",
           "names_for", "parse"]
