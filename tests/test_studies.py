"""One study engine for call sweeps and program studies: program what-ifs, studies sized
before they start, folder locking, resuming, and the tables and order of their rows."""
from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest
from terminal import dspsim_cli, one_line_error

from dspsim.sim.errors import ArgumentError
from dspsim.sweep import (
    ProgramSweepSpec,
    SweepSpec,
    elasticities,
    plan,
    plan_program,
    rows_for_plots,
    sweep,
)
from dspsim.sweep.chips import ChipSpec, chip_variants, variant_count
from dspsim.sweep.notes import SkippedNotes
from dspsim.sweep.store import RowStore

PROGRAM = """\
chip: ft78ne
parameters: {n: 4096, mask: 0xff}
buffers:
  dy: {length: $n, init: {random: {seed: 1}}}
  x:  {length: $n, init: {random: {seed: 2}}}
  dx: {length: $n}
  dy2: {length: $n, init: {random: {seed: 3}}}
  dx2: {length: $n}
streams:
  main:
    - call: fp_relu_grad_s
      args: [dy, x, dx, $n, $mask]
    - record: first
  other:
    - wait: first
    - call: fp_relu_grad_s
      args: [dy2, dx, dx2, $n, $mask]
"""
DDR = "memory.ddr.efficiency"


def program(tmp_path) -> str:
    path = tmp_path / "p.yaml"
    path.write_text(PROGRAM)
    return str(path)


