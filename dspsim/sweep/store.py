"""The files of a sweep: a durable row log, and CSV and JSON views of it.

Layout of a sweep folder::

    rows.jsonl   one JSON object per finished run, appended as each run ends (and fsynced
                 at least once a second): the source of truth that resuming reads
    rows.csv     the same rows as CSV, appended alongside
    rows.json    {"columns": [...], "rows": [...], "notes": [...]}, rewritten atomically
                 (temporary file, then rename) every few seconds and when the sweep ends

Each row is appended with a single ``write`` of one whole line, so a killed sweep leaves
every finished row in place. A write the file system refuses part of (a full disk, a
file-size limit) is cut back to the row before it and reported, so rows.jsonl and rows.csv
never end in half a line; Ctrl-C during an append waits until both files hold the row.
Only a crash of the machine itself can leave a torn last line; opening the store again
cuts it off (that run is simply redone) and rebuilds rows.csv and rows.json from
rows.jsonl, so the three always agree after a resume.
"""
from __future__ import annotations

import json
import os
import time
from typing import Any

from dspsim.atomic import write_atomically
from dspsim.sim.errors import ArgumentError
from dspsim.sweep.files import (
    CALL_SCHEMA,
    COLUMNS,
    REQUIRED,
    StoreError,
    append_whole,
    fsync_file,
    interrupts_deferred,
    json_safe,
    os_problem,
    read_rows,
    row_line,
    truncate_quietly,
)
from dspsim.sweep.study import Schema
from dspsim.tables import csv_text

__all__ = ["COLUMNS", "CSV", "JSON", "JSONL", "REQUIRED", "RowStore", "StoreError",
           "read_rows"]

JSONL, CSV, JSON, LOCK = "rows.jsonl", "rows.csv", "rows.json", ".lock"
#: Seconds between rewrites of rows.json while a sweep runs (at least; a large rows.json
#: is rewritten less often, so that rewriting it never takes more than a tenth of the time).
JSON_REWRITE_INTERVAL_S = 2.0
#: Seconds between fsyncs of the appended rows. An fsync per row cost 11 ms on a 2-core
#: test machine, more than a timing-only run of a small call; a machine crash loses at
#: most this much of finished rows, which resuming runs again.
SYNC_INTERVAL_S = 1.0


