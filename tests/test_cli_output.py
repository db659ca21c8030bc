"""What the commands print: fitted to 80 and 160 columns, plain into a pipe, and as JSON.

Every number of a run and every operator name must appear whole, whatever the width.
"""
import json
import os
import resource  # noqa: F401 - os.wait4 returns its struct
import subprocess
import sys

import pytest
import yaml
from terminal import appears_whole, dspsim_cli, dspsim_in_terminal

import dspsim
from dspsim import kernels
from dspsim.result import RunResult
from dspsim.sim.chip.load import packaged_chips
from dspsim.traces.formats import load_trace, validate_trace

RUN = ("run", "fp_relu_grad_s", "--chip", "ft78ne", "--length", "2^20", "--core-mask", "0xff",
       "--no-trace")


@pytest.fixture(scope="module")
def run_json():
    proc = dspsim_cli(*RUN, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def run_numbers(result: dict) -> list[str]:
    """Every number the report prints about a run, formatted as it prints them."""
    numbers = [f"{result['cycles']:,}", f"{result['roofline_cycles']:,}",
               f"{result['ddr_bytes']:,}", f"{result['length']:,}",
               f"{result['tile_elements']:,}", f"{result['microseconds']:,.3f}"]
    if result.get("tiling"):
        numbers += [f"{result['tiling']['tile_bytes']:,}",
                    f"{result['tiling']['tiles_per_core']:,}"]
    for core in result["per_core"]:
        numbers += [f"{core['elements']:,}", f"{core['start']:,}", f"{core['stop']:,}",
                    f"{core['finish_cycle']:,.0f}"]
        numbers += [f"{cycles:,.0f}" for cycles in core["busy_cycles"].values()]
    return numbers


def report_part(text: str) -> str:
    """The report, from its headline on (a progress bar on stderr may come before it)."""
    return text[text.index("fp_relu_grad_s on FT78NE"):]


@pytest.mark.parametrize("columns", [80, 160])
def test_run_report_fits_the_terminal_and_cuts_no_number(run_json, columns):
    status, text = dspsim_in_terminal(*RUN, columns=columns)
    assert status == 0, text
    report = report_part(text)
    assert "…" not in report
    assert max(len(line) for line in report.splitlines()) <= columns
    for number in run_numbers(run_json["result"]):
        assert appears_whole(number, report), (number, columns)


def test_run_report_piped_is_plain_and_whole(run_json):
    proc = dspsim_cli(*RUN)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b[" not in proc.stdout and "…" not in proc.stdout and "━" not in proc.stdout
    for number in run_numbers(run_json["result"]):
        assert appears_whole(number, proc.stdout), number
    header = next(line for line in proc.stdout.splitlines() if line.startswith("core"))
    assert "dma-in busy" in header and "finish" in header  # one table, not split
    assert proc.stderr == ""  # no progress bar into a pipe


@pytest.mark.parametrize("columns", [80, 160, None])
def test_ops_shows_every_operator_and_argument_whole(columns):
    if columns is None:
        proc = dspsim_cli("ops")
        status, text = proc.returncode, proc.stdout
    else:
        status, text = dspsim_in_terminal("ops", columns=columns)
        assert max(len(line) for line in text.splitlines()) <= columns
    assert status == 0
    assert "…" not in text
    words = set(text.replace(",", " ").split())
    for op in kernels.OPERATORS.values():  # the listing names each; `ops NAME` says all
        assert op.stem in words, op.stem
    detail = dspsim_cli("ops", "sigmoidcrossentropywithlogitsgrad").stdout
    words = set(detail.replace(",", " ").split())
    for arg in kernels.OPERATORS["sigmoidcrossentropywithlogitsgrad"].args:
        assert arg in words, arg


@pytest.mark.parametrize("columns", [80, 160, None])
def test_chips_fit(columns):
    if columns is None:
        proc = dspsim_cli("chips")
        status, text = proc.returncode, proc.stdout
    else:
        status, text = dspsim_in_terminal("chips", columns=columns)
        assert max(len(line) for line in text.splitlines()) <= columns
    assert status == 0 and "…" not in text
    for name in ("FT78NE", "MT7004", "ft78ne", "mt7004", "10.67", "25.6"):
        assert name in text


# --------------------------------------------------------------------------- JSON
def test_run_json_round_trips_and_is_complete(run_json):
    result = run_json["result"]
    for key in ("cycles", "per_core", "roofline_terms", "bound", "tiles", "tile_elements",
                "warnings", "metadata", "achieved_gbps", "share_of_ddr_peak", "seconds"):
        assert key in result, key
    assert run_json["numerics"]["ok"] is True and run_json["seed"] == 0
    assert run_json["command"][:3] == ["dspsim", "run", "fp_relu_grad_s"]
    again = RunResult.from_dict(json.loads(json.dumps(result))).to_dict()
    assert again == result


def test_chips_and_ops_json():
    chips = json.loads(dspsim_cli("chips", "--json").stdout)
    assert {c["name"] for c in chips} == {"FT78NE", "MT7004", "MT7016"}
    assert all(c["cores"] > 0 and c["ddr_peak_gbps"] > 0 for c in chips)
    ops = json.loads(dspsim_cli("ops", "--json").stdout)
    assert {o["stem"] for o in ops} == set(kernels.OPERATORS)
    relu = next(o for o in ops if o["stem"] == "relu_grad")
    assert relu["arguments"] == ["src0", "src1", "dst", "length"]
    assert "hp_relu_grad_s" in relu["chips"]["MT7004"]["names"]
    assert relu["chips"]["FT78NE"]["cycles_per_iteration"] > 0


# --------------------------------------------------------------------------- saved runs
def test_save_keeps_result_trace_and_the_exact_chip(tmp_path):
    folder = tmp_path / "runs" / "first"
    proc = dspsim_cli("run", "hp_gelu_grad_s", "--chip", "mt7004", "--length", "5000",
                      "--seed", "7", "--save", folder, "--no-trace")
    assert proc.returncode == 0, proc.stderr
    assert sorted(os.listdir(folder)) == ["chip.yaml", "result.json", "trace.pftrace"]
    saved = json.loads((folder / "result.json").read_text())
    with open(packaged_chips()["mt7004"], encoding="utf-8") as handle:
        assert (folder / "chip.yaml").read_text() == handle.read()
    assert validate_trace(load_trace(folder / "trace.pftrace")) == []
    assert saved["seed"] == 7 and saved["numerics"]["ok"]
    # the saved chip file reproduces the run
    again = dspsim_cli("run", "hp_gelu_grad_s", "--chip", folder / "chip.yaml", "--length",
                       "5000", "--seed", "7", "--json", "--no-trace")
    redo = json.loads(again.stdout)
    assert redo["result"]["cycles"] == saved["result"]["cycles"]
    assert redo["numerics"] == saved["numerics"]


def test_save_refuses_a_folder_of_other_files(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    proc = dspsim_cli(*RUN, "--save", tmp_path)
    assert proc.returncode == 2 and "holds other files" in proc.stderr
    assert os.listdir(tmp_path) == ["notes.txt"]


@pytest.mark.parametrize("args", [RUN, ("run", "fp_relu_grad_s", "--length", "2^14", "--no-trace",
                                         "--json"), ("ops",)])
def test_a_reader_that_left_ends_the_command_quietly(args):
    """`dspsim run ... | head`: stdout closed before the first line is written (rich tables,
    JSON, listings) ends the command with status 0 and nothing on stderr."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the command prints anything
    with open(write_end, "wb") as stdout:
        done = subprocess.run([sys.executable, "-m", "dspsim", *args], stdout=stdout,
                              stderr=subprocess.PIPE, text=True, timeout=300)
    assert (done.returncode, done.stderr) == (0, "")


def test_version_and_module_entry_points():
    proc = dspsim_cli("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"dspsim {dspsim.__version__}"
    cli = subprocess.run([sys.executable, "-m", "dspsim.cli", "--version"], capture_output=True,
                         text=True)
    assert cli.stdout == proc.stdout


def test_run_at_2_to_the_24_needs_little_more_memory_than_its_operands(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "dspsim", "run", "fp_relu_grad_s",
                             "--length", "2^24", "--no-trace"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0, proc.stderr.read()
    peak = usage.ru_maxrss * 1024  # kilobytes on Linux
    operands = 3 * (1 << 24) * 4
    assert peak < operands + (128 << 20), f"peak {peak >> 20} MiB"


def test_a_chip_name_cannot_lead_the_default_trace_out_of_traces(tmp_path):
    with open(packaged_chips()["ft78ne"], encoding="utf-8") as handle:
        raw = yaml.safe_load(handle)
    raw["name"] = "x/../../../elsewhere"
    chip_file = tmp_path / "odd.yaml"
    chip_file.write_text(yaml.safe_dump(raw))
    work = tmp_path / "work"
    work.mkdir()
    proc = dspsim_cli("run", "fp_relu_grad_s", "--chip", chip_file, "--length", "1000",
                      cwd=work)
    assert proc.returncode == 0, proc.stderr
    written = [os.path.join(d, f) for d, _, files in os.walk(tmp_path) for f in files]
    traces = [p for p in written if p.endswith(".pftrace")]
    assert len(traces) == 1 and os.path.dirname(traces[0]) == str(work / "traces")
    assert sorted(os.listdir(tmp_path)) == ["odd.yaml", "work"]


@pytest.mark.parametrize("columns", [80, 160, None])
def test_sweep_table_shows_every_name_header_and_number_whole(tmp_path, columns):
    args = ("sweep", "--ops", "relu_grad,sigmoidcrossentropywithlogitsgrad", "--chips",
            "ft78ne", "--core-masks", "0x1,0xff", "--lengths", "4096", "--timing-only",
            "--no-plots", "--out", tmp_path / "s")
    if columns is None:
        proc = dspsim_cli(*args)
        status, text = proc.returncode, proc.stdout
        assert "\x1b[" not in text and "━" not in text
        assert "━" not in proc.stderr and "\r" not in proc.stderr  # no progress bar
        assert proc.stderr.startswith("planned: 4 runs")  # the count, before any run
    else:
        status, text = dspsim_in_terminal(*args, columns=columns)
        # the transient progress bar's redraws run together once carriage returns go
        text = "\n".join(line for line in text.splitlines() if "━━━━━" not in line
                         or "┏" in line or "┡" in line)
        assert max(len(line) for line in text.splitlines()) <= columns
    assert status == 0, text
    assert "…" not in text
    rows = json.loads(dspsim_cli(*args, "--json").stdout)["rows"]
    words = set(text.replace("┃", " ").replace("│", " ").split())
    for header in ("ceiling", "peak", "efficiency", "numerics"):
        assert header in words, header
    for row in rows:
        assert row["operator"] in words
        assert f"{row['cycles']:,}" in words
