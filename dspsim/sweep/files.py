"""Reading and writing the files of a sweep folder, safely.

Rows are appended as whole lines (:func:`append_durably`), views are replaced atomically
(:func:`dspsim.atomic.write_atomically`, failures as :class:`StoreError`), and a row log
is read back with each line checked (:func:`read_rows`). Every failure of the file system
is a :class:`StoreError` naming the file, never a traceback.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import threading
from collections.abc import Iterator
from typing import Any

from dspsim.sim.errors import ArgumentError
from dspsim.sweep.study import Schema

#: Columns of rows.csv (rows.jsonl and rows.json hold the same keys), in display order.
COLUMNS = (
    "chip", "operator", "stem", "dtype", "storage", "length", "core_mask", "core_mask_hex",
    "cores", "cycles", "microseconds", "baseline_cycles", "speedup", "parallel_efficiency",
    "speedup_ddr_ceiling", "ddr_floor_cycles", "achieved_gbps", "share_of_ddr_peak",
    "share_of_ddr_achievable", "ddr_peak_gbps", "ddr_achievable_gbps", "ddr_bytes",
    "bytes_read", "bytes_written", "roofline_cycles", "roofline_share", "bound",
    "roofline_launch_overhead", "roofline_ddr", "roofline_shared_sram",
    "roofline_dma_engine", "roofline_l2_port", "roofline_vector_unit",
    "vector_busy_share", "dma_in_busy_share", "dma_out_busy_share", "critical_core",
    "critical_finish_cycle", "tiles", "tile_elements", "lanes", "iteration_cycles",
    "clock_mhz", "fidelity", "numerics", "numerics_ok", "max_rel_error", "params", "warnings",
    "scheduled_events", "host_seconds", "overrides", "given_values", "config_digest",
    "base_digest", "key",
)

#: What a stored row must hold for resuming, speedups and plots to use it.
REQUIRED = {"key": str, "chip": str, "operator": str, "dtype": str, "length": int,
            "core_mask": int, "cores": int, "cycles": int, "config_digest": str}
#: The rows of call sweeps.
CALL_SCHEMA = Schema("call", COLUMNS, REQUIRED)



class StoreError(ArgumentError):
    """A sweep folder that cannot be read or written."""


def os_problem(exc: OSError) -> str:
    return exc.strerror or str(exc)


def json_safe(value: Any) -> Any:
    """NaN and infinities are not JSON: store them as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def row_line(row: dict[str, Any]) -> bytes:
    """One row as a JSON Lines record."""
    clean = {k: json_safe(v) for k, v in row.items()}
    return (json.dumps(clean, sort_keys=False, separators=(",", ":")) + "\n").encode("utf-8")


def append_whole(path: str, data: bytes, sync: bool) -> int:
    """Append ``data`` to ``path`` (and fsync it if ``sync``); returns the file's size before.

    One write() of the whole line on an O_APPEND descriptor: once it returns, the line is
    the kernel's, so a killed process leaves the whole line or none of it (only a crash
    of the machine loses what was not yet fsynced). A short write or an error (no space
    left, a file-size limit) cuts the file back to its size before, so no half line is
    ever left behind.
    """
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        before = os.fstat(fd).st_size
        try:
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(27, f"only {written} of {len(data)} bytes could be written "
                                  f"(no space left, or a file-size limit)")
            if sync:
                os.fsync(fd)
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, before)
            raise
        return before
    finally:
        os.close(fd)


def fsync_file(path: str) -> None:
    """Flush a file's appended lines to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def truncate_quietly(path: str, size: int) -> None:
    with contextlib.suppress(OSError):
        os.truncate(path, size)


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold back Ctrl-C until the block ends, so that a row reaches both files or neither.

    Only the main thread may set signal handlers; elsewhere the block runs as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[tuple] = []
    previous = signal.signal(signal.SIGINT, lambda *sig: caught.append(sig))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught and callable(previous):
            previous(*caught[0])  # Python's own handler raises KeyboardInterrupt here
        elif caught and previous == signal.SIG_DFL:
            signal.raise_signal(signal.SIGINT)  # what the deferred Ctrl-C would have done


def read_rows(path: str, schema: Schema = CALL_SCHEMA) -> tuple[list[dict[str, Any]], int]:
    """Rows of a JSON Lines file and the byte length of its intact part.

    A torn last line (no final newline, or not a JSON object) is left out; a bad line
    anywhere else, or a row of another kind of study, is an error naming the file and
    the line.
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {os_problem(exc)}") from None
    intact = data.rfind(b"\n") + 1  # whatever follows the last newline is torn
    lines = data[:intact].split(b"\n")[:-1]
    rows: list[dict[str, Any]] = []
    offset = 0
    for number, line in enumerate(lines, start=1):
        try:
            row = json.loads(line) if line.strip() else None
            if row is not None and not isinstance(row, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            if number == len(lines):
                return rows, offset
            raise StoreError(f"{path}: line {number} is not a JSON row ({exc}); delete that "
                             f"line (or the sweep folder) and run the sweep again") from None
        if row is not None:
            _check_row(row, path, number, schema)
            rows.append(row)
        offset += len(line) + 1
    return rows, intact


def _check_row(row: dict[str, Any], path: str, number: int, schema: Schema) -> None:
    """A row must be of this study's kind and hold what resuming and plotting read; name
    the line and what is wrong."""
    kind_of_row = row.get("study", "call")  # rows written before studies had kinds are calls
    if kind_of_row != schema.study:
        raise StoreError(f"{os.path.dirname(path) or '.'} holds the rows of a {kind_of_row} "
                         f"study (line {number} of {os.path.basename(path)}); choose another "
                         f"--out folder for this {schema.study} study")
    for column, kind in schema.required.items():
        value = row.get(column)
        fine = isinstance(value, kind) and not isinstance(value, bool)
        if not fine:
            what = "has no" if column not in row else f"has {value!r} as its"
            raise StoreError(f"{path}: line {number} {what} {column!r} (a row needs "
                             f"{kind.__name__} {column!r}); fix or delete that line (or the "
                             f"sweep folder) and run the sweep again")


