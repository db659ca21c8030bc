"""Measured cycles from a CSV file: one operator call per row.

Columns (a header line names them, in any order, case-insensitive):

=============  ========  ===========================================================
column         required  meaning
=============  ========  ===========================================================
operator       yes       C name (``fp_relu_grad_s``), or a stem (``relu_grad``) that the
                         dtype and region columns complete
length         yes       elements (``4096``, ``0x1000``, ``2^12``)
cycles         yes       measured cycles of the whole call, 1 to 1e18
core_mask      no        bit i selects core i (empty: every core); private-storage calls
                         run on one core, so at most one bit
region         no        where the operands live: ``ddr`` (default) or ``shared_sram``
                         for ``_s`` calls, ``l2`` for ``_p`` calls
dtype          no        fp32, fp16 or bf16; must agree with the C name's prefix
params         no        operator parameters as ``alpha=0.1`` (several separated by ``;``)
alpha, ...     no        one column per operator parameter (alpha, beta, lambd,
                         negative_slope); empty means the operator's default
=============  ========  ===========================================================

Blank lines and lines starting with ``#`` are skipped. Every problem is a
:class:`MeasurementError` naming the file, the line and the column.
"""
from __future__ import annotations

import csv
import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from dspsim import kernels
from dspsim.kernels.registry import STORAGE
from dspsim.sim.chip.textfile import read_small_text
from dspsim.sim.errors import ArgumentError

#: A measurement file is a few hundred rows; far beyond is a wrong file, and every row costs
#: one simulation per step of the fit.
MAX_FILE_BYTES = 4 << 20
MAX_ROWS = 5000

REQUIRED = ("operator", "length", "cycles")
#: measured cycles outside this range are not cycles of one call (1e18 is 30 years at 1 GHz)
MIN_CYCLES, MAX_CYCLES = 1.0, 1e18
OPTIONAL = ("core_mask", "region", "dtype", "params")
#: Other spellings of the column names.
ALIASES = {"op": "operator", "name": "operator", "mask": "core_mask",
           "measured_cycles": "cycles", "operand_region": "region", "n": "length",
           "elements": "length", "parameters": "params"}
#: Parameter names of every operator of the library: each may be a column of its own.
PARAMETER_NAMES = tuple(sorted({p.name for op in kernels.OPERATORS.values() for p in op.params}))
#: The region names a measurement file may use (those of the packaged chips' levels):
#: where a shared-storage call's operands were, and the private level of ``_p`` calls.
SHARED_REGIONS = ("ddr", "shared_sram")
PRIVATE_REGION = "l2"


def parameter_names(found: kernels.KernelSet) -> tuple[str, ...]:
    """Parameter names of every operator of ``found`` (users' kernels included)."""
    return tuple(sorted({p.name for op in found.values() for p in op.params}))
REGIONS = SHARED_REGIONS + (PRIVATE_REGION,)
REGION_ALIASES = {"sram": "shared_sram", "msmc": "shared_sram"}


class MeasurementError(ArgumentError):
    """A measurement file that cannot be read, or a row that says something impossible."""


@dataclass(frozen=True)
class Measurement:
    """One measured call."""

    line: int  # line of the file, from 1, for messages
    operator: str  # C name
    length: int
    cycles: float
    core_mask: int | None = None  # None: every core (shared storage) or no mask (private)
    region: str = "ddr"
    params: tuple[tuple[str, float], ...] = field(default=())

    @property
    def storage(self) -> str:
        # from the name alone: the row may name one of the user's own operators
        return STORAGE[self.operator.rpartition("_")[2]]

    def describe(self) -> str:
        """``fp_relu_grad_s n=4096 mask=0xff`` for tables and messages."""
        mask = "" if self.core_mask is None else f" mask={self.core_mask:#x}"
        region = "" if self.region in ("ddr", PRIVATE_REGION) else f" {self.region}"
        params = "".join(f" {k}={v:g}" for k, v in self.params)
        return f"{self.operator} n={self.length}{mask}{region}{params}"


def _column_name(text: str) -> str:
    name = re.sub(r"[\s-]+", "_", text.strip().lower())
    return ALIASES.get(name, name)


