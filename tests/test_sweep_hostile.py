"""Sweeps against hostile inputs and faults: full disks, read-only folders, edited logs,
duplicate chips, cosmetic chip edits, bad parameters, Ctrl-C, killed drivers, huge counts."""
from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from dspsim.sim.chip.load import resolve_chip_path
from dspsim.sweep import SweepSpec, plan, run_sweep
from dspsim.sweep import files as sweep_files
from dspsim.sweep.chips import ChipSpec
from dspsim.sweep.executors import SerialExecutor
from dspsim.sweep.store import RowStore, StoreError


def small(**changes) -> SweepSpec:
    fields = dict(operators=["relu_grad"], chips=["ft78ne"], lengths=[2**12],
                  core_masks=[0x1, 0x3], numerics=False)
    fields.update(changes)
    return SweepSpec(**fields)


def sweep_into(folder, spec):
    with RowStore(str(folder)) as store:
        return run_sweep(plan(spec), store, SerialExecutor()), dict(store.rows)


def lines(path):
    with open(path, "rb") as handle:
        return handle.read().split(b"\n")


def run_cli(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "dspsim", *args], capture_output=True,
                          text=True, **kwargs)


def test_a_file_size_limit_leaves_no_half_row_and_a_clear_error(tmp_path):
    sweep_into(tmp_path, small())
    size = os.path.getsize(tmp_path / "rows.jsonl")
    script = textwrap.dedent(f"""
        import resource, sys
        from dspsim.sweep import SweepSpec, plan, run_sweep
        from dspsim.sweep.executors import SerialExecutor
        from dspsim.sweep.store import RowStore, StoreError
        spec = SweepSpec(operators=["relu_grad"], chips=["ft78ne"], lengths=[2**12, 2**13],
                         core_masks=[0x1, 0x3], numerics=False)
        store = RowStore(sys.argv[1]).open()
        resource.setrlimit(resource.RLIMIT_FSIZE, ({size} + 300, {size} + 300))
        try:
            run_sweep(plan(spec), store, SerialExecutor())
        except StoreError as exc:
            print("StoreError:", exc)
    """)
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True,
                          text=True)
    assert "StoreError: cannot add a row" in proc.stdout, proc.stdout + proc.stderr
    assert "rows before it are kept" in proc.stdout
    for name in ("rows.jsonl", "rows.csv"):
        assert lines(tmp_path / name)[-1] == b""  # ends in a whole line
    assert os.path.getsize(tmp_path / "rows.jsonl") == size  # the row did not fit: cut back
    outcome, rows = sweep_into(tmp_path, small(lengths=[2**12, 2**13]))
    assert outcome.ran == 2 and len(rows) == 4 and not outcome.notes[1:]


def test_a_full_disk_during_the_csv_append_takes_the_row_out_of_both_files(tmp_path,
                                                                            monkeypatch):
    sweep_into(tmp_path, small())
    real = sweep_files.append_whole

    def full_for_csv(path, data, sync):
        if path.endswith(".csv"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, data, sync)

    monkeypatch.setattr("dspsim.sweep.store.append_whole", full_for_csv)
    with pytest.raises(StoreError, match="No space left on device"):
        sweep_into(tmp_path, small(lengths=[2**12, 2**13]))
    assert len(lines(tmp_path / "rows.jsonl")) == len(lines(tmp_path / "rows.csv")) - 1 == 3


