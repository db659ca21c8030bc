"""core_mask sweeps: planning, rows, plots, resuming, interruption, executors, the CLI."""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dspsim
from dspsim.placement import c_arguments, place_operands
from dspsim.sim.chip.load import resolve_chip_path
from dspsim.sim.errors import ArgumentError, ConfigError
from dspsim.sweep import SweepSpec, plan, run_sweep
from dspsim.sweep import driver as sweep
from dspsim.sweep.executors import DaskExecutor, ProcessExecutor, SerialExecutor, make_executor
from dspsim.sweep.plan import masks_for
from dspsim.sweep.scaling_plot import write_sweep_plots
from dspsim.sweep.store import COLUMNS, RowStore

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def small_spec(**changes) -> SweepSpec:
    spec = dict(operators=["relu_grad"], chips=["ft78ne"], lengths=[2**12, 2**14],
                core_masks=[0x1, 0x3, 0xf], numerics=False)
    spec.update(changes)
    return SweepSpec(**spec)


def sweep_into(folder, spec, executor=None):
    with RowStore(str(folder)) as store:
        outcome = run_sweep(plan(spec), store, executor or SerialExecutor())
        return outcome, dict(store.rows)


def jsonl_rows(folder):
    with open(os.path.join(folder, "rows.jsonl"), encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def csv_rows(folder):
    with open(os.path.join(folder, "rows.csv"), newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def assert_png(path, min_bytes=10_000):
    with open(path, "rb") as handle:
        data = handle.read()
    assert data[:8] == PNG_MAGIC, f"{path} is not a PNG"
    assert len(data) > min_bytes, f"{path} is only {len(data)} bytes"


# ----------------------------------------------------------------------------- planning
def test_plan_expands_stems_per_dtype_and_skips_what_a_chip_cannot_run():
    spec = small_spec(chips=["ft78ne", "mt7004"], dtypes=["fp32", "fp16"], lengths=[4096],
                      core_masks=[0x1, 0xf, 0xff])
    the_plan = plan(spec)
    combos = sorted((r.chip.name, r.operator, r.core_mask) for r in the_plan.runs)
    assert combos == sorted(
        [("FT78NE", "fp_relu_grad_s", m) for m in (0x1, 0xf, 0xff)]
        + [("MT7004", op, m) for op in ("fp_relu_grad_s", "hp_relu_grad_s") for m in (0x1, 0xf)])
    notes = " ".join(the_plan.build()[1])
    assert "FT78NE does not support fp16" in notes and "hp_relu_grad_s" in notes
    assert "MT7004 has 4 cores: skipped core masks 0xff" in notes


def test_core_counts_mean_the_lowest_cores_and_default_to_powers_of_two():
    masks = [r.core_mask for r in plan(small_spec(core_masks=None, core_counts=[1, 2, 4])).runs]
    assert masks == [0x1, 0x3, 0xf] * 2
    assert masks_for(small_spec(core_masks=None), 8) == ([0x1, 0x3, 0xf, 0xff], "")
    assert masks_for(small_spec(core_masks=None), 6) == ([0x1, 0x3, 0xf, 0x3f], "")


@pytest.mark.parametrize("changes, message", [
    ({"operators": ["relu_grd"]}, "did you mean"),
    ({"operators": ["fp_relu_grad_p"]}, "private-storage"),
    ({"core_masks": [0]}, "selects no core"),
    ({"dtypes": ["fp64"]}, "unknown dtype"),
    ({"params": {"alpha": 0.1}}, "no swept operator has parameter 'alpha'"),
    ({"chips": ["ft78ne"], "dtypes": ["fp16"]}, "nothing to run"),
])
def test_plan_rejects_bad_requests_with_a_clear_message(changes, message):
    with pytest.raises(ArgumentError, match=message):
        plan(small_spec(**changes))


def test_unknown_chip_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown chip"):
        plan(small_spec(chips=["ft99"]))


# ----------------------------------------------------------------------------- rows
def test_rows_carry_every_figure_and_match_a_direct_call(tmp_path):
    outcome, rows = sweep_into(tmp_path, small_spec())
    assert outcome.ran == 6 and outcome.already_done == 0 and len(rows) == 6
    by_mask = {(r["length"], r["core_mask"]): r for r in rows.values()}
    for (length, mask), row in by_mask.items():
        base = by_mask[(length, 0x1)]
        assert row["baseline_cycles"] == base["cycles"]
        assert row["speedup"] == pytest.approx(base["cycles"] / row["cycles"])
        assert row["parallel_efficiency"] == pytest.approx(row["speedup"] / row["cores"])
        assert 1.0 <= row["speedup"] <= row["cores"]  # never beyond ideal scaling
        assert row["speedup"] <= row["speedup_ddr_ceiling"] + 1e-9
        assert row["cycles"] >= row["roofline_cycles"]
        assert row["cores"] == bin(mask).count("1") and row["numerics"] is False
        assert 0 < row["share_of_ddr_peak"] < 1 and row["bound"] in ("DDR", "DMA engine")
    assert by_mask[(2**14, 0xf)]["bound"] == "DDR"
    assert by_mask[(2**14, 0x1)]["bound"] == "DDR"  # one core uses several EDMA3 controllers

    # the same call made by hand gives the same cycles
    chip = dspsim.Chip("ft78ne")
    cname = chip.resolve("fp_relu_grad_s")
    addresses = place_operands(chip.config, cname, 2**14)
    for operand in ("src0", "src1"):
        chip.write(addresses[operand], np.zeros(2**14, np.float32))
    direct = chip.fp_relu_grad_s(addresses["src0"], addresses["src1"], addresses["dst"], 2**14,
                                 0x3)
    assert by_mask[(2**14, 0x3)]["cycles"] == direct.cycles
    assert by_mask[(2**14, 0x3)]["achieved_gbps"] == pytest.approx(direct.achieved_gbps)

    # CSV, JSON Lines and JSON hold the same rows
    table = csv_rows(tmp_path)
    assert list(table[0]) == list(COLUMNS) and len(table) == 6
    assert sorted(int(r["cycles"]) for r in table) == sorted(r["cycles"] for r in rows.values())
    with open(tmp_path / "rows.json", encoding="utf-8") as handle:
        document = json.load(handle)
    assert len(document["rows"]) == 6 and document["columns"] == list(COLUMNS)


def test_numerics_mode_checks_the_results(tmp_path):
    _, rows = sweep_into(tmp_path, small_spec(lengths=[2**12], core_masks=[0x1, 0x3],
                                              numerics=True))
    assert [r["numerics_ok"] for r in rows.values()] == [True, True]
    assert all(r["max_rel_error"] == 0.0 for r in rows.values())


def test_missing_baseline_is_added_and_noted(tmp_path):
    outcome, rows = sweep_into(tmp_path, small_spec(lengths=[2**12], core_masks=[0x3, 0xf]))
    assert sorted(r["core_mask"] for r in rows.values()) == [0x1, 0x3, 0xf]
    assert any("baseline" in note for note in outcome.notes)
    assert all(r["speedup"] is not None for r in rows.values())


def test_another_model_fidelity_gets_rows_of_its_own(tmp_path):
    spec = small_spec(lengths=[2**12], core_masks=[0x1, 0x3])
    _, fast = sweep_into(tmp_path, spec)
    spec.fidelity = "detailed"
    detailed_run, rows = sweep_into(tmp_path, spec)
    assert detailed_run.ran == 2 and len(rows) == 4
    detailed = [r for r in rows.values() if r["fidelity"] == "detailed"]
    assert len(detailed) == 2 and all(r["speedup"] is not None for r in detailed)
    assert {r["fidelity"] for r in fast.values()} == {"fast"}


def test_plots_are_real_pngs(tmp_path):
    _, rows = sweep_into(tmp_path, small_spec(chips=["ft78ne", "mt7004"]))
    paths = write_sweep_plots(rows.values(), str(tmp_path))
    names = sorted(os.path.basename(p) for p in paths)
    assert names == sorted(f"{kind}-{chip}.png" for kind in ("speedup", "bandwidth", "time")
                           for chip in ("ft78ne", "mt7004"))
    for path in paths:
        assert_png(path)


# ----------------------------------------------------------------------------- resume
def test_rerunning_skips_finished_rows_and_extending_runs_only_new_ones(tmp_path):
    first, rows = sweep_into(tmp_path, small_spec())
    again, rows_again = sweep_into(tmp_path, small_spec())
    assert (again.ran, again.already_done) == (0, 6)
    assert rows_again == rows
    longer, rows_longer = sweep_into(tmp_path, small_spec(lengths=[2**12, 2**14, 2**15]))
    assert (longer.ran, longer.already_done) == (3, 6)
    assert len(jsonl_rows(tmp_path)) == 9 and len(csv_rows(tmp_path)) == 9


def test_an_exception_after_k_rows_loses_none_of_them(tmp_path, monkeypatch):
    calls = {"n": 0}
    real = sweep.execute

    def failing_after_four(task):
        calls["n"] += 1
        if calls["n"] > 4:
            raise RuntimeError("worker lost")
        return real(task)

    monkeypatch.setattr(sweep, "execute", failing_after_four)
    with pytest.raises(RuntimeError, match="worker lost"):
        sweep_into(tmp_path, small_spec())
    assert len(jsonl_rows(tmp_path)) == 4 and len(csv_rows(tmp_path)) == 4
    with open(tmp_path / "rows.json", encoding="utf-8") as handle:
        assert len(json.load(handle)["rows"]) == 4

    monkeypatch.setattr(sweep, "execute", real)
    resumed, rows = sweep_into(tmp_path, small_spec())
    assert (resumed.ran, resumed.already_done) == (2, 4)
    _, fresh = sweep_into(tmp_path / "fresh", small_spec())
    assert {k: r["cycles"] for k, r in rows.items()} == {k: r["cycles"] for k, r in fresh.items()}
    assert {k: r["speedup"] for k, r in rows.items()} == {k: r["speedup"] for k, r in fresh.items()}


KILL_SCRIPT = textwrap.dedent("""
    import os, signal, sys
    from dspsim.sweep.executors import SerialExecutor
    from dspsim.sweep import SweepSpec, plan, run_sweep
    from dspsim.sweep.store import RowStore

    done = []

    def die_after_three(row):
        done.append(row)
        if len(done) == 3:
            os.kill(os.getpid(), signal.SIGKILL)

    spec = SweepSpec(operators=["relu_grad"], chips=["ft78ne"], lengths=[2**12, 2**14],
                     core_masks=[0x1, 0x3, 0xf], numerics=False)
    with RowStore(sys.argv[1]) as store:
        run_sweep(plan(spec), store, SerialExecutor(), on_row=die_after_three)
""")


def test_a_killed_sweep_keeps_every_finished_row_and_resumes(tmp_path):
    out = str(tmp_path / "killed")
    proc = subprocess.run([sys.executable, "-c", KILL_SCRIPT, out], capture_output=True)
    assert proc.returncode == -9, proc.stderr.decode()
    assert len(jsonl_rows(out)) == 3 and len(csv_rows(out)) == 3
    with open(os.path.join(out, "rows.json"), encoding="utf-8") as handle:
        json.load(handle)  # still a valid document (possibly a few rows behind)

    resumed = run_cli("sweep", "--ops", "relu_grad", "--chips", "ft78ne", "--lengths",
                      "2^12,2^14", "--core-masks", "0x1,0x3,0xf", "--timing-only", "--out", out,
                      "--no-plots")
    assert resumed.returncode == 0, resumed.stderr
    assert "3 runs done, 3 already in" in resumed.stdout
    rows = jsonl_rows(out)
    assert len(rows) == 6 and len({r["key"] for r in rows}) == 6


def test_a_torn_last_line_is_cut_off_on_resume(tmp_path):
    sweep_into(tmp_path, small_spec())
    with open(tmp_path / "rows.jsonl", "ab") as handle:
        handle.write(b'{"chip": "FT78NE", "cyc')  # a machine crash mid-write
    outcome, rows = sweep_into(tmp_path, small_spec())
    assert outcome.ran == 0 and len(rows) == 6
    assert any("torn last line" in note for note in outcome.notes)
    assert len(jsonl_rows(tmp_path)) == 6


def test_a_second_sweep_into_the_same_folder_is_refused(tmp_path):
    with RowStore(str(tmp_path)), \
            pytest.raises(ArgumentError, match="another sweep is writing"):
        RowStore(str(tmp_path)).open()


# ----------------------------------------------------------------------------- executors
def test_local_processes_give_the_same_rows(tmp_path):
    _, serial = sweep_into(tmp_path / "serial", small_spec())
    with ProcessExecutor(2) as pool:
        _, parallel = sweep_into(tmp_path / "pool", small_spec(), pool)
    assert {k: r["cycles"] for k, r in parallel.items()} == \
        {k: r["cycles"] for k, r in serial.items()}


def test_dask_local_cluster_gives_the_same_rows(tmp_path):
    distributed = pytest.importorskip("distributed")
    _, serial = sweep_into(tmp_path / "serial", small_spec())
    with distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=2,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        executor = DaskExecutor(client=client)
        assert "Dask cluster" in executor.description
        outcome, on_dask = sweep_into(tmp_path / "dask", small_spec(), executor)
    # two threads share one interpreter lock: the sweep says how to start workers instead
    assert any("--nthreads 1" in note for note in outcome.notes)
    assert {k: r["cycles"] for k, r in on_dask.items()} == \
        {k: r["cycles"] for k, r in serial.items()}


def test_missing_dask_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import now raises ImportError
    with pytest.raises(ArgumentError, match=r"pip install 'dspsim\[distributed\]'"):
        make_executor(scheduler="tcp://127.0.0.1:8786")


def test_executor_choice():
    assert isinstance(make_executor(1), SerialExecutor)
    with pytest.raises(ArgumentError, match="at least 1"):
        make_executor(0)


# ----------------------------------------------------------------------------- CLI
def run_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "dspsim", *args], capture_output=True,
                          text=True, cwd=cwd)