def _read_text(path: str | os.PathLike) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise MeasurementError(f"measurement file {path!r} must be a path to a CSV file")
    return read_small_text(
        os.fspath(path), limit=MAX_FILE_BYTES, what="a CSV file of measured cycles",
        too_large=f"a measurement file holds at most {MAX_ROWS} rows: keep a representative "
                  f"sample of the calls", error=MeasurementError, encoding="utf-8-sig")


def _cells(path: str, text: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, cells) of every line that is not blank or a comment."""
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            cells = next(csv.reader([line], skipinitialspace=True))
        except csv.Error as exc:
            raise MeasurementError(f"{path}: line {number}: not CSV: {exc}") from None
        yield number, [cell.strip() for cell in cells]


def _header(path: str, number: int, cells: list[str],
            parameters: tuple[str, ...] = PARAMETER_NAMES) -> list[str]:
    names = [_column_name(c) for c in cells]
    known = REQUIRED + OPTIONAL + parameters
    for cell, name in zip(cells, names, strict=True):
        if name not in known:
            hint = ("; separate the columns with commas" if any(s in cell for s in ";\t")
                    else "")
            raise MeasurementError(
                f"{path}: line {number}: unknown column {cell!r}; the columns are "
                f"{', '.join(REQUIRED)} (required), {', '.join(OPTIONAL)} and the "
                f"operator parameters {', '.join(parameters)}{hint}")
    seen = set()
    for cell, name in zip(cells, names, strict=True):
        if name in seen:
            raise MeasurementError(f"{path}: line {number}: column {cell!r} appears twice")
        seen.add(name)
    missing = [n for n in REQUIRED if n not in seen]
    if missing:
        raise MeasurementError(f"{path}: line {number}: missing column {missing[0]!r}; a "
                               f"measurement file needs the columns {', '.join(REQUIRED)}")
    return names


def _integer(text: str) -> int:
    """1024, 0x400, 2^10, 2**10, or a float that is whole (1024.0, 1e3)."""
    match = re.fullmatch(r"(\d+)\s*(?:\^|\*\*)\s*(\d+)", text)
    if match and int(match.group(2)) <= 64:
        return int(match.group(1)) ** int(match.group(2))
    try:
        return int(text, 0)
    except ValueError:
        pass
    value = float(text)  # ValueError for anything else
    if not value.is_integer():
        raise ValueError(text)
    return int(value)


def _number(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value


def _operator(where: str, text: str, dtype: str | None, region: str | None,
              found: kernels.KernelSet) -> str:
    if not text:
        raise MeasurementError(f"{where}: operator is empty; give a C name such as "
                               f"fp_relu_grad_s")
    cname = found.parse(text)
    if cname is None and text in found:  # a stem: dtype and region complete it
        storage = "private" if region == PRIVATE_REGION else "shared"
        return kernels.c_name(found[text], dtype or "fp32", storage)
    if cname is None:
        hint = kernels.closest(text, found.names_for(kernels.DTYPES))
        suggestion = f"; did you mean {', '.join(hint)}?" if hint else \
            "; `dspsim ops` lists the operators"
        raise MeasurementError(f"{where}: unknown operator {text!r}{suggestion}")
    if dtype is not None and cname.dtype.name != dtype:
        raise MeasurementError(f"{where}: dtype {dtype} disagrees with {text}, which is "
                               f"{cname.dtype.name}; fix one of them")
    return cname.name


def _params(where: str, name: str, row: dict[str, str],
            found: kernels.KernelSet) -> tuple[tuple[str, float], ...]:
    op = found.parse_known(name).operator
    allowed = {p.name for p in op.params}
    given: dict[str, float] = {}

    def add(key: str, text: str) -> None:
        if key not in allowed:
            raise MeasurementError(f"{where}: {name} has no parameter {key!r}; its "
                                   f"parameters: {', '.join(sorted(allowed)) or 'none'}")
        if key in given:
            raise MeasurementError(f"{where}: parameter {key} given twice")
        try:
            given[key] = _number(text)
        except ValueError:
            raise MeasurementError(f"{where}: parameter {key}={text!r} is not a finite "
                                   f"number") from None

    for item in re.split(r"[;,\s]+", row.get("params", "")):
        if item:
            key, sep, value = item.partition("=")
            if not sep:
                raise MeasurementError(f"{where}: params {item!r}: write NAME=VALUE, for "
                                       f"example alpha=0.1")
            add(key.strip(), value.strip())
    for key in parameter_names(found):
        if row.get(key):
            add(key, row[key])
    return tuple(sorted(given.items()))


def _measurement(path: str, number: int, row: dict[str, str],
                 found: kernels.KernelSet) -> Measurement:
    where = f"{path}: line {number}"
    dtype = row.get("dtype") or None
    if dtype is not None and dtype not in kernels.DTYPES:
        raise MeasurementError(f"{where}: dtype {dtype!r} is not one of "
                               f"{', '.join(kernels.DTYPES)}")
    given_region = (row.get("region") or "").lower()
    region = REGION_ALIASES.get(given_region, given_region) or None
    if region is not None and region not in REGIONS:
        raise MeasurementError(f"{where}: region {row['region']!r} is not one of "
                               f"{', '.join(REGIONS)}")
    name = _operator(where, row["operator"], dtype, region, found)
    private = found.parse_known(name).storage == "private"
    if region is None:
        region = PRIVATE_REGION if private else "ddr"
    elif private != (region == PRIVATE_REGION):
        other = name[:-2] + ("_s" if private else "_p")
        raise MeasurementError(f"{where}: {name} cannot have its operands in {region}; "
                               f"use {other}, or region "
                               f"{PRIVATE_REGION if private else 'ddr or shared_sram'}")
    try:
        length = _integer(row["length"])
    except ValueError:
        raise MeasurementError(f"{where}: length {row['length']!r} is not a whole number "
                               f"of elements") from None
    if length <= 0:
        raise MeasurementError(f"{where}: length {length} must be > 0")
    try:
        cycles = _number(row["cycles"])
    except ValueError:
        raise MeasurementError(f"{where}: cycles {row['cycles']!r} is not a number") from None
    if cycles <= 0:
        raise MeasurementError(f"{where}: cycles {row['cycles']} must be > 0: every call "
                               f"takes time")
    if not MIN_CYCLES <= cycles <= MAX_CYCLES:  # far outside any call: a unit mistake
        raise MeasurementError(f"{where}: cycles {row['cycles']} is outside {MIN_CYCLES:g} to "
                               f"{MAX_CYCLES:g}; check that the column holds core cycles")
    mask = None
    if row.get("core_mask"):
        try:
            mask = _integer(row["core_mask"])
        except ValueError:
            raise MeasurementError(f"{where}: core_mask {row['core_mask']!r} is not an "
                                   f"integer (0xff, 255)") from None
        if mask <= 0:
            raise MeasurementError(f"{where}: core_mask {row['core_mask']} selects no core")
        if private and mask & (mask - 1):
            raise MeasurementError(f"{where}: {name} runs on one core; its core_mask "
                                   f"{mask:#x} selects several (leave it empty)")
    return Measurement(number, name, length, cycles, mask, region,
                       _params(where, name, row, found))


def load_measurements(path: str | os.PathLike, kernels_spec=None) -> list[Measurement]:
    """Read and check a measurement CSV (see the module); at least one row.
    ``kernels_spec``: users' own operators the rows may name (as ``Chip(kernels=)``)."""
    found = kernels.kernel_set(kernels_spec)
    text = _read_text(path)
    path = os.fspath(path)
    lines = _cells(path, text)
    first = next(lines, None)
    if first is None:
        raise MeasurementError(f"{path}: empty; expected a header line "
                               f"({', '.join(REQUIRED)}, ...) and one row per measured call")
    names = _header(path, *first, parameters=parameter_names(found))
    rows: list[Measurement] = []
    for number, cells in lines:
        if len(cells) != len(names):
            raise MeasurementError(f"{path}: line {number}: {len(cells)} cells where the "
                                   f"header has {len(names)} columns")
        if len(rows) == MAX_ROWS:
            raise MeasurementError(f"{path}: more than {MAX_ROWS} rows; keep a representative "
                                   f"sample of the calls")
        rows.append(_measurement(path, number, dict(zip(names, cells, strict=True)), found))
    if not rows:
        raise MeasurementError(f"{path}: no measured rows under the header; add one row per "
                               f"call")
    return rows