def jsonl(folder) -> list[dict]:
    with open(os.path.join(folder, "rows.jsonl"), encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


# --------------------------------------------------------------------------- program what-ifs
def test_program_whatif_from_the_command_line(tmp_path):
    out = tmp_path / "study"
    done = dspsim_cli("sweep", "--program", program(tmp_path), "--vary", "mask=0x1,0xff",
                      "--set", f"{DDR}=0.6,0.9", "--timing-only", "--out", out, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "planned: 6 runs" in done.stderr
    rows = json.loads((out / "rows.json").read_text())["rows"]
    assert len(rows) == 6 and all(r["study"] == "program" for r in rows)
    assert {r["overrides"] for r in rows} == {"", f"{DDR}=0.6", f"{DDR}=0.9"}
    by = {(r["param.mask"], r["overrides"]): r["cycles"] for r in rows}
    # less DDR efficiency never makes a program faster, more never slower
    for mask in (0x1, 0xff):
        assert by[(mask, f"{DDR}=0.6")] >= by[(mask, "")] >= by[(mask, f"{DDR}=0.9")]
    for row in rows:  # the largest lower bound never exceeds the cycles
        assert 0 < row["bound_share"] <= 1.0 + 1e-9
        assert row["bound_cycles"] == pytest.approx(row["bound_share"] * row["cycles"])
    assert "sensitivity" in done.stdout and "largest lower bound" in done.stdout
    assert "6 runs done, 0 already in" in done.stdout and "(6 planned)" in done.stdout
    assert (out / "sensitivity.csv").exists()
    assert (out / "whatif-ft78ne-memory-ddr-efficiency.png").exists()
    assert (out / "program-p-ft78ne.png").exists()


def test_program_whatif_without_vary_and_its_elasticities(tmp_path):
    rows = sweep(program=program(tmp_path), sets={DDR: [0.4, 0.9]}, timing_only=True)
    assert len(rows) == 3
    (found,) = elasticities(rows)
    assert found.program == "p.yaml" and found.operator is None and found.key == DDR
    assert found.given == 0.8 and (found.low, found.high) == (0.4, 0.9)
    if found.bound == "DDR":
        assert found.elasticity < 0  # more efficiency, fewer cycles
    given = next(r for r in rows if not r["overrides"])
    assert found.given_cycles == given["cycles"]


def test_python_api_refuses_mixing_calls_and_programs(tmp_path):
    with pytest.raises(ArgumentError, match="cannot be given with program"):
        sweep("relu_grad", program=program(tmp_path), vary={"n": [64]})
    with pytest.raises(ArgumentError, match="give program= too"):
        sweep("relu_grad", lengths=[64], vary={"n": [64]})


def test_a_program_run_on_a_variant_uses_the_variant(tmp_path):
    path = program(tmp_path)
    the_plan = plan_program(ProgramSweepSpec(path, {}, {"cores": [4]}))
    runs = the_plan.runs
    assert [r.chip.cores for r in runs] == [8, 4]
    assert len({r.key for r in runs}) == 2


# --------------------------------------------------------------------------- sizes
def test_three_set_axes_of_a_thousand_values_are_refused_at_once(tmp_path):
    values = ",".join(str(64 * (i + 1)) for i in range(1000))
    done = dspsim_cli("sweep", "--ops", "relu_grad", "--chips", "ft78ne", "--lengths", "4096",
                      "--set", f"vector.lane_width_bits={values}", "--set",
                      f"clock_mhz={values}", "--set", f"memory.ddr.peak_bandwidth_gbps={values}",
                      "--out", tmp_path / "huge", cwd=tmp_path, timeout=120)
    message = one_line_error(done)
    assert "1,000 × 1,000 × 1,000" in message and "--max-runs" in message
    assert not (tmp_path / "huge").exists()


def test_program_vary_grid_too_large_is_refused_and_max_runs_confirms(tmp_path):
    path = program(tmp_path)
    values = ",".join(str(64 * (i + 1)) for i in range(1000))
    done = dspsim_cli("sweep", "--program", path, "--vary", f"n={values}", "--vary",
                      f"mask={values}", "--out", tmp_path / "huge", cwd=tmp_path)
    assert "1,000,000 runs" in one_line_error(done)
    small = ["sweep", "--program", path, "--vary", "n=64,128,256", "--timing-only",
             "--no-plots", "--out", tmp_path / "small"]
    assert "more than --max-runs 2" in one_line_error(dspsim_cli(*small, "--max-runs", "2"))
    confirmed = dspsim_cli(*small, "--max-runs", "3", cwd=tmp_path)
    assert confirmed.returncode == 0, confirmed.stderr
    assert "3 runs done" in confirmed.stdout


def test_variants_are_built_lazily():
    chip = ChipSpec.load("ft78ne")
    axes = {key: [64.0 * (i + 1) for i in range(1000)]
            for key in ("vector.lane_width_bits", "clock_mhz",
                        "memory.ddr.peak_bandwidth_gbps")}
    assert variant_count(axes) == 1 + 1000 ** 3 + 3000
    notes: list[str] = []
    first = list(itertools.islice(chip_variants(chip, axes, SkippedNotes(notes)), 4))
    assert first[0] is chip and len(first) == 4


def test_the_count_bounds_the_runs_and_baselines_from_above():
    spec = SweepSpec(operators=["relu_grad"], chips=["ft78ne", "mt7004"], lengths=[4096],
                     core_masks=[0x3, 0xf], numerics=False,
                     chip_sets={"vector.lane_width_bits": [256, 1024],
                                DDR: [0.5, 0.8]})
    the_plan = plan(spec)
    runs = the_plan.runs
    assert len(runs) <= the_plan.count
    groups = {r.group for r in runs}
    assert len(groups) <= the_plan.baselines
    assert "one-core baselines" in the_plan.describe()


def test_invalid_combinations_are_counted_not_each_kept():
    notes: list[str] = []
    skipped = SkippedNotes(notes)
    list(chip_variants(ChipSpec.load("ft78ne"), {"cores": [0, -1, -2, -3, -4, -5, -6, -7]},
                       skipped))
    skipped.summary()
    assert len(notes) == SkippedNotes.SHOWN + 1 and "8 in all" in notes[-1]


# --------------------------------------------------------------------------- folders
def test_vary_without_program_is_refused(tmp_path):
    done = dspsim_cli("sweep", "--ops", "relu_grad", "--lengths", "64", "--vary", "n=1,2",
                      cwd=tmp_path)
    assert "--vary" in one_line_error(done) and not (tmp_path / "sweeps").exists()


def test_an_unwritable_folder_is_refused_before_the_first_run(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    done = dspsim_cli("sweep", "--program", program(tmp_path), "--vary", "n=64",
                      "--out", tmp_path / "file" / "study", cwd=tmp_path)
    assert "study" in one_line_error(done) and "planned" not in done.stderr


def test_a_locked_folder_is_refused_and_keeps_its_rows(tmp_path):
    path, out = program(tmp_path), tmp_path / "study"
    args = ["sweep", "--program", path, "--vary", "n=64,128", "--timing-only", "--no-plots",
            "--out", out]
    assert dspsim_cli(*args, cwd=tmp_path).returncode == 0
    the_plan = plan_program(ProgramSweepSpec(path, {"n": [64, 128]}))
    with RowStore(str(out), the_plan.schema):  # another sweep holds the folder
        refused = dspsim_cli(*args, cwd=tmp_path)
    assert "another sweep is writing" in one_line_error(refused)
    assert len(jsonl(out)) == 2


def test_two_concurrent_program_sweeps_lose_no_row(tmp_path):
    path, out = program(tmp_path), tmp_path / "study"
    args = [sys.executable, "-m", "dspsim", "sweep", "--program", path, "--vary",
            "n=64,128,256,512,1024,2048", "--timing-only", "--no-plots", "--out", str(out)]
    procs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, cwd=tmp_path) for _ in range(2)]
    results = [p.communicate(timeout=300) for p in procs]
    for proc, (_, stderr) in zip(procs, results, strict=True):
        assert proc.returncode == 0 or "another sweep is writing" in stderr, stderr
    assert any(p.returncode == 0 for p in procs)
    rows = jsonl(out)
    assert sorted(r["param.n"] for r in rows) == [64, 128, 256, 512, 1024, 2048]


def test_a_folder_of_call_rows_refuses_a_program_study(tmp_path):
    out = tmp_path / "study"
    calls = dspsim_cli("sweep", "--ops", "relu_grad", "--chips", "ft78ne", "--lengths", "64",
                       "--cores", "1", "--timing-only", "--no-plots", "--out", out)
    assert calls.returncode == 0, calls.stderr
    done = dspsim_cli("sweep", "--program", program(tmp_path), "--vary", "n=64",
                      "--no-plots", "--out", out)
    assert "holds the rows of a call study" in one_line_error(done)


KILL_SCRIPT = textwrap.dedent("""
    import os, signal, sys
    from dspsim.sweep import ProgramSweepSpec, plan_program, run_sweep
    from dspsim.sweep.executors import SerialExecutor
    from dspsim.sweep.store import RowStore

    done = []

    def die_after_two(row):
        done.append(row)
        if len(done) == 2:
            os.kill(os.getpid(), signal.SIGKILL)

    the_plan = plan_program(ProgramSweepSpec(sys.argv[2], {"n": [64, 128, 256, 512]},
                                                numerics=False))
    with RowStore(sys.argv[1], the_plan.schema) as store:
        run_sweep(the_plan, store, SerialExecutor(), on_row=die_after_two)
""")


def test_a_killed_program_study_resumes_without_rerunning_finished_rows(tmp_path):
    path, out = program(tmp_path), str(tmp_path / "study")
    killed = subprocess.run([sys.executable, "-c", KILL_SCRIPT, out, path],
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert len(jsonl(out)) == 2
    args = ["sweep", "--program", path, "--vary", "n=64,128,256,512", "--no-plots",
            "--timing-only", "--out", out]
    resumed = dspsim_cli(*args, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "2 runs done, 2 already in" in resumed.stdout
    again = dspsim_cli(*args, cwd=tmp_path)
    assert "0 runs done, 4 already in" in again.stdout
    rows = jsonl(out)
    assert len(rows) == 4 and len({r["key"] for r in rows}) == 4


def test_an_edited_program_file_is_studied_again(tmp_path):
    path, out = program(tmp_path), tmp_path / "study"
    args = ["sweep", "--program", path, "--vary", "n=64", "--no-plots", "--timing-only",
            "--out", out]
    assert "1 run done" in dspsim_cli(*args).stdout
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("description: edited\n")
    assert "1 run done, 0 already" in dspsim_cli(*args).stdout


# --------------------------------------------------------------------------- tables, order
def test_call_sweep_summary_counts_baselines_apart(tmp_path):
    done = dspsim_cli("sweep", "--ops", "relu_grad", "--chips", "ft78ne", "--lengths", "4096",
                      "--cores", "8", "--set", "vector.lane_width_bits=1024,256,512",
                      "--timing-only", "--no-plots", "--out", tmp_path / "s")
    assert done.returncode == 0, done.stderr
    assert "8 runs done, 0 already in" in done.stdout
    assert "(4 planned + 4 one-core baselines)" in done.stdout
    # what-if rows in numeric order of their values: 256, 512, 1024
    at = [done.stdout.index(f"lane_width_bits={v} ") for v in (256, 512, 1024)]
    assert at == sorted(at)


def test_rows_for_plots_order_values_as_numbers():
    rows = [{"study": "program", "chip": "FT78NE", "program": "p.yaml",
             "parameters": f"mask={mask}", "overrides": overrides}
            for overrides in ("memory.ddr.efficiency=0.9", "", "memory.ddr.efficiency=0.10")
            for mask in ("0x10", "0x3")]
    ordered = [(r["overrides"], r["parameters"]) for r in rows_for_plots(rows)]
    assert ordered == [("", "mask=0x3"), ("", "mask=0x10"),
                       ("memory.ddr.efficiency=0.10", "mask=0x3"),
                       ("memory.ddr.efficiency=0.10", "mask=0x10"),
                       ("memory.ddr.efficiency=0.9", "mask=0x3"),
                       ("memory.ddr.efficiency=0.9", "mask=0x10")]


def test_a_study_whose_every_run_is_refused_is_one_error(tmp_path):
    done = dspsim_cli("sweep", "--program", program(tmp_path), "--vary", "mask=0x100,0x200",
                      "--timing-only", "--no-plots", "--out", tmp_path / "s")
    message = one_line_error(done.__class__(done.args, done.returncode, done.stdout,
                                            done.stderr.split("\n", 1)[1]))
    assert "no run of the study gave a row" in message and "selects no core" in message


def test_a_program_study_runs_in_worker_processes_as_in_one(tmp_path):
    path = program(tmp_path)
    common = ["sweep", "--program", path, "--vary", "n=64,4096", "--set", f"{DDR}=0.5",
              "--timing-only", "--no-plots", "--json"]
    alone = json.loads(dspsim_cli(*common, "--out", tmp_path / "one").stdout)
    shared = json.loads(dspsim_cli(*common, "--workers", "2", "--out", tmp_path / "two").stdout)
    assert alone["study"] == shared["study"] == "program"
    assert ({r["key"]: r["cycles"] for r in alone["rows"]}
            == {r["key"]: r["cycles"] for r in shared["rows"]})
    assert len(alone["rows"]) == 4 and len(alone["sensitivity"]) == 2


def test_a_grid_of_which_nothing_can_run_is_refused_without_building_it():
    values = [64.0 * (i + 1) for i in range(1000)]
    spec = SweepSpec(operators=["relu_grad"], chips=["ft78ne"], lengths=[64],
                     dtypes=["fp16"], chip_sets={"clock_mhz": values,
                                                 "vector.lane_width_bits": values})
    with pytest.raises(ArgumentError, match="nothing to run: FT78NE does not support fp16"):
        plan(spec)  # a million variants built one by one would not end in the test's time
