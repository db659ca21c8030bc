"""Reading a small text file a user names (a chip, a program, measurements), safely.

A file that never ends (a pipe, a device) is refused before it is opened, a file far
larger than its kind ever is before it fills memory, and binary or non-UTF-8 content by
name; each with an error that says what the file should be.
"""
from __future__ import annotations

import os

from dspsim.sim.errors import ConfigError


def read_small_text(path: str, *, limit: int, what: str, too_large: str,
                    error: type[Exception] = ConfigError, encoding: str = "utf-8") -> str:
    """The text of ``path``, at most ``limit`` bytes.

    ``what`` names what the file should be ("a chip description in YAML"); ``too_large``
    says what to do about a file over the limit. Raises ``error`` for a folder, a file that
    is not regular, one that cannot be read, one over the limit, binary content, or text
    that is not ``encoding``.
    """
    if os.path.isdir(path):
        raise error(f"{path}: is a folder; give {what}")
    if os.path.exists(path) and not os.path.isfile(path):  # a pipe or device never ends
        raise error(f"{path}: not a regular file (a device, pipe or socket); give {what}")
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > limit:
        shown = f"{limit >> 20} MiB" if limit >= 1 << 20 and not limit % (1 << 20) \
            else f"{limit >> 10} KiB"
        raise error(f"{path}: larger than {shown}; {too_large}")
    if b"\0" in data:
        raise error(f"{path}: a binary file, not {what}")
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text (byte {exc.start}); give {what} as UTF-8 "
                    f"text") from None
