"""Trace files in a hostile world: folders, devices, pipes, links, long names, kills
mid-write, the umask, fsync before rename, and the trace commands' refusals."""
from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import terminal

import dspsim
from dspsim import atomic as trace_file
from dspsim.atomic import remove_stale_temporaries, write_atomically
from dspsim.sim.errors import ArgumentError
from dspsim.traces.formats import write_trace


@pytest.fixture(scope="module")
def result():
    rng = np.random.default_rng(0)
    _, r = dspsim.simulate("fp_relu_grad_s", rng.standard_normal(4096),
                           rng.standard_normal(4096), chip="ft78ne", core_mask=0x3)
    return r


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "dspsim", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=300)


def one_line_error(proc, fragment):
    """A refused command's one line, an ``error:`` with nothing on stdout."""
    line = terminal.one_line_error(proc, fragment)
    assert line.startswith("error:") and not proc.stdout, (line, proc.stdout)


# ----------------------------------------------------------------------------- targets
def test_a_folder_a_pipe_and_a_link_to_a_device_are_never_replaced(tmp_path, result):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "null.pftrace"
    link.symlink_to(os.devnull)
    for target, fragment in [(tmp_path, "is a folder"), (fifo, "not a regular file"),
                             (link, "not a regular file")]:
        with pytest.raises(ArgumentError, match=fragment):
            result.write_trace(target)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.path.islink(link)
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    assert sorted(os.listdir(tmp_path)) == ["null.pftrace", "pipe"]  # no temporary left


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="making a device node needs root")
def test_as_root_a_device_node_is_refused_and_stays_a_device(tmp_path, result):
    device = tmp_path / "full"
    os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 7))  # what /dev/full is
    proc = cli("run", "fp_relu_grad_s", "--length", "64", "--trace", device)
    one_line_error(proc, "not a regular file")
    with pytest.raises(ArgumentError, match="not a regular file"):
        result.write_trace(device)
    assert stat.S_ISCHR(os.lstat(device).st_mode)
    assert os.listdir(tmp_path) == ["full"]


def test_standard_streams_are_refused_even_when_they_are_regular_files(tmp_path):
    out = tmp_path / "out.txt"
    with open(out, "w") as handle:  # stdout is a regular file: it must not be renamed over
        proc = subprocess.run([sys.executable, "-m", "dspsim", "run", "fp_relu_grad_s",
                               "--length", "64", "--trace", "/dev/stdout"], stdout=handle,
                              stderr=subprocess.PIPE, text=True, timeout=300)
    assert proc.returncode == 2 and "names an open file of a process" in proc.stderr
    assert out.read_text() == "" and os.listdir(tmp_path) == ["out.txt"]
    link = tmp_path / "err.pftrace"
    link.symlink_to("/dev/stderr")
    with pytest.raises(ArgumentError, match="open file of a process"):
        write_atomically(b"x", link)


def test_a_link_to_a_regular_file_is_followed_not_replaced(tmp_path, result):
    real = tmp_path / "real.pftrace"
    real.write_bytes(b"old")
    link = tmp_path / "link.pftrace"
    link.symlink_to(real)
    result.write_trace(link)
    assert os.path.islink(link) and real.read_bytes()[:1] == b"\x0a"


def test_names_too_long_for_the_file_system_are_refused_before_running(tmp_path):
    long_name = tmp_path / ("x" * 300 + ".pftrace")
    proc = cli("run", "fp_relu_grad_s", "--length", "64", "--trace", long_name)
    one_line_error(proc, "more than the 255 the file system allows")
    long_folder = tmp_path / ("y" * 300) / "t.pftrace"
    with pytest.raises(ArgumentError, match="cannot write the trace"):
        write_atomically(b"x", long_folder)
    assert os.listdir(tmp_path) == []


