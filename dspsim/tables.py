"""The one tabular writer: rows as CSV and data as JSON, for every command and file.

* :func:`to_jsonable` turns results (dataclasses, numpy scalars, tuples) into JSON data;
  NaN and infinities become ``null``, which JSON lacks.
* :func:`json_text` is that data as indented JSON text (what ``--json`` prints and what
  ``result.json``/``rows.json`` hold).
* :func:`csv_text` is rows (mappings) as CSV text: named columns in order (by default
  every key, in the order first seen), a missing or ``None`` cell empty, ``\\n`` line ends,
  optional ``#`` comment lines first.
* :func:`write_table` writes rows to a ``.csv`` or ``.json`` path atomically
  (:func:`dspsim.atomic.write_atomically`).
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from dspsim.atomic import write_atomically
from dspsim.sim.errors import ArgumentError

__all__ = ["TABLE_FORMATS", "columns_of", "csv_text", "json_text", "to_jsonable",
           "write_table"]


def to_jsonable(value: Any) -> Any:
    """``value`` as JSON data: dataclasses and mappings as objects, tuples as lists, numpy
    scalars as numbers, non-finite floats as None (JSON has no NaN or infinity). A
    dataclass field with ``metadata={"json": False}`` is left out."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)
                if f.metadata.get("json", True)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def json_text(data: Any, *, indent: int = 2) -> str:
    """``data`` (anything :func:`to_jsonable` takes) as JSON text ending in a newline."""
    return json.dumps(to_jsonable(data), indent=indent, allow_nan=False) + "\n"


def columns_of(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every key of ``rows``, in the order first seen."""
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    return list(columns)


def csv_text(rows: Iterable[Mapping[str, Any]], columns: Sequence[str] | None = None, *,
             header: bool = True, comments: str = "") -> str:
    """``rows`` as CSV text with ``columns`` (default :func:`columns_of`); keys not among
    them are left out, a missing or ``None`` cell is empty. ``comments`` lines go first,
    each as a ``#`` line."""
    rows = list(rows)
    columns = columns_of(rows) if columns is None else list(columns)
    buffer = io.StringIO()
    for line in comments.splitlines():
        buffer.write(f"# {line}\n" if line.strip() else "#\n")
    writer = csv.writer(buffer, lineterminator="\n")
    if header:
        writer.writerow(columns)
    for row in rows:
        writer.writerow(["" if row.get(k) is None else row.get(k) for k in columns])
    return buffer.getvalue()


def write_table(path: str | os.PathLike, rows: Sequence[Mapping[str, Any]],
                columns: Sequence[str] | None = None, *, what: str = "table",
                make_folder: bool = True) -> str:
    """Write ``rows`` to ``path`` atomically: CSV for a name ending in ``.csv``, a JSON list
    of objects for ``.json``; returns the path."""
    name = os.fspath(path)
    suffix = os.path.splitext(name)[1].lower()
    if suffix not in TABLE_FORMATS:
        raise ArgumentError(f"cannot write the {what} to {name}: name a "
                            f"{' or a '.join(TABLE_FORMATS)} file")
    text = TABLE_FORMATS[suffix](rows, columns)
    return write_atomically(text.encode("utf-8"), name, what, make_folder=make_folder)


def _json_rows(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None) -> str:
    keep = columns_of(rows) if columns is None else list(columns)
    return json_text([{k: row.get(k) for k in keep} for row in rows])


#: The table formats by file name ending: rows and columns to text.
TABLE_FORMATS: dict[str, Callable[[Sequence[Mapping[str, Any]], Sequence[str] | None], str]] = {
    ".csv": lambda rows, columns: csv_text(rows, columns),
    ".json": _json_rows,
}
