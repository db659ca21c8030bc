"""The rough edges a newcomer meets: what the report says, in which order, in which words."""
from __future__ import annotations

import re

import numpy as np
import pytest
from terminal import dspsim_cli

import dspsim


def test_dspsim_alone_prints_help():
    proc = dspsim_cli()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: dspsim") and "run" in proc.stdout


def test_the_numerics_line_says_which_rule_passed():
    proc = dspsim_cli("run", "fp_gelu_grad_s", "--length", "20000", "--no-trace")
    assert proc.returncode == 0, proc.stderr
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("numerics")]
    assert "passed: " in line and " within 4 ULP" in line
    assert "0 elements outside it" in line


def test_length_zero_header_agrees_with_the_per_core_table_and_warnings_come_first():
    proc = dspsim_cli("run", "fp_relu_grad_s", "--chip", "mt7004", "--length", "0",
                      "--core-mask", "0xff", "--no-trace")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "cores 0, 1, 2, 3 (none has elements at length 0)" in lines[0]
    warning = next(k for k, ln in enumerate(lines) if ln.startswith("warning:"))
    assert "bits above" in lines[warning] and warning < lines.index("per core")


def test_reprs_use_words_and_units():
    result = dspsim.simulate("fp_relu_grad_s", np.ones(8), np.ones(8), core_mask=0x1)[1]
    assert "µs" in repr(result) and " us" not in repr(result)
    assert "1 tile," in repr(result.per_core[0])
    chip = dspsim.Chip("ft78ne")
    chip.write(0x80000000, np.ones(8, np.float32))
    prog = chip.program()
    prog.stream().fp_relu_grad_s(0x80000000, 0x80000000, 0x90000000, 8, 0x1)
    assert repr(prog.run()).startswith("ProgramResult(1 call on 1 stream of FT78NE")


def test_capacity_errors_separate_thousands():
    with pytest.raises(dspsim.CapacityError) as info:
        dspsim.simulate("fp_relu_grad_p", np.ones(1 << 17), np.ones(1 << 17))
    assert "131,072" in str(info.value)


def test_ops_lists_one_line_per_operator_and_one_in_full():
    proc = dspsim_cli("ops")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) < 25 and max(map(len, lines)) < 200
    one = dspsim_cli("ops", "hp_gelu_grad_s")
    assert one.returncode == 0, one.stderr
    assert one.stdout.startswith("gelu_grad: ") and "formula:" in one.stdout
    assert "on MT7004: " in one.stdout and "hp_gelu_grad_s" in one.stdout
    wrong = dspsim_cli("ops", "gelu")
    assert wrong.returncode == 2 and "did you mean gelu_grad" in wrong.stderr


def test_chips_lists_names_that_chip_finds(tmp_path):
    proc = dspsim_cli("chips")
    assert proc.returncode == 0
    header = next(ln for ln in proc.stdout.splitlines() if ln.startswith("chip "))
    assert header.split()[-1] == "--chip"
    for line in proc.stdout.splitlines():
        if line.startswith(("FT78NE", "MT7004")):
            name = line.split()[-1]
            run = dspsim_cli("run", "fp_relu_grad_s", "--length", "8", "--chip", name,
                             "--no-trace", cwd=tmp_path)
            assert run.returncode == 0, run.stderr


def test_errors_name_packaged_chips_without_install_paths():
    from dspsim.sim.chip.load import load_config
    assert load_config("ft78ne").source == "packaged chip ft78ne (ft78ne.yaml)"


def _keys(data, prefix=""):
    keys = set()
    if isinstance(data, dict):
        for key, value in data.items():
            keys |= {prefix + key} | _keys(value, f"{prefix}{key}.")
    return keys


def test_every_call_kind_has_one_json_key_set():
    shared = dspsim.simulate("fp_relu_grad_s", np.ones(4096), np.ones(4096))[1].to_dict()
    private = dspsim.simulate("fp_relu_grad_p", np.ones(256), np.ones(256))[1].to_dict()
    empty = dspsim.simulate("fp_relu_grad_s", np.ones(0), np.ones(0))[1].to_dict()
    assert _keys(shared) == _keys(private) == _keys(empty)
    assert isinstance(shared["tiling"]["candidates"], list)
    assert set(shared["tiling"]["candidates"][0]) == {"tiles_per_core", "cycles"}
    assert private["tiling"]["policy"] is None and private["roofline_terms"]["DDR"] is None
    from dspsim.result import RunResult
    again = RunResult.from_dict(private)
    assert again.tiling is None and None not in again.roofline_terms.values()


def test_saved_result_json_is_what_json_prints(tmp_path):
    proc = dspsim_cli("run", "fp_relu_grad_s", "--length", "64", "--json", "--no-trace",
                      "--save", tmp_path / "kept")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "kept" / "result.json").read_text() == proc.stdout


def test_program_json_carries_version_and_command(tmp_path):
    (tmp_path / "p.yaml").write_text(
        "chip: ft78ne\nbuffers:\n  x: {length: 64, init: {random: {seed: 1}}}\n"
        "  y: {length: 64}\nstreams:\n  a:\n    - call: fp_l_relu_s\n"
        "      args: [x, y, 64, 0.1, 0x1]\n")
    proc = dspsim_cli("program", tmp_path / "p.yaml", "--json")
    assert proc.returncode == 0, proc.stderr
    import json
    data = json.loads(proc.stdout)
    assert data["dspsim"] == dspsim.__version__ and data["command"][:2] == ["dspsim", "program"]


def test_collapse_says_what_it_collapsed(tmp_path):
    even = tmp_path / "even.pftrace"
    # vector-bound on MT7004: its cores do the same work at the same cycles (a DDR-bound
    # call's cores part ways where burst arbitration serves one before another)
    assert dspsim_cli("run", "fp_gelu_grad_s", "--chip", "mt7004", "--length", "2^16",
                      "--trace", even).returncode == 0
    proc = dspsim_cli("trace", "plot", even, "--collapse")
    assert proc.returncode == 0, proc.stderr
    # which cores finish together is the model's figure; the sentence names them
    assert re.search(r"--collapse: drew cores \d+(-\d+|(, \d+)+) once", proc.stdout), \
        proc.stdout
    odd = tmp_path / "odd.pftrace"  # one core alone: nothing to collapse
    assert dspsim_cli("run", "fp_relu_grad_s", "--length", "4096", "--core-mask", "0x1",
                      "--trace", odd).returncode == 0
    proc = dspsim_cli("trace", "plot", odd, "--collapse")
    assert proc.returncode == 0, proc.stderr
    assert "no two cores do the same work" in proc.stdout