# ----------------------------------------------------------------------------- the write
def test_files_are_created_with_the_umask_applied(tmp_path, result):
    old = os.umask(0o022)
    try:
        for mask, mode in [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)]:
            os.umask(mask)
            path = result.write_trace(tmp_path / f"m{mask:o}.pftrace")
            assert stat.S_IMODE(os.stat(path).st_mode) == mode
    finally:
        os.umask(old)


def test_data_is_synced_before_the_rename(tmp_path, monkeypatch):
    calls = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(os, "replace", lambda a, b: (calls.append("replace"),
                                                     real_replace(a, b))[1])
    write_atomically(b"data", tmp_path / "t.pftrace")
    assert calls[:2] == ["fsync", "replace"]  # then the folder is synced
    assert (tmp_path / "t.pftrace").read_bytes() == b"data"


def test_a_failed_encoding_leaves_the_old_file_and_no_temporary(tmp_path, result):
    path = result.write_trace(tmp_path / "t.json")
    before = Path(path).read_bytes()
    with pytest.raises(TypeError):
        write_trace({"traceEvents": [], "metadata": {"x": object()}}, path)
    assert Path(path).read_bytes() == before and os.listdir(tmp_path) == ["t.json"]


def test_a_writer_killed_mid_write_leaves_a_temporary_that_the_next_write_removes(tmp_path):
    target = tmp_path / "t.pftrace"
    code = ("import os, signal\n"
            "from dspsim import atomic as trace_file\n"
            "os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)\n"
            f"trace_file.write_atomically(b'x' * 100000, {str(target)!r})\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL
    left = [n for n in os.listdir(tmp_path) if n.startswith(".trace-")]
    assert len(left) == 1 and not target.exists()
    write_atomically(b"y", target)
    assert os.listdir(tmp_path) == ["t.pftrace"]


def test_only_temporaries_of_dead_or_unknown_old_writers_are_removed(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    names = {f".trace-{dead.pid}-abc.tmp": False,  # its writer is gone
             f".trace-{os.getppid()}-abc.tmp": True,  # its writer still runs
             ".trace-oldabc.tmp": False,  # unknown writer, an old file
             ".trace-newabc.tmp": True,  # unknown writer, written just now
             "notes.tmp": True}
    for name in names:
        (tmp_path / name).write_text("x")
    old = time.time() - 2 * trace_file.STALE_SECONDS
    os.utime(tmp_path / ".trace-oldabc.tmp", (old, old))
    remove_stale_temporaries(str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == sorted(n for n, kept in names.items() if kept)


# ----------------------------------------------------------------------------- commands
def test_summary_buckets_are_bounded_and_zero_is_refused(tmp_path, result):
    path = result.write_trace(tmp_path / "t.pftrace")
    for bad in ("0", "-3", "10001", "10**9", "x"):
        one_line_error(cli("trace", "summary", path, "--buckets", bad), "--buckets")
    proc = cli("trace", "summary", path, "--buckets", "10000", "--json")
    assert proc.returncode == 0, proc.stderr
    assert '"ddr_timeline"' in proc.stdout


def test_a_plot_cannot_replace_a_device_or_a_folder(tmp_path, result):
    path = result.write_trace(tmp_path / "t.pftrace")
    one_line_error(cli("trace", "plot", path, "-o", tmp_path), "is a folder")
    one_line_error(cli("trace", "plot", path, "-o", os.devnull), "not a regular file")
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_a_save_killed_midway_leaves_staging_that_the_next_save_removes(tmp_path):
    from dspsim.result import write_folder
    folder = tmp_path / "run"
    code = ("import os, signal\n"
            "from dspsim.result import write_folder\n"
            "os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)\n"
            f"write_folder({str(folder)!r}, {{'result.json': b'x'}})\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert [n for n in os.listdir(tmp_path) if ".saving-" in n]
    write_folder(str(folder), {"result.json": b"y"})
    assert os.listdir(tmp_path) == ["run"] and (folder / "result.json").read_bytes() == b"y"
