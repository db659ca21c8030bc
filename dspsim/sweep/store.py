"""The files of a sweep: a durable row log, and CSV and JSON views of it.

Layout of a sweep folder::

    rows.jsonl   one JSON object per finished run, appended and fsynced as each run ends:
                 the source of truth that resuming reads
    rows.csv     the same rows as CSV, appended and fsynced alongside
    rows.json    {"columns": [...], "rows": [...], "notes": [...]}, rewritten atomically
                 (temporary file, then rename) every few seconds and when the sweep ends

Each row is appended with a single ``write`` of one whole line, so a killed sweep leaves
every finished row in place. Only a crash of the machine itself can leave a torn last
line; opening the store again cuts it off (that run is simply redone) and rebuilds
rows.csv and rows.json from rows.jsonl, so the three always agree after a resume.
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
import tempfile
import time
from typing import Any, Iterable

from dspsim.sim.errors import ArgumentError

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
    "scheduled_events", "host_seconds", "overrides", "config_digest", "base_digest", "key",
)

JSONL, CSV, JSON, LOCK = "rows.jsonl", "rows.csv", "rows.json", ".lock"
#: Seconds between rewrites of rows.json while a sweep runs.
JSON_REWRITE_INTERVAL_S = 2.0


def atomic_write(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that readers see the old or the new file, never half."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}-", suffix=".tmp", dir=folder)
    try:
        os.chmod(tmp, 0o644)  # mkstemp makes files private; these are ordinary outputs
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _json_safe(value: Any) -> Any:
    """NaN and infinities are not JSON: store them as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def row_line(row: dict[str, Any]) -> bytes:
    """One row as a JSON Lines record."""
    clean = {k: _json_safe(v) for k, v in row.items()}
    return (json.dumps(clean, sort_keys=False, separators=(",", ":")) + "\n").encode("utf-8")


def csv_text(rows: Iterable[dict[str, Any]], header: bool) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, extrasaction="ignore",
                            lineterminator="\n")
    if header:
        writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if row.get(k) is None else row.get(k) for k in COLUMNS})
    return buffer.getvalue()


def _append_durably(path: str, data: bytes) -> None:
    # one write() of the whole line on an O_APPEND descriptor, then fsync: a killed
    # process leaves either the whole line or none of it
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def read_rows(path: str) -> tuple[list[dict[str, Any]], int]:
    """Rows of a JSON Lines file and the byte length of its intact part.

    A torn last line (no final newline, or not a JSON object) is left out; a bad line
    anywhere else is an error naming the file and the line.
    """
    with open(path, "rb") as handle:
        data = handle.read()
    intact = data.rfind(b"\n") + 1  # whatever follows the last newline is torn
    lines = data[:intact].split(b"\n")[:-1]
    rows, offset = [], 0
    for number, line in enumerate(lines, start=1):
        try:
            row = json.loads(line) if line.strip() else None
            if row is not None and not isinstance(row, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            if number == len(lines):
                return rows, offset
            raise ArgumentError(f"{path}: line {number} is not a JSON row ({exc}); delete that "
                                f"line (or the sweep folder) and run the sweep again") from None
        if row is not None:
            rows.append(row)
        offset += len(line) + 1
    return rows, intact


class RowStore:
    """The rows of one sweep folder; use as a context manager around a sweep."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.rows: dict[str, dict[str, Any]] = {}
        self.notes: list[str] = []
        self.repaired_bytes = 0
        self._lock_fd: int | None = None
        self._last_json_write = 0.0

    def path(self, name: str) -> str:
        return os.path.join(self.folder, name)

    # ------------------------------------------------------------------ lifecycle
    def open(self) -> "RowStore":
        """Lock the folder, load finished rows (repairing a torn tail) and rebuild the views."""
        try:
            os.makedirs(self.folder, exist_ok=True)
        except OSError as exc:
            raise ArgumentError(f"cannot create sweep folder {self.folder}: "
                                f"{exc.strerror}") from None
        self._lock()
        jsonl = self.path(JSONL)
        if os.path.exists(jsonl):
            rows, good_end = read_rows(jsonl)
            size = os.path.getsize(jsonl)
            if good_end < size:
                self.repaired_bytes = size - good_end
                os.truncate(jsonl, good_end)
            for row in rows:
                self.rows[row["key"]] = row
        self._rewrite_views()
        return self

    def close(self) -> None:
        """Write the final rows.json and release the folder."""
        try:
            self.write_json()
        finally:
            self._unlock()

    def __enter__(self) -> "RowStore":
        return self.open()

    def __exit__(self, *exc) -> None:
        self.close()

    def _lock(self) -> None:
        try:
            import fcntl  # noqa: PLC0415 - POSIX only; elsewhere the folder is not locked
        except ImportError:
            return
        fd = os.open(self.path(LOCK), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise ArgumentError(f"another sweep is writing to {self.folder}; wait for it to end "
                                f"or choose another --out folder") from None
        self._lock_fd = fd

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor releases the flock
            self._lock_fd = None

    # ------------------------------------------------------------------ rows
    def append(self, row: dict[str, Any]) -> None:
        """Record one finished run durably in rows.jsonl and rows.csv."""
        _append_durably(self.path(JSONL), row_line(row))
        _append_durably(self.path(CSV), csv_text([row], header=False).encode("utf-8"))
        self.rows[row["key"]] = row
        if time.monotonic() - self._last_json_write >= JSON_REWRITE_INTERVAL_S:
            self.write_json()

    def write_json(self) -> None:
        document = {"columns": list(COLUMNS),
                    "rows": [{k: _json_safe(v) for k, v in r.items()} for r in self.rows.values()],
                    "notes": self.notes}
        atomic_write(self.path(JSON), json.dumps(document, indent=1).encode("utf-8"))
        self._last_json_write = time.monotonic()

    def _rewrite_views(self) -> None:
        atomic_write(self.path(CSV), csv_text(self.rows.values(), header=True).encode("utf-8"))
        self.write_json()
