"""Output files written atomically and safely, and bounded binary reads; every command's
whole-file writes go through :func:`write_atomically`.

A write goes to a temporary file beside the target (``.trace-<pid>-<random>.tmp``, mode
0666 less the umask), is synced, and is renamed over the target only if the target is a
regular file or nothing: a folder, a device, a pipe or a socket is never replaced, and a
symbolic link is followed to the file it names. Temporary files left by a writer that
was killed are removed by the next write into the same folder. Within
:func:`command_inputs`, no write replaces one of the command's input files.
"""
from __future__ import annotations

import contextlib
import contextvars
import errno
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterable, Iterator

from dspsim.sim.errors import ArgumentError

TEMP_PREFIX = ".trace-"
TEMP_SUFFIX = ".tmp"
_TEMP_NAME = re.compile(r"^\.trace-(?:(\d+)-)?[A-Za-z0-9_]+\.tmp$")
#: a temporary file of unknown writer older than this is abandoned
STALE_SECONDS = 3600.0


#: the input files of the command running: (shown path, real path, (device, inode))
_INPUTS: contextvars.ContextVar[tuple] = contextvars.ContextVar("dspsim_inputs", default=())


@contextlib.contextmanager
def command_inputs(paths: Iterable) -> Iterator[None]:
    """Within the block, every output (:func:`check_target`, and saved folders) that is one
    of ``paths`` - by real path or as the same file under another name - is refused.

    Paths that name no regular file (chip names such as ``ft78ne``) are ignored.
    """
    found = []
    for path in paths:
        try:
            shown = os.fsdecode(path)
            info = os.stat(shown)
        except (TypeError, ValueError, OSError):
            continue
        if stat.S_ISREG(info.st_mode):
            found.append((shown, os.path.realpath(shown), (info.st_dev, info.st_ino)))
    token = _INPUTS.set(_INPUTS.get() + tuple(found))
    try:
        yield
    finally:
        _INPUTS.reset(token)


def check_not_input(target: str, shown: str, what: str) -> None:
    """An ArgumentError if writing ``target`` would replace an input of the command."""
    inputs = _INPUTS.get()
    if not inputs:
        return
    real = os.path.realpath(target)
    try:
        info = os.stat(real)
        identity = (info.st_dev, info.st_ino)
    except OSError:
        identity = None
    for source, source_real, source_identity in inputs:
        if real == source_real or identity == source_identity:
            raise ArgumentError(f"cannot write the {what} to {shown}: it is {source}, an input "
                                f"of this command, which the {what} would replace; give "
                                f"another path")


def as_path(path, what: str = "trace") -> str:
    """``path`` (str, bytes or os.PathLike) as a str; an ArgumentError for anything else."""
    try:
        return os.fsdecode(path)
    except TypeError:
        raise ArgumentError(f"the {what} path {path!r:.60} is a {type(path).__name__}; give a "
                            f"file path (str, bytes or pathlib.Path)") from None


def check_target(path: str | os.PathLike, what: str = "trace") -> str:
    """The real path a ``what`` (trace, plot) named ``path`` would be written to; an
    ArgumentError, before anything is done, if it can never become that file."""
    shown = as_path(path, what)
    if not shown:
        raise ArgumentError(f"the {what} path is empty; give a file name")
    if _through_proc(shown):
        raise ArgumentError(f"cannot write the {what} to {shown}: it names an open file of a "
                            f"process (such as standard output), which a whole-file write "
                            f"cannot replace; give a file path")
    target = os.path.realpath(shown)
    try:
        info = os.stat(target)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:  # said more usefully below
            info = None
        else:
            raise ArgumentError(f"cannot write the {what} to {shown}: {exc.strerror}"
                                ) from None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise ArgumentError(f"cannot write the {what} to {shown}: it is a folder; give a file "
                            f"path inside it")
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise ArgumentError(f"cannot write the {what} to {shown}: it exists and is not a "
                            f"regular file (a device, pipe or socket); give another path")
    check_not_input(target, shown, what)
    folder, name = os.path.split(target)
    limit = _name_max(folder)
    if len(os.fsencode(name)) > limit:
        raise ArgumentError(f"cannot write the {what} to {shown}: its file name has "
                            f"{len(os.fsencode(name)):,} bytes, more than the {limit} the file "
                            f"system allows; give a shorter name")
    if os.path.lexists(folder) and not os.path.isdir(folder):
        raise ArgumentError(f"cannot write the {what} to {shown}: {folder} is not a folder")
    return target


