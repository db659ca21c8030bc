"""Folders of files written whole: a saved run is one run, never parts of two.

:func:`write_folder` writes every file into a fresh sibling folder (the staging folder),
syncs it, and then swaps it in with one rename: the staging folder becomes the folder and
the folder's former contents go away together. On Linux the swap is one atomic exchange
(``renameat2(RENAME_EXCHANGE)``); elsewhere it is two renames, and a writer killed between
them leaves the former folder under a recognisable name that the next save puts back
before it does anything else. A folder holding a different saved run (files of the same
names whose bytes differ) is replaced only when asked (``force``).
"""
from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import secrets
from collections.abc import Callable

from dspsim.atomic import as_path, check_not_input, sync_folder, writer_alive
from dspsim.sim.errors import ArgumentError

#: a file name's bytes kept in the name of a staging folder, so that it stays far below
#: the 255 bytes file systems allow
_NAME_BYTES = 100
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _marker(folder: str, kind: str) -> str:
    """The prefix of ``folder``'s sibling working folders of ``kind`` (saving, replaced):
    the folder's name cut to whole bytes, not characters (a UTF-8 name of 255 bytes has
    far fewer characters)."""
    name = os.fsdecode(os.fsencode(os.path.basename(folder))[:_NAME_BYTES])
    return f".{name}.{kind}-"


def write_folder(folder, files: dict[str, bytes], *, force: bool = False,
                 what: str = "run", former: tuple[str, ...] = (),
                 same: Callable[[str], bool] | None = None) -> dict[str, str]:
    """Write ``files`` (name -> bytes) as the whole contents of ``folder``, all or nothing.

    ``folder`` may be new, empty, hold the same ``what`` (``same(folder)`` says so; by
    default, the same bytes in every file of these names), or, with ``force``, another.
    A symbolic link to a folder saves into the folder it names. ``former`` names files of
    earlier versions of the same save, which it may hold and which go with the rest.
    Returns the paths written, by name.
    """
    shown = as_path(folder, f"saved {what}'s folder")
    if not shown:
        raise ArgumentError(f"the folder to save the {what} in is empty ('');"
                            f" give a folder path")
    folder = os.path.realpath(shown)
    parent = os.path.dirname(folder)
    _recover(folder)
    check_folder(folder, tuple(files) + tuple(former), shown=shown)
    if (not force and os.path.isdir(folder) and os.listdir(folder)
            and not (same or (lambda path: _same_bytes(path, files)))(folder)):
        raise ArgumentError(f"cannot save to {shown}: it holds a different saved {what}; "
                            f"choose another folder, or replace it with --force "
                            f"(force=True)")
    staging = os.path.join(parent, f"{_marker(folder, 'saving')}{os.getpid()}-"
                                    f"{secrets.token_hex(4)}")
    try:
        os.makedirs(parent, exist_ok=True)
        _remove_abandoned(parent, _marker(folder, "saving"))
        os.mkdir(staging)
        for name, data in files.items():
            with open(os.path.join(staging, name), "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        sync_folder(staging)
        if os.path.isdir(folder):
            _swap_in(staging, folder)  # staging now holds the former contents
        else:
            os.rename(staging, folder)
        sync_folder(parent)
    except OSError as exc:
        raise ArgumentError(f"cannot save to {shown}: {exc.strerror or exc}") from None
    finally:
        _remove_tree(staging)
    return {name: os.path.join(shown, name) for name in files}


def check_folder(folder, names, *, shown: str | None = None) -> None:
    """An ArgumentError unless ``folder`` is new, empty, or holds only files of ``names``
    none of which is an input of the command running."""
    folder = as_path(folder, "save folder")
    shown = folder if shown is None else shown
    if not folder:
        raise ArgumentError("the folder to save in is empty (''); give a folder path")
    real = os.path.realpath(folder)
    if not os.path.lexists(real):
        return
    if not os.path.isdir(real):
        raise ArgumentError(f"cannot save to {shown}: it exists and is not a folder")
    try:
        present = os.listdir(real)
    except OSError as exc:
        raise ArgumentError(f"cannot save to {shown}: {exc.strerror}") from None
    others = sorted(set(present) - set(names))
    if others:
        raise ArgumentError(f"cannot save to {shown}: it holds other files ({others[0]}"
                            f"{', ...' if len(others) > 1 else ''}); choose a new or empty "
                            f"folder")
    for name in present:
        check_not_input(os.path.join(real, name), os.path.join(shown, name), "saved run")


def _same_bytes(folder: str, files: dict[str, bytes]) -> bool:
    """Whether every file of ``files`` present in ``folder`` holds the same bytes."""
    for name, data in files.items():
        try:
            with open(os.path.join(folder, name), "rb") as handle:
                if handle.read(len(data) + 1) != data:
                    return False
        except FileNotFoundError:
            continue
        except OSError:
            return False
    return True


def _swap_in(staging: str, folder: str) -> None:
    """Exchange ``staging`` and ``folder`` whole: at no moment does ``folder`` hold a mix."""
    if _exchange(staging, folder):
        return
    former = os.path.join(os.path.dirname(folder), f"{_marker(folder, 'replaced')}"
                                                   f"{os.getpid()}-{secrets.token_hex(4)}")
    os.rename(folder, former)
    try:
        os.rename(staging, folder)
    except BaseException:
        os.rename(former, folder)  # roll back: the former run stays whole
        raise
    os.rename(former, staging)  # removed with the staging folder


def _exchange(first: str, second: str) -> bool:
    """Swap two paths atomically (Linux renameat2); False where the system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                          ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second),
                 _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code))


def _recover(folder: str) -> None:
    """Put back a former folder that a writer killed between its two renames left aside."""
    parent, prefix = os.path.dirname(folder), _marker(folder, "replaced")
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        pid = name[len(prefix):].partition("-")[0] if name.startswith(prefix) else ""
        if not pid.isdigit() or writer_alive(int(pid)):
            continue
        aside = os.path.join(parent, name)
        if not os.path.lexists(folder):
            os.rename(aside, folder)
        else:
            _remove_tree(aside)


def _remove_abandoned(parent: str, prefix: str) -> None:
    """Remove the staging folders of earlier saves whose process was killed mid-save."""
    for name in os.listdir(parent):
        if not name.startswith(prefix):
            continue
        pid = name[len(prefix):].partition("-")[0]
        if pid.isdigit() and not writer_alive(int(pid)):
            _remove_tree(os.path.join(parent, name))


def _remove_tree(path: str) -> None:
    """Remove a staging folder of regular files, if it is still there."""
    if not os.path.isdir(path) or os.path.islink(path):
        return
    for name in os.listdir(path):
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(path, name))
    with contextlib.suppress(OSError):
        os.rmdir(path)
