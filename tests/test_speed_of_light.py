"""The speed of light: every resource's busy share and share of its peak, the bound and
the advice; the same for a call as for its trace read back; CSV with stable columns."""
from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from terminal import dspsim_cli, dspsim_in_terminal

import dspsim
from dspsim.traces.speed import speed_of_light
from dspsim.traces.view import read_trace, summarize

N = 1 << 18


def _call(chip_name: str, op: str, mask: int, n: int = N):
    chip = dspsim.Chip(chip_name)
    for address in (0x80000000, 0x81000000):
        chip.zero(address, n, "fp32")
    return chip, chip.call(op, 0x80000000, 0x81000000, 0x82000000, n, mask, numerics=False)


@pytest.mark.parametrize("suffix", [".pftrace", ".json"])
@pytest.mark.parametrize("chip_name,op,mask", [("ft78ne", "fp_gelu_grad_s", 0x3),
                                                ("mt7004", "fp_relu_grad_s", 0xF)])
def test_the_trace_read_back_gives_the_same_table(tmp_path, suffix, chip_name, op, mask):
    _, result = _call(chip_name, op, mask)
    path = result.write_trace(tmp_path / f"t{suffix}")
    direct = speed_of_light(result.trace_model()).to_dict()
    from_file = summarize(read_trace(path)).speed_of_light.to_dict()
    assert direct["bound"] == from_file["bound"] and direct["advice"] == from_file["advice"]
    for a, b in zip(direct["resources"], from_file["resources"], strict=True):
        assert a["resource"] == b["resource"] and a["detail"] == b["detail"]
        assert a["busy_share"] == pytest.approx(b["busy_share"], abs=1e-9)
        assert (a["of_peak"] is None) == (b["of_peak"] is None)
        if a["of_peak"] is not None:
            assert a["of_peak"] == pytest.approx(b["of_peak"], abs=1e-9)


def test_link_use_adds_up_to_the_bytes_moved():
    chip, result = _call("ft78ne", "fp_relu_grad_s", 0xFF)
    sol = speed_of_light(result.trace_model())
    ddr = sol.row("DDR")
    peak_bytes_per_cycle = chip.config.bytes_per_cycle(chip.config.ddr.peak_bandwidth_gbps)
    assert ddr.of_peak * peak_bytes_per_cycle * sol.cycles == pytest.approx(result.ddr_bytes)
    assert 0 < ddr.busy_share <= 1 and ddr.of_peak <= 1
    for row in sol.rows:
        assert 0 <= row.busy_share <= 1 + 1e-9
        assert row.of_peak is None or 0 <= row.of_peak <= row.busy_share + 1e-9
    # every controller group of the shared pool is listed, idle ones too
    assert [r.resource for r in sol.rows if r.kind == "dma"] == [
        "DMA edma3cc0.tc", "DMA edma3cc1.tc", "DMA edma3cc2.tc"]


def test_ddr_bound_advice_says_cores_cannot_help():
    _, result = _call("ft78ne", "fp_relu_grad_s", 0xFF)
    sol = speed_of_light(result.trace_model())
    assert sol.bound == "DDR"
    assert sol.advice.startswith("DDR-bound at ") and "more cores cannot help" in sol.advice
    assert "1 → 8 cores: 1.00×" in sol.advice  # relu_grad is DDR-bound on one core already


def test_vector_bound_advice_names_the_dearest_expansion():
    chip, result = _call("ft78ne", "fp_gelu_grad_s", 0x1)
    sol = speed_of_light(result.trace_model())
    assert sol.bound == "vector unit"
    # exp as the chip file expands it, on the alu (two units): counted from the config
    vec = chip.config.vector
    alu = sum(uses * vec.instructions[i].occupancy_cycles for i, uses in vec.issued["exp"].items()
              if vec.instructions[i].unit == "alu") / vec.units["alu"]
    assert alu == 13.5
    assert f"vector alu-bound: exp expands to {alu:g} cycles/vector" in sol.advice
    assert sol.row("vector alu").of_peak > 0.95


def test_program_table_and_csv(tmp_path):
    done = dspsim_cli("program", "examples/mlp_backward_split.yaml", "--timing-only",
                      "--csv", cwd=str(Path(__file__).resolve().parent.parent))
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    assert len(rows) == 6
    assert list(rows[0])[:10] == ["call", "stream", "operator", "cores", "core_mask",
                                  "start_cycle", "end_cycle", "cycles", "waited_for", "bound"]
    for row in rows:
        seconds = float(row["cycles"]) / 1e9  # FT78NE: 1000 MHz
        assert float(row["ddr read GB/s"]) == pytest.approx(
            int(row["ddr read bytes"]) / seconds / 1e9, rel=1e-3)


def test_run_csv_columns_do_not_depend_on_the_mask():
    headers = []
    for mask in ("0x1", "0x3", "0xff"):
        done = dspsim_cli("run", "fp_relu_grad_s", "--length", "4096", "--core-mask", mask,
                          "--no-trace", "--csv")
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert len(lines) == 2
        headers.append(lines[0])
    assert headers[0] == headers[1] == headers[2]
    assert "L2 port core 7 busy" in headers[0] and headers[0].endswith(",bound,advice")


def test_run_opens_with_the_table_and_fits_80_columns():
    status, shown = dspsim_in_terminal("run", "fp_gelu_grad_s", "--length", "2^16",
                                       "--no-trace", columns=80)
    assert status == 0
    lines = shown[shown.index("fp_gelu_grad_s on FT78NE"):].splitlines()  # after the progress
    assert max(len(line) for line in lines) <= 80
    first_table = next(i for i, line in enumerate(lines) if "speed of light" in line)
    assert first_table <= 3  # after the headline, before anything else
    assert any(line.startswith("bound: ") for line in lines)