def _through_proc(path: str) -> bool:
    """Whether ``path`` leads, through symbolic links, into /proc (``/dev/stdout`` is
    ``/proc/self/fd/1``): renaming over such a name would replace whatever file the stream
    happens to be, or fail."""
    current = os.path.abspath(path)
    for _ in range(40):
        if current == "/proc" or current.startswith("/proc/"):
            return True
        if not os.path.islink(current):
            return os.path.realpath(current).startswith("/proc/")
        try:
            link = os.readlink(current)
        except OSError:
            return False
        current = os.path.normpath(os.path.join(os.path.dirname(current), link))
    return True  # a loop of links: nothing to write to either


def _name_max(folder: str) -> int:
    """The longest file name the file system of ``folder`` (or its nearest existing
    ancestor) allows, in bytes."""
    probe = folder
    while probe and not os.path.isdir(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    try:
        return os.pathconf(probe or "/", "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def _umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # no other way to read it; put it back at once
    os.umask(mask)
    return mask


def remove_stale_temporaries(folder: str) -> list[str]:
    """Delete the temporary files of trace writers that died in ``folder``: those whose
    writer process is gone, and those of unknown writer older than an hour."""
    removed: list[str] = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        match = _TEMP_NAME.match(name)
        if not match:
            continue
        full = os.path.join(folder, name)
        try:
            info = os.lstat(full)
            if not stat.S_ISREG(info.st_mode):
                continue
            if match.group(1) is not None:
                if writer_alive(int(match.group(1))):
                    continue
            elif time.time() - info.st_mtime < STALE_SECONDS:
                continue
            os.unlink(full)
            removed.append(full)
        except OSError:
            continue
    return removed


def writer_alive(pid: int) -> bool:
    """Whether process ``pid`` may still be writing (when in doubt, yes)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # someone else's process, or a number we cannot ask about: keep
    return True


def write_atomically(data: bytes, path: str | os.PathLike, what: str = "trace", *,
                     make_folder: bool = True,
                     error: type[ArgumentError] = ArgumentError) -> str:
    """Write ``data`` to ``path``: all of it or nothing, never over anything but a regular
    file. ``make_folder`` creates the folder if it is missing (otherwise that is an
    error, for files that belong with others in it). A failure is an ``error`` (an
    ArgumentError subclass, so that a caller such as a sweep's row store can name its
    own kind) saying what could not be written where. Returns ``path``."""
    try:
        return _write(data, as_path(path, what), what, make_folder)
    except ArgumentError as exc:
        if error is ArgumentError or isinstance(exc, error):
            raise
        raise error(str(exc)) from None


def _write(data: bytes, shown: str, what: str, make_folder: bool) -> str:
    target = check_target(shown, what)
    folder = os.path.dirname(target)
    tmp = None
    try:
        if make_folder:
            os.makedirs(folder, exist_ok=True)
        remove_stale_temporaries(folder)
        fd, tmp = tempfile.mkstemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-", suffix=TEMP_SUFFIX,
                                   dir=folder)
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), 0o666 & ~_umask())
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        check_target(shown, what)  # it may have changed while we wrote
        os.replace(tmp, target)
        tmp = None
        sync_folder(folder)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if exc.errno == errno.ENAMETOOLONG:
            reason = "the name is too long for the file system"
        raise ArgumentError(f"cannot write the {what} to {shown}: {reason}") from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return shown


def sync_folder(folder: str) -> None:
    """Make a folder's entries (a rename into it) durable (best effort: not every file
    system allows it)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


#: Larger files are refused rather than read into memory.
MAX_TRACE_BYTES = 1 << 30


def read_bytes(path: str | os.PathLike) -> bytes:
    """A trace file's bytes; an ArgumentError if it cannot be read as one."""
    shown = os.fspath(path)
    try:
        info = os.stat(shown)
        if stat.S_ISDIR(info.st_mode):
            raise ArgumentError(f"cannot read trace {shown}: it is a folder")
        if not stat.S_ISREG(info.st_mode):  # a pipe would block, a device never end
            raise ArgumentError(f"cannot read trace {shown}: not a regular file")
        with open(shown, "rb") as handle:
            data = handle.read(MAX_TRACE_BYTES + 1)
    except OSError as exc:
        raise ArgumentError(f"cannot read trace {shown}: {exc.strerror or exc}") from None
    if len(data) > MAX_TRACE_BYTES:
        raise ArgumentError(f"cannot read trace {shown}: larger than "
                            f"{MAX_TRACE_BYTES >> 20} MiB")
    if not data.strip():
        raise ArgumentError(f"cannot read trace {shown}: the file is empty")
    return data