def test_cli_sweep_on_both_chips(tmp_path):
    out = str(tmp_path / "study")
    args = ("sweep", "--ops", "relu_grad", "--chips", "ft78ne,mt7004", "--dtypes", "fp32,fp16",
            "--lengths", "2^12,2^13", "--core-masks", "0x1,0xff", "--timing-only", "--out", out)
    first = run_cli(*args)
    assert first.returncode == 0, first.stderr
    assert "8 runs done, 0 already in" in first.stdout
    assert "FT78NE does not support fp16" in first.stdout
    assert "MT7004 has 4 cores: skipped core masks 0xff" in first.stdout
    rows = csv_rows(out)
    assert len(rows) == 8
    assert {(r["chip"], r["operator"]) for r in rows} == {
        ("FT78NE", "fp_relu_grad_s"), ("MT7004", "fp_relu_grad_s"), ("MT7004", "hp_relu_grad_s")}
    assert_png(os.path.join(out, "speedup-ft78ne.png"))
    assert_png(os.path.join(out, "time-mt7004.png"))
    assert not os.path.exists(os.path.join(out, "speedup-mt7004.png"))  # one core count only

    again = run_cli(*args)
    assert again.returncode == 0 and "0 runs done, 8 already in" in again.stdout


def test_cli_sweep_reports_user_errors(tmp_path):
    result = run_cli("sweep", "--ops", "relu_grad", "--lengths", "2^12", "--workers", "0",
                     "--out", str(tmp_path / "x"))
    assert result.returncode == 2 and "need at least 1 worker" in result.stderr
    result = run_cli("sweep", "--ops", "nope", "--lengths", "2^12", "--out", str(tmp_path / "y"))
    assert result.returncode == 2 and "unknown operator 'nope'" in result.stderr