class RowStore:
    """The rows of one sweep folder; use as a context manager around a sweep.

    ``schema`` says which kind of study the folder keeps (call sweeps unless told): its
    rows.csv columns, and what every stored row must hold. A folder holding rows of
    another kind is refused when opened.
    """

    def __init__(self, folder: str, schema: Schema = CALL_SCHEMA) -> None:
        self.folder = folder
        self.schema = schema
        self.rows: dict[str, dict[str, Any]] = {}
        self.notes: list[str] = []
        self.repaired_bytes = 0
        self._lock_fd: int | None = None
        self._last_json_write = 0.0
        self._json_seconds = 0.0  # how long the last rewrite of rows.json took
        self._last_sync = 0.0

    def path(self, name: str) -> str:
        return os.path.join(self.folder, name)

    # ------------------------------------------------------------------ lifecycle
    def open(self) -> RowStore:
        """Lock the folder, load finished rows (repairing a torn tail) and rebuild the views."""
        if not self.folder:
            raise StoreError("the sweep's --out folder is empty; give a folder name")
        if os.path.exists(self.folder) and not os.path.isdir(self.folder):
            raise StoreError(f"--out {self.folder} exists and is not a folder (a file or a "
                             f"device); choose a folder path")
        try:
            os.makedirs(self.folder, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create sweep folder {self.folder}: "
                             f"{os_problem(exc)}") from None
        if not os.path.isdir(self.folder):
            raise StoreError(f"--out {self.folder} is not a folder; choose a folder path")
        self._lock()
        try:
            self._load()
        except BaseException:
            self._unlock()
            raise
        return self

    def _load(self) -> None:
        jsonl = self.path(JSONL)
        if os.path.lexists(jsonl) and not os.path.isfile(jsonl):
            raise StoreError(f"{jsonl} is not a regular file; move it away or choose another "
                             f"--out folder")
        if os.path.exists(jsonl):
            rows, good_end = read_rows(jsonl, self.schema)
            size = os.path.getsize(jsonl)
            if good_end < size:
                self.repaired_bytes = size - good_end
                try:
                    os.truncate(jsonl, good_end)
                except OSError as exc:
                    raise StoreError(f"cannot repair {jsonl}: {os_problem(exc)}") from None
            for row in rows:
                self.rows[row["key"]] = row
        self._rewrite_views()

    def close(self, quiet: bool = False) -> None:
        """Write the final rows.json and release the folder. ``quiet`` (an error is already
        on its way out) keeps a failure to write rows.json from hiding that error; the rows
        stay in rows.jsonl and rows.csv, and the next run rebuilds rows.json."""
        try:
            self.sync()
            self.write_json()
        except StoreError:
            if not quiet:
                raise
        finally:
            self._unlock()

    def __enter__(self) -> RowStore:
        return self.open()

    def __exit__(self, kind, *exc) -> None:
        self.close(quiet=kind is not None)

    def _lock(self) -> None:
        try:
            import fcntl  # noqa: PLC0415 - POSIX only; elsewhere the folder is not locked
        except ImportError:
            return
        try:
            fd = os.open(self.path(LOCK), os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot write to sweep folder {self.folder}: {os_problem(exc)}; "
                             f"choose a folder you can write with --out") from None
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
        """Record one finished run durably in rows.jsonl and rows.csv: in both or in neither.

        A StoreError (disk full, file-size limit, folder gone) leaves both files as they
        were before the row.
        """
        line = row_line(row)
        text = csv_text([row], self.schema.columns, header=False).encode("utf-8")
        sync = time.monotonic() - self._last_sync >= SYNC_INTERVAL_S
        with interrupts_deferred():
            try:
                jsonl_size = append_whole(self.path(JSONL), line, sync)
                try:
                    append_whole(self.path(CSV), text, sync)
                except OSError:
                    truncate_quietly(self.path(JSONL), jsonl_size)
                    raise
            except OSError as exc:
                raise StoreError(f"cannot add a row to {self.folder}: {os_problem(exc)}; "
                                 f"the {len(self.rows)} rows before it are kept; free space "
                                 f"and run the same command again to resume") from None
            self.rows[row["key"]] = row
        now = time.monotonic()
        if sync:
            self._last_sync = now
        if now - self._last_json_write >= max(JSON_REWRITE_INTERVAL_S, 10 * self._json_seconds):
            self.write_json()

    def sync(self) -> None:
        """Flush every appended row to the disk."""
        for name in (JSONL, CSV):
            if os.path.exists(self.path(name)):
                try:
                    fsync_file(self.path(name))
                except OSError as exc:
                    raise StoreError(f"cannot write {self.path(name)}: "
                                     f"{os_problem(exc)}") from None
        self._last_sync = time.monotonic()

    def write_json(self) -> None:
        """Rewrite rows.json (atomically) from every row of the folder."""
        started = time.monotonic()
        document = {"study": self.schema.study, "columns": list(self.schema.columns),
                    "rows": [{k: json_safe(v) for k, v in r.items()} for r in self.rows.values()],
                    "notes": self.notes}
        self._replace(JSON, json.dumps(document, indent=1).encode("utf-8"))
        self._last_json_write = time.monotonic()
        self._json_seconds = self._last_json_write - started

    def _rewrite_views(self) -> None:
        self._replace(CSV, csv_text(self.rows.values(), self.schema.columns).encode("utf-8"))
        self.write_json()

    def _replace(self, name: str, data: bytes) -> None:
        """Replace the folder's file ``name`` atomically; a failure is a StoreError."""
        write_atomically(data, self.path(name), what=name, make_folder=False,
                         error=StoreError)
