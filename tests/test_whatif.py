"""What-if sweeps: chip parameters as axes, skipped combinations, resuming, elasticities."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from dspsim.sim.errors import ArgumentError, ConfigError
from dspsim.sweep import SweepSpec, elasticities, plan, run_sweep, sweep, whatif_points
from dspsim.sweep.executors import SerialExecutor
from dspsim.sweep.store import RowStore

LANES = "vector.lane_width_bits"
DDR = "memory.ddr.peak_bandwidth_gbps"
SETUP = "dma.setup_cycles"


def spec(**changes) -> SweepSpec:
    fields = dict(operators=["relu_grad"], chips=["mt7004"], lengths=[2**12],
                  core_counts=[1], numerics=False)
    fields.update(changes)
    return SweepSpec(**fields)


def run_into(folder, the_spec):
    with RowStore(str(folder)) as store:
        outcome = run_sweep(plan(the_spec), store, SerialExecutor())
        return outcome, [store.rows[k] for k in outcome.keys]


def test_several_sets_make_a_grid_and_rows_record_their_overrides(tmp_path):
    outcome, rows = run_into(tmp_path, spec(chip_sets={LANES: [256, 512], DDR: [12.8, 25.6]}))
    # MT7004 has 512-bit lanes and 25.6 GB/s: the grid is the chip as given and 3 variants
    assert outcome.ran == 4 and len(rows) == 4
    overrides = sorted(r["overrides"] for r in rows)
    assert overrides == sorted(["", f"{LANES}=256", f"{DDR}=12.8", f"{LANES}=256,{DDR}=12.8"])
    assert len({r["config_digest"] for r in rows}) == 4
    assert {r["base_digest"] for r in rows} == {next(r["config_digest"] for r in rows
                                                     if not r["overrides"])}
    halved = next(r for r in rows if r["overrides"] == f"{DDR}=12.8")
    assert halved["given_values"] == f"{DDR}=25.6" and halved["ddr_peak_gbps"] == 12.8


def test_one_at_a_time_points_are_added_around_the_chip_as_given(tmp_path):
    # neither list holds the chip's own value: the grid alone has no one-key change
    _, rows = run_into(tmp_path, spec(chip_sets={LANES: [128, 256], DDR: [6.4, 12.8]}))
    assert len(rows) == 1 + 4 + 2 + 2
    keys = {(p.key, p.value) for p in whatif_points(rows)}
    assert {(LANES, 128.0), (LANES, 512.0), (DDR, 6.4), (DDR, 25.6)} <= keys


def test_invalid_combinations_are_skipped_with_the_validation_message(tmp_path):
    outcome, rows = run_into(tmp_path, spec(chip_sets={LANES: [256, 100], "cores": [0, 2]}))
    notes = "\n".join(outcome.notes)
    assert f"{LANES}=100" in notes and "not a multiple of" in notes
    assert "cores=0" in notes and "skipped, not a valid chip" in notes
    assert {r["overrides"] for r in rows} == {"", f"{LANES}=256", "cores=2",
                                              f"{LANES}=256,cores=2"}


@pytest.mark.parametrize("sets, message", [
    ({"vector.lane_width": [256]}, "no 'lane_width' under 'vector'"),
    ({"name": [1]}, "not a number"),
    ({"cores..x": [1]}, "not a dotted path"),
])
def test_a_key_that_is_not_a_number_of_the_chip_stops_the_sweep(sets, message):
    with pytest.raises((ArgumentError, ConfigError), match=message):
        plan(spec(chip_sets=sets))


def test_resuming_a_what_if_sweep_runs_only_new_combinations(tmp_path):
    run_into(tmp_path, spec(chip_sets={SETUP: [100, 300]}))
    again, _ = run_into(tmp_path, spec(chip_sets={SETUP: [100, 300]}))
    assert (again.ran, again.already_done) == (0, 3)
    wider, rows = run_into(tmp_path, spec(chip_sets={SETUP: [100, 300, 600]}))
    assert (wider.ran, wider.already_done) == (1, 3) and len(rows) == 4


def _cycles(rows, overrides):
    return next(r["cycles"] for r in rows if r["overrides"] == overrides)


def test_elasticities_are_the_finite_differences_around_the_chip_as_given(tmp_path):
    sets = {DDR: [12.8, 25.6, 51.2], SETUP: [75, 150]}
    rows = sweep(["relu_grad", "gelu_grad"], ["mt7004"], lengths=[2**14], cores=[1, 4],
                 sets=sets, timing_only=True, out=str(tmp_path))
    found = {(e.operator, e.key): e for e in elasticities(rows)}
    assert set(found) == {(op, key) for op in ("fp_relu_grad_s", "fp_gelu_grad_s")
                          for key in (DDR, SETUP)}
    for operator in ("fp_relu_grad_s", "fp_gelu_grad_s"):
        mine = [r for r in rows if r["operator"] == operator and r["cores"] == 4]
        c0 = _cycles(mine, "")
        # central difference over 12.8 and 51.2 around the chip's own 25.6
        low, high = _cycles(mine, f"{DDR}=12.8"), _cycles(mine, f"{DDR}=51.2")
        by_hand = ((high - low) / c0) / ((51.2 - 12.8) / 25.6)
        ddr = found[(operator, DDR)]
        assert ddr.elasticity == pytest.approx(by_hand, rel=1e-12)
        assert (ddr.low, ddr.high, ddr.given, ddr.given_cycles) == (12.8, 51.2, 25.6, c0)
        # only a lower setup value was swept: the one-sided difference
        setup = found[(operator, SETUP)]
        by_hand = ((c0 - _cycles(mine, f"{SETUP}=75")) / c0) / ((150 - 75) / 150)
        assert setup.elasticity == pytest.approx(by_hand, rel=1e-12)
        assert (setup.low, setup.high) == (75, None)
    # a DDR-bound call follows DDR bandwidth almost one for one, faster with more of it
    assert -1.2 < found[("fp_relu_grad_s", DDR)].elasticity < -0.5
    speedups = {p.value: p.speedup for p in whatif_points(rows)
                if p.key == DDR and p.operator == "fp_relu_grad_s"}
    assert speedups[25.6] == 1.0 and speedups[51.2] > 1.0 > speedups[12.8]


def test_core_count_as_an_axis_compares_every_core_of_each_variant(tmp_path):
    rows = sweep("relu_grad", "mt7004", lengths=2**14, sets={"cores": [2, 8]},
                 timing_only=True)
    widest = {p.value: p.cores for p in whatif_points(rows)}
    assert widest == {2.0: 2, 4.0: 4, 8.0: 8}
    assert max(r["core_mask"] for r in rows) == 0xff
    assert rows.folder is None and isinstance(rows.notes, list)


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "dspsim", *args], capture_output=True,
                          text=True)


def test_cli_what_if_sweep_end_to_end(tmp_path):
    out = str(tmp_path / "whatif")
    args = ["sweep", "--ops", "relu_grad,gelu_grad", "--chips", "ft78ne", "--lengths", "2^12",
            "--cores", "1,4", "--timing-only", "--set", f"{DDR}=5.335,21.34",
            "--set", f"{LANES}=128,256,100", "--out", out]
    text = run_cli(*args)
    assert text.returncode == 0, text.stderr
    assert "sensitivity" in text.stdout and "peak_bandwidth_gbps" in text.stdout
    assert "skipped, not a valid chip" in text.stdout and f"{LANES}=100" in text.stdout
    for name in ("whatif-ft78ne-memory-ddr-peak_bandwidth_gbps.png",
                 "whatif-ft78ne-vector-lane_width_bits.png", "speedup-ft78ne.png"):
        with open(os.path.join(out, name), "rb") as handle:
            assert handle.read(8) == b"\x89PNG\r\n\x1a\n", name
    with open(os.path.join(out, "sensitivity.csv"), encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    assert lines[0].startswith("chip,base_digest,operator") and len(lines) == 1 + 2 * 2
    again = run_cli(*args, "--json", "--no-plots")
    assert again.returncode == 0, again.stderr
    document = json.loads(again.stdout)
    assert document["ran"] == 0 and document["already_done"] == document["planned"]
    keys = {(s["operator"], s["key"]) for s in document["sensitivity"]}
    assert ("fp_relu_grad_s", DDR) in keys and ("fp_gelu_grad_s", LANES) in keys
    assert all("overrides" in row and "config_digest" in row for row in document["rows"])


@pytest.mark.parametrize("bad, message", [
    (["--set", "vector.lane_width_bits=128,abc"], "'abc' is not a finite number"),
    (["--set", "cores"], "expected KEY=V1,V2"),
    (["--set", "cores=2", "--set", "cores=4"], "given twice"),
    (["--set", "vector.nope=1"], "no 'nope' under 'vector'"),
])
def test_cli_refuses_bad_sets_in_one_line(tmp_path, bad, message):
    proc = run_cli("sweep", "--ops", "relu_grad", "--chips", "ft78ne", "--lengths", "64",
                   "--out", str(tmp_path / "s"), *bad)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "s").exists()


def test_a_key_only_one_chip_has_leaves_the_other_as_given():
    key = "dma.controllers.0.count"  # FT78NE describes an EDMA3 pool, MT7004 per-core engines
    the_plan = plan(spec(chips=["ft78ne", "mt7004"], chip_sets={key: [1]}))
    variants = {(r.chip.name, r.chip.overrides) for r in the_plan.runs}
    assert variants == {("FT78NE", ()), ("FT78NE", ((key, 1),)), ("MT7004", ())}
    assert any(n.startswith("MT7004: runs only as given") for n in the_plan.notes)
    with pytest.raises(ConfigError, match="no 'controllers'"):
        plan(spec(chips=["mt7004"], chip_sets={key: [1]}))