def test_a_bad_sweep_request_fails_before_making_its_folder(tmp_path):
    for bad in (["--ops", "nosuchop"], ["--ops", "relu_grad", "--chips", "ft99"],
                ["--ops", "relu_grad", "--lengths", "-5"]):
        args = ["sweep", *bad, "--out", str(tmp_path / "s")]
        if "--lengths" not in bad:
            args += ["--lengths", "64"]
        proc = run_cli(*args)
        assert proc.returncode == 2 and "error:" in proc.stderr
        assert "Traceback" not in proc.stderr and "sweep ━" not in proc.stdout
        assert not (tmp_path / "s").exists()


def test_figures_of_an_older_chip_description_are_named_so_never_left_stale(tmp_path):
    with open(resolve_chip_path("mt7004"), encoding="utf-8") as handle:
        text = handle.read()
    chip = tmp_path / "mine.yaml"
    chip.write_text(text)
    out = str(tmp_path / "study")
    args = ("sweep", "--ops", "relu_grad", "--chips", str(chip), "--lengths", "2^12,2^13",
            "--cores", "1,2", "--timing-only", "--out", out)
    assert run_cli(*args).returncode == 0
    first = sorted(f for f in os.listdir(out) if f.endswith(".png"))
    assert first == ["bandwidth-mt7004.png", "speedup-mt7004.png", "time-mt7004.png"]
    old_digest = csv_rows(out)[0]["config_digest"]
    chip.write_text(text.replace("setup_cycles: 150", "setup_cycles: 300"))
    assert run_cli(*args).returncode == 0
    second = sorted(f for f in os.listdir(out) if f.endswith(".png"))
    assert second == sorted(first + [f"{kind}-mt7004-older-{old_digest[:8]}.png"
                                     for kind in ("bandwidth", "speedup", "time")])
    newest = {r["config_digest"] for r in csv_rows(out)} - {old_digest}
    assert len(newest) == 1
    # the plain names now show the new description; a third sweep of the old one swaps them
    chip.write_text(text)
    assert run_cli(*args).returncode == 0
    third = sorted(f for f in os.listdir(out) if f.endswith(".png"))
    assert f"speedup-mt7004-older-{newest.pop()[:8]}.png" in third
    assert f"speedup-mt7004-older-{old_digest[:8]}.png" not in third


