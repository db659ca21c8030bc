"""Run the ``dspsim`` command as a user does: piped, or in a terminal of a given width."""
from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def dspsim_cli(*args, cwd=None, env=None, timeout=300) -> subprocess.CompletedProcess:
    """``python -m dspsim ARGS`` with stdout and stderr piped."""
    return subprocess.run([sys.executable, "-m", "dspsim", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=timeout,
                          env={**os.environ, **(env or {})})


def one_line_error(proc: subprocess.CompletedProcess, fragment: str = "") -> str:
    """The one line a refused command printed: exit status 2, no traceback, one line on
    stderr (holding ``fragment``)."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert fragment in lines[0], lines[0]
    return lines[0]


def dspsim_in_terminal(*args, columns: int, cwd=None, timeout=300) -> tuple[int, str]:
    """``python -m dspsim ARGS`` in a pseudo-terminal ``columns`` wide.

    Returns the exit status and what the terminal showed (stdout and stderr together),
    with colour codes and carriage returns removed.
    """
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 60, columns, 0, 0))
    env = {**os.environ, "COLUMNS": str(columns), "LINES": "60", "TERM": "xterm-256color"}
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        env.pop(name, None)
    proc = subprocess.Popen([sys.executable, "-m", "dspsim", *map(str, args)], stdin=slave,
                            stdout=slave, stderr=slave, cwd=cwd, env=env, close_fds=True)
    os.close(slave)
    chunks = []
    try:
        while True:
            ready, _, _ = select.select([master], [], [], timeout)
            if not ready:
                proc.kill()
                raise TimeoutError(f"dspsim {' '.join(map(str, args))} printed nothing for "
                                   f"{timeout} s")
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
        proc.wait(timeout=timeout)
    text = b"".join(chunks).decode("utf-8", "replace")
    return proc.returncode, _ANSI.sub("", text).replace("\r", "")


def appears_whole(token: str, text: str) -> bool:
    """``token`` occurs in ``text`` with no digit, comma or point glued to either side."""
    return re.search(r"(?<![\d,.])" + re.escape(token) + r"(?![\d,]|\.\d)", text) is not None
