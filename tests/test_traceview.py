"""Trace inspection: summary figures against the RunResult, plots, comparisons, the CLI."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dspsim
from dspsim.placement import place_operands
from dspsim.sim.chip.load import load_config, packaged_chips
from dspsim.sim.errors import ArgumentError
from dspsim.traces.compare import compare
from dspsim.traces.plot import _label, chart_rows, legend_entries, plot_trace
from dspsim.traces.view import gaps, intersection, merge, read_trace, summarize

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def traced_run(tmp_path, name="fp_relu_grad_s", chip="ft78ne", length=2**16, core_mask=0xf,
               fidelity="fast"):
    chip = dspsim.Chip(chip)
    cname = chip.resolve(name)
    addresses = place_operands(chip.config, cname, length)
    rng = np.random.default_rng(1)
    for operand in cname.operator.inputs:
        chip.write(addresses[operand], rng.standard_normal(length).astype(np.float32))
    mask = (core_mask,) if name.endswith("_s") else ()
    result = chip.call(name, addresses["src0"], addresses["src1"], addresses["dst"], length,
                       *mask, fidelity=fidelity)
    path = result.write_trace(tmp_path / f"{name}-{chip.name}-{length}-{core_mask}-{fidelity}.json")
    return result, path


# ----------------------------------------------------------------------------- intervals
def test_interval_helpers():
    assert merge([(5, 7), (0, 2), (1, 3), (7, 8)]) == [(0, 3), (5, 8)]
    assert intersection([(0, 3), (5, 8)], [(2, 6)]) == 2
    assert gaps([(2, 3), (5, 6)], 0, 10) == [2, 2, 4]
    assert gaps([], 0, 4) == [4]


# ----------------------------------------------------------------------------- summary
@pytest.mark.parametrize("chip, length, mask, fidelity, bound", [
    ("ft78ne", 2**18, 0xf, "fast", "DDR"),          # several tiles per core, DDR-bound
    ("ft78ne", 2**14, 0x1, "fast", "DDR"),   # one core reaches DDR through the EDMA3 pool
    ("mt7004", 2**17, 0x3, "fast", "DDR"),
    ("mt7004", 2**15, 0x3, "detailed", "DDR"),      # bursts and iterations simulated
])
def test_summary_figures_equal_the_result(tmp_path, chip, length, mask, fidelity, bound):
    result, path = traced_run(tmp_path, chip=chip, length=length, core_mask=mask,
                              fidelity=fidelity)
    summary = summarize(read_trace(path))
    assert summary.cycles == result.cycles
    assert summary.bound == result.bound == bound
    assert summary.roofline_terms == pytest.approx(result.roofline_terms, rel=1e-9)
    config = load_config(chip)
    assert summary.ddr_peak_gbps == config.ddr.peak_bandwidth_gbps
    assert summary.ddr_achievable_gbps == pytest.approx(config.ddr.bandwidth_gbps)
    by_core = {c.core: c for c in summary.cores}
    assert sorted(by_core) == list(result.cores)
    for core in result.per_core:
        mine = by_core[core.core]
        assert mine.tiles == core.tiles
        # a trace keeps hundredths of a cycle: each slice end within 0.005 of the model's
        assert mine.finish == pytest.approx(core.finish_cycle, abs=0.005)
        for engine, cycles in core.busy_cycles.items():
            assert mine.busy.get(engine, 0.0) == pytest.approx(cycles, abs=0.01 * core.tiles
                                                               * 4 + 0.01)
        assert mine.overlap <= min(mine.busy["vector"], mine.active)
    assert summary.ddr_bytes == result.bytes_read["ddr"] + result.bytes_written["ddr"]
    # the counter's timestamps are whole cycles, so its mean agrees to a cycle or so
    assert summary.ddr_mean_gbps == pytest.approx(result.achieved_gbps, rel=1e-3)
    mean_of_slices = sum(summary.ddr_timeline) / len(summary.ddr_timeline)
    assert mean_of_slices == pytest.approx(summary.ddr_mean_gbps, rel=1e-9)
    latest = max(c.finish_cycle for c in result.per_core)
    assert by_core[summary.critical_core].finish == pytest.approx(latest)


def test_pipelined_core_overlaps_dma_with_compute_and_shows_vector_gaps(tmp_path):
    result, path = traced_run(tmp_path, length=2**18, core_mask=0x1)
    summary = summarize(read_trace(path))
    (core,) = summary.cores
    assert core.tiles == result.per_core[0].tiles > 2
    # double buffering: every tile but the first and last computes while the next loads
    vector = [s for s in result.timing.slices if s.engine == "vector"]
    middle = sum(s.end - s.start for s in vector[1:-1])
    assert middle <= core.overlap <= core.busy["vector"]
    assert len(core.vector_gaps) == core.tiles - 1  # the vector unit waits between tiles


def test_private_storage_trace_is_bound_by_the_vector_unit(tmp_path):
    result, path = traced_run(tmp_path, name="fp_relu_grad_p", length=4096)
    summary = summarize(read_trace(path))
    assert summary.bound == result.bound == "vector unit"
    assert summary.cycles == result.cycles and summary.ddr_bytes == 0


def test_bad_files_give_clear_errors(tmp_path):
    with pytest.raises(ArgumentError, match="cannot read trace"):
        read_trace(tmp_path / "missing.json")
    (tmp_path / "plain.json").write_text(json.dumps({"traceEvents": []}))
    with pytest.raises(ArgumentError, match="no dspsim metadata"):
        read_trace(tmp_path / "plain.json")
    _, path = traced_run(tmp_path, length=4096)
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    del data["metadata"]["roofline_terms"]
    (tmp_path / "old.json").write_text(json.dumps(data))
    with pytest.raises(ArgumentError, match="lacks roofline_terms.*write the trace again"):
        read_trace(tmp_path / "old.json")


def test_a_trace_of_a_chip_from_any_yaml_file_summarises_on_its_own(tmp_path):
    text = Path(packaged_chips()["ft78ne"]).read_text(encoding="utf-8")
    chip_file = tmp_path / "wide.yaml"
    chip_file.write_text(text.replace("name: FT78NE", "name: FT78NE-fast-ddr")
                         .replace("peak_bandwidth_gbps: 10.67", "peak_bandwidth_gbps: 25.6"))
    chip = dspsim.Chip(str(chip_file))
    dy, x = np.ones(2**16, np.float32), np.ones(2**16, np.float32)
    _, result = dspsim.simulate("fp_relu_grad_s", dy, x, chip=chip)
    result.write_trace(tmp_path / "wide.json")
    summary = summarize(read_trace(tmp_path / "wide.json"))
    assert summary.ddr_peak_gbps == 25.6
    assert summary.bound == result.bound
    assert summary.roofline_terms == pytest.approx(result.roofline_terms)


# ----------------------------------------------------------------------------- plot, compare
def test_plot_is_a_real_png(tmp_path):
    _, path = traced_run(tmp_path, length=2**18, core_mask=0xff)
    out = plot_trace(read_trace(path), str(tmp_path / "gantt.png"), 10.67, 8.536, "DDR")
    data = Path(out).read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 20_000


def test_plot_rows_and_legend_hold_only_what_the_trace_has(tmp_path):
    _, path = traced_run(tmp_path, name="fp_relu_grad_p", length=4096)
    rows = chart_rows(read_trace(path))  # a private call: no launch, no DMA, one core
    assert [(r.cores, r.thread) for r in rows] == [([0], "vector")]
    assert [label for label, _ in legend_entries(rows)] == ["vector"]
    _, path = traced_run(tmp_path, length=4096, core_mask=0x3)
    rows = chart_rows(read_trace(path))
    assert [r.thread for r in rows[:1]] == ["call"] and all(r.bars for r in rows)
    assert [label for label, _ in legend_entries(rows)] == ["dma-in", "vector", "dma-out",
                                                             "call"]


def test_collapse_draws_cores_doing_the_same_work_once(tmp_path):
    _, path = traced_run(tmp_path, chip="mt7004", length=2**20, core_mask=0xf)
    trace = read_trace(path)
    full, collapsed = chart_rows(trace), chart_rows(trace, collapse=True)
    assert len(full) == 1 + 4 * len(collapsed[1:])
    assert {tuple(r.cores) for r in collapsed[1:]} == {(0, 1, 2, 3)}
    assert "cores 0-3 · vector" in [_label(r) for r in collapsed]
    # cores that finish at different times are kept apart
    _, staggered = traced_run(tmp_path, length=2**16, core_mask=0xff)
    rows = chart_rows(read_trace(staggered), collapse=True)
    assert len({tuple(r.cores) for r in rows[1:]}) > 1
    out = plot_trace(trace, str(tmp_path / "c.png"), 25.6, 20.48, "DDR", collapse=True)
    assert Path(out).read_bytes()[:8] == PNG_MAGIC


def test_compare_reports_total_core_and_engine_changes(tmp_path):
    four, path_a = traced_run(tmp_path, core_mask=0xf)
    eight, path_b = traced_run(tmp_path, core_mask=0xff)
    diff = compare(summarize(read_trace(path_a)), summarize(read_trace(path_b)))
    assert diff.total_cycles == (four.cycles, eight.cycles)
    assert diff.metadata == {"core_mask": (0xf, 0xff)}
    for engine, (a, b) in diff.engines.items():
        assert a == pytest.approx(sum(c.busy_cycles[engine] for c in four.per_core))
        assert b == pytest.approx(sum(c.busy_cycles[engine] for c in eight.per_core))
    assert sorted(diff.cores) == list(range(8))
    assert diff.cores[7]["finish"][0] is None and diff.cores[7]["finish"][1] > 0
    assert diff.cores[0]["vector"][1] < diff.cores[0]["vector"][0]  # half the work per core


# ----------------------------------------------------------------------------- CLI
def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "dspsim", *args], capture_output=True,
                          text=True)


def test_cli_summary_plot_and_compare(tmp_path):
    four, path_a = traced_run(tmp_path, core_mask=0xf)
    eight, path_b = traced_run(tmp_path, core_mask=0xff)

    text = run_cli("trace", "summary", path_a)
    assert text.returncode == 0, text.stderr
    assert f"{four.cycles:,} cycles" in text.stdout and "bounded by DDR" in text.stdout
    assert "DDR over time" in text.stdout

    as_json = run_cli("trace", "summary", path_a, "--json")
    data = json.loads(as_json.stdout)
    assert data["bound"] == four.bound and len(data["cores"]) == 4
    assert data["cores"][0]["busy"]["dma-in"] == pytest.approx(
        four.per_core[0].busy_cycles["dma-in"])

    png = tmp_path / "gantt.png"
    plotted = run_cli("trace", "plot", path_b, "-o", str(png))
    assert plotted.returncode == 0, plotted.stderr
    assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 20_000

    diff = run_cli("trace", "compare", path_a, path_b)
    assert diff.returncode == 0, diff.stderr
    assert f"total: {four.cycles:,} → {eight.cycles:,} cycles" in diff.stdout
    assert "core_mask: 15 → 255" in diff.stdout and "per engine" in diff.stdout

    bad = run_cli("trace", "summary", str(tmp_path / "nope.json"))
    assert bad.returncode == 2 and "cannot read trace" in bad.stderr


def test_summary_and_compare_fit_80_columns_without_cutting_a_number(tmp_path):
    from terminal import dspsim_in_terminal
    _, path = traced_run(tmp_path, length=2**16, core_mask=0xff)
    data = json.loads(run_cli("trace", "summary", path, "--json").stdout)
    status, text = dspsim_in_terminal("trace", "summary", path, columns=80)
    assert status == 0 and "…" not in text
    assert all(len(line) <= 80 for line in text.splitlines())
    for core in data["cores"]:
        for cycles in core["busy"].values():
            assert f"{cycles:,.0f}" in text
    status, text = dspsim_in_terminal("trace", "compare", path, path, columns=80)
    assert status == 0 and "…" not in text