def test_operators_sharing_a_timing_give_the_rows_of_their_own_calls(tmp_path):
    # most two-input gradients cost the same per vector: a sweep simulates them once,
    # and each row must still be exactly what its own call gives
    spec = small_spec(operators=["all"], chips=["ft78ne", "mt7004"], lengths=[3000],
                      core_masks=[0x3])
    _, rows = sweep_into(tmp_path, spec)
    assert len(rows) == 64  # and their one-core baselines
    chips = {name: dspsim.Chip(name) for name in ("ft78ne", "mt7004")}
    skip = {"host_seconds", "key", "config_digest", "base_digest", "overrides", "given_values",
            "baseline_cycles", "speedup", "parallel_efficiency", "speedup_ddr_ceiling"}
    for row in rows.values():
        chip = chips[row["chip"].lower()]
        cname = chip.resolve(row["operator"])
        addresses = place_operands(chip.config, cname, 3000)
        for operand in cname.operator.inputs:
            chip.zero(addresses[operand], 3000, cname.dtype.numpy)
        args = c_arguments(cname.operator, addresses, 3000, {})
        direct = chip.call(row["operator"], *args, core_mask=row["core_mask"],
                           numerics=False).to_row()
        for column, value in direct.items():
            if column not in skip:
                assert row[column] == value, (row["operator"], column)
