"""A call that reads memory as another dtype than it was written as says so."""
from __future__ import annotations

import numpy as np

import dspsim
from dspsim.sim.memory import DtypeMap

SRC, DST = 0x80000000, 0x90000000


def test_float64_written_then_read_as_fp32_warns():
    chip = dspsim.Chip("ft78ne")
    chip.write(SRC, np.linspace(-1, 1, 512))  # float64: 4096 bytes
    result = chip.fp_l_relu_s(SRC, DST, 1024, 0.1, 0x1)
    (warning,) = [w for w in result.warnings if "reinterpreted" in w]
    assert "written as float64 and is read as float32" in warning


def test_matching_dtypes_and_chained_calls_do_not_warn():
    chip = dspsim.Chip("ft78ne")
    chip.write(SRC, np.linspace(-1, 1, 1024, dtype=np.float32))
    first = chip.fp_l_relu_s(SRC, DST, 1024, 0.1, 0x1)
    second = chip.fp_l_relu_s(DST, SRC, 1024, 0.1, 0x1)  # reads what the first call wrote
    assert not [w for w in first.warnings + second.warnings if "reinterpreted" in w]
    chip.write(SRC, np.zeros(4, np.float64))  # part of the input rewritten as float64
    third = chip.fp_l_relu_s(SRC, DST, 1024, 0.1, 0x1)
    assert [w for w in third.warnings if "float64" in w]


def test_dtype_map_cuts_and_merges():
    dtypes = DtypeMap()
    dtypes.set(0, 100, "float32")
    dtypes.set(40, 60, "float64")
    assert dtypes.within(0, 40) == {"float32"} and dtypes.within(45, 50) == {"float64"}
    assert dtypes.within(0, 100) == {"float32", "float64"}
    dtypes.set(40, 60, "float32")
    assert dtypes._starts == [0] and dtypes._ends == [100]
    dtypes.set(100, 120, "float32")
    assert dtypes._starts == [0] and dtypes._ends == [120]
    assert dtypes.within(120, 200) == set()