def test_a_read_only_folder_is_a_clear_error(tmp_path, monkeypatch):
    folder = tmp_path / "ro"
    folder.mkdir()
    real_open = os.open

    def read_only(path, flags, *args):
        if str(path).startswith(str(folder)) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(errno.EROFS, "Read-only file system")
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", read_only)
    with pytest.raises(StoreError, match="Read-only file system"):
        RowStore(str(folder)).open()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_cli_on_a_read_only_folder(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    proc = run_cli("sweep", "--ops", "relu_grad", "--chips", "ft78ne", "--lengths", "64",
                   "--cores", "1", "--timing-only", "--out", str(folder))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_a_folder_removed_during_a_sweep_is_a_clear_error(tmp_path):
    folder = tmp_path / "gone"
    store = RowStore(str(folder)).open()
    for name in os.listdir(folder):
        os.unlink(folder / name)
    os.rmdir(folder)
    with pytest.raises(StoreError, match="cannot add a row"):
        run_sweep(plan(small()), store, SerialExecutor())
    with pytest.raises(StoreError, match="cannot write"):
        store.close()


def test_the_same_chip_named_twice_runs_once(tmp_path):
    path = resolve_chip_path("ft78ne")
    the_plan = plan(small(chips=["ft78ne", "FT78NE", path]))
    assert len(the_plan.runs) == 2
    outcome, rows = sweep_into(tmp_path, small(chips=["ft78ne", "FT78NE"]))
    assert outcome.ran == 2 and len(rows) == 2


def test_a_comment_only_edit_keeps_the_digest_and_a_value_edit_changes_it(tmp_path):
    with open(resolve_chip_path("mt7004"), encoding="utf-8") as handle:
        text = handle.read()
    commented = tmp_path / "commented.yaml"
    commented.write_text("# my notes\n" + text.replace("# assumed", "# assumed, checked"))
    changed = tmp_path / "changed.yaml"
    changed.write_text(text.replace("setup_cycles: 150", "setup_cycles: 151"))
    assert "setup_cycles: 151" in changed.read_text()
    original = ChipSpec.load("mt7004").digest
    assert ChipSpec.load(str(commented)).digest == original
    assert ChipSpec.load(str(changed)).digest != original
    sweep_into(tmp_path / "s", small(chips=["mt7004"]))
    again, _ = sweep_into(tmp_path / "s", small(chips=[str(commented)]))
    assert (again.ran, again.already_done) == (0, 2)


@pytest.mark.parametrize("edit, message", [
    (b'{"chip": "FT78NE", "cycles": 5}\n', "line 3 has no 'key'"),
    (b'{"key": "x"}\n', "line 3 has no 'chip'"),
    (b'{"key": "x", "chip": "A", "operator": "o", "dtype": "fp32", "length": "64", '
     b'"core_mask": 1, "cores": 1, "cycles": 9, "config_digest": "d"}\n',
     "line 3 has '64' as its 'length'"),
    (b'[1, 2]\n', "line 3 is not a JSON row"),
])
def test_a_hand_edited_row_log_names_the_line_and_the_fault(tmp_path, edit, message):
    sweep_into(tmp_path, small())
    with open(tmp_path / "rows.jsonl", "ab") as handle:
        handle.write(edit)
        handle.write(lines(tmp_path / "rows.jsonl")[0] + b"\n")  # the bad line is not last
    with pytest.raises(StoreError, match=message):
        RowStore(str(tmp_path)).open()
    proc = run_cli("sweep", "--ops", "relu_grad", "--chips", "ft78ne", "--lengths", "2^12",
                   "--core-masks", "0x1,0x3", "--timing-only", "--out", str(tmp_path))
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("op, param, message", [
    ("l_relu_grad", "alpha=nan", "alpha = nan must be a finite number"),
    ("hard_shrink_grad", "lambd=-1", "lambd=-1 must be >= 0"),
    ("elu_grad", "alpha=1e-9", "flushes to 0 in fp16"),
])
def test_sweep_refuses_bad_parameters_as_run_does(tmp_path, op, param, message):
    chip, dtype = ("mt7004", "fp16") if "fp16" in message else ("ft78ne", "fp32")
    proc = run_cli("sweep", "--ops", op, "--chips", chip, "--lengths", "64",
                   "--param", param, "--dtypes", dtype, "--out", str(tmp_path / "p"))
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert not (tmp_path / "p").exists()


def test_ctrl_c_during_an_append_waits_for_both_files(tmp_path, monkeypatch):
    real = sweep_files.append_whole

    def interrupted_after_jsonl(path, data, sync):
        size = real(path, data, sync)
        if path.endswith(".jsonl"):
            # Ctrl-C between the two appends, to this thread: a signal sent to the process
            # may be taken by another of its threads (the test runner's) and handled late
            signal.raise_signal(signal.SIGINT)
        return size

    monkeypatch.setattr("dspsim.sweep.store.append_whole", interrupted_after_jsonl)
    # Ctrl-C as a user's Python process takes it, whatever the test runner's process set
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    store = RowStore(str(tmp_path)).open()
    try:
        with pytest.raises(KeyboardInterrupt):
            run_sweep(plan(small()), store, SerialExecutor())
    finally:
        signal.signal(signal.SIGINT, previous)
    store.close(quiet=True)
    assert len(store.rows) == 1
    assert len(lines(tmp_path / "rows.jsonl")) == 2 and len(lines(tmp_path / "rows.csv")) == 3
    with open(tmp_path / "rows.json", encoding="utf-8") as handle:
        assert len(json.load(handle)["rows"]) == 1


def test_a_deferred_ctrl_c_keeps_what_the_process_set_for_it():
    """Deferred, a Ctrl-C does after the block what it would have done: nothing where the
    process ignores it (a sweep's worker), KeyboardInterrupt where Python handles it."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with sweep_files.interrupts_deferred():
            signal.raise_signal(signal.SIGINT)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        with pytest.raises(KeyboardInterrupt), sweep_files.interrupts_deferred():
            signal.raise_signal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, previous)


KILL_DRIVER = textwrap.dedent("""
    import os, signal, sys
    from dspsim.sweep import SweepSpec, plan, run_sweep
    from dspsim.sweep.executors import ProcessExecutor
    from dspsim.sweep.store import RowStore

    def main():
        done = []
        def die(row):
            done.append(row)
            if len(done) == 2:
                pids = [p.pid for p in executor._pool._processes.values()]
                print(" ".join(map(str, pids)), flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
        spec = SweepSpec(operators=["relu_grad"], chips=["ft78ne"], numerics=False,
                         lengths=[2**12, 2**13, 2**14], core_masks=[0x1, 0x3, 0xf])
        with RowStore(sys.argv[1]) as store, ProcessExecutor(2) as executor:
            run_sweep(plan(spec), store, executor, on_row=die)

    if __name__ == "__main__":
        main()
""")


def test_workers_end_with_a_killed_driver(tmp_path):
    script = tmp_path / "driver.py"
    script.write_text(KILL_DRIVER)
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "s")],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    pids = [int(p) for p in proc.stdout.readline().split()]
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL and len(pids) == 2
    deadline = time.monotonic() + 20
    alive = pids
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [p for p in pids if _running(p)]
    for pid in alive:  # leave nothing behind even when the test fails
        os.kill(pid, signal.SIGKILL)
    assert not alive, f"worker processes {alive} outlived the killed sweep"


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_a_huge_core_count_is_skipped_without_building_its_mask(tmp_path):
    the_plan = plan(small(core_masks=None, core_counts=[1, 2**40]))
    assert [r.core_mask for r in the_plan.runs] == [0x1]
    assert "skipped core counts 1,099,511,627,776" in " ".join(the_plan.build()[1])
    proc = run_cli("sweep", "--ops", "relu_grad", "--chips", "ft78ne", "--lengths", "64",
                   "--cores", "2^40", "--out", str(tmp_path / "c"))
    assert proc.returncode == 2 and "nothing to run" in proc.stderr
    assert "MemoryError" not in proc.stderr and "Traceback" not in proc.stderr
