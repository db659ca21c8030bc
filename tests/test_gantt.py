"""Gantt charts never invent idle time: dense rows as busy density, program calls on their
streams' rows in the program's order."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import dspsim
from dspsim.traces.plot import PIXELS, Row, _draw_bars, busy_density, chart_rows, merged, plot_trace
from dspsim.traces.view import read_trace

DDR, MIB = 0x80000000, 1 << 20


def test_merged_is_the_union():
    starts, ends = merged([(0, 10), (5, 10), (20, 1), (21, 4), (30, 0)])
    assert starts.tolist() == [0, 20, 30] and ends.tolist() == [15, 25, 30]


def test_a_row_busy_58_percent_throughout_is_a_band_at_58_percent():
    total, period = 1_000_000.0, 1000.0  # a thousand tiles: each under a pixel
    bars = [(k * period, 0.58 * period) for k in range(int(total / period))]
    share = busy_density(bars, total, PIXELS)
    assert share.min() > 0.5 and share.max() < 0.66  # no pixel column looks idle
    # nothing invented or lost: the shares add up to the busy cycles
    assert share.sum() * total / PIXELS == pytest.approx(0.58 * total)


def test_dense_rows_are_drawn_as_density_and_sparse_ones_as_bars():
    from dspsim.plots import pyplot
    plt = pyplot()
    fig, axes = plt.subplots()
    many = [(k * 10.0, 6.0) for k in range(10_000)]
    few = [(0.0, 40_000.0), (50_000.0, 30_000.0)]
    assert _draw_bars(axes, 0, many, "tab:green", 100_000.0) == 1
    assert _draw_bars(axes, 1, few, "tab:green", 100_000.0) == 0
    # no bar drawn with white edges: they would eat thin bars' busy time
    for collection in axes.collections:
        for edge in np.atleast_2d(collection.get_edgecolor()):
            assert not np.allclose(edge[:3], 1.0)
    plt.close(fig)


def _program(chip):
    n = 8192
    for address in (DDR, DDR + MIB):
        chip.write(address, np.ones(n, np.float32))
    prog = chip.program()
    late, early = prog.stream("zeta"), prog.stream("alpha")  # file order, not alphabetical
    late.fp_relu_grad_s(DDR, DDR + MIB, DDR + 2 * MIB, n, 0x0F)
    late.fp_gelu_grad_s(DDR, DDR + MIB, DDR + 3 * MIB, n, 0x0F)
    early.fp_tanh_grad_s(DDR, DDR + MIB, DDR + 4 * MIB, n, 0xF0)
    return prog.run()


def test_program_calls_sit_on_their_streams_rows_in_program_order(tmp_path):
    result = _program(dspsim.Chip("ft78ne"))
    path = result.write_trace(tmp_path / "p.pftrace")
    trace = read_trace(path)
    rows = chart_rows(trace)
    assert [r.thread for r in rows[:2]] == ["stream zeta", "stream alpha"]
    assert [c[0] for c in rows[0].calls] == ["fp_relu_grad_s", "fp_gelu_grad_s"]
    assert [c[0] for c in rows[1].calls] == ["fp_tanh_grad_s"]
    assert all(isinstance(r, Row) for r in rows)
    written = plot_trace(trace, str(tmp_path / "p.png"))
    assert Path(written).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_dense_call_plots(tmp_path):
    chip = dspsim.Chip("ft78ne")
    n = 1 << 20
    for address in (DDR, DDR + 8 * MIB):
        chip.zero(address, n, "fp32")
    result = chip.call("fp_h_swish_grad_s", DDR, DDR + 8 * MIB, DDR + 16 * MIB, n, 0x1,
                       numerics=False, tile_bytes=1024)
    trace = read_trace(result.write_trace(tmp_path / "d.pftrace"))
    vector = next(r for r in chart_rows(trace) if r.thread == "vector")
    assert len(vector.bars) > PIXELS  # hundreds of tiles per pixel column's worth
    share = busy_density(vector.bars, trace.total_cycles, PIXELS)
    busy = result.per_core[0].busy_cycles["vector"]
    assert share.sum() * trace.total_cycles / PIXELS == pytest.approx(busy, rel=1e-6)
    plot_trace(trace, str(tmp_path / "d.png"))
