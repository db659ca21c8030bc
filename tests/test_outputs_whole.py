"""Outputs never replace an input of the same command, and saved runs are whole."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from terminal import dspsim_cli, one_line_error

import dspsim
from dspsim.sim.chip.load import packaged_chips

TINY_PROGRAM = """
chip: ft78ne
buffers:
  x: {length: 256, init: {random: {seed: 1}}}
  y: {length: 256}
streams:
  a:
    - call: fp_l_relu_s
      args: [x, y, 256, 0.1, 0x1]
"""
RUN = ("run", "fp_relu_grad_s", "--length", "64")


def _chip_copy(tmp_path):
    path = tmp_path / "my.yaml"
    path.write_bytes(Path(packaged_chips()["ft78ne"]).read_bytes())
    return path


# --------------------------------------------------------------------------- inputs
def test_run_refuses_a_trace_over_its_chip_file(tmp_path):
    chip = _chip_copy(tmp_path)
    before = chip.read_bytes()
    one_line_error(dspsim_cli(*RUN, "--chip", chip, "--trace", chip), "an input of this command")
    (tmp_path / "link.pftrace").symlink_to(chip)
    one_line_error(dspsim_cli(*RUN, "--chip", chip, "--trace", tmp_path / "link.pftrace"),
                   "an input of this command")
    os.link(chip, tmp_path / "hard.pftrace")  # the same file under another name
    one_line_error(dspsim_cli(*RUN, "--chip", chip, "--trace", tmp_path / "hard.pftrace"),
                   "an input of this command")
    assert chip.read_bytes() == before


def test_program_refuses_a_trace_over_its_program_file(tmp_path):
    program = tmp_path / "p.yaml"
    program.write_text(TINY_PROGRAM)
    one_line_error(dspsim_cli("program", program, "--trace", program), "an input")
    assert program.read_text() == TINY_PROGRAM


def test_trace_plot_refuses_to_replace_the_trace_it_reads(tmp_path):
    trace = tmp_path / "t.pftrace"
    assert dspsim_cli(*RUN, "--trace", trace).returncode == 0
    before = trace.read_bytes()
    one_line_error(dspsim_cli("trace", "plot", trace, "-o", trace), "an input")
    assert trace.read_bytes() == before


def test_save_refuses_a_folder_holding_its_chip_file(tmp_path):
    folder = tmp_path / "kept"
    assert dspsim_cli(*RUN, "--save", folder, "--no-trace").returncode == 0
    chip = folder / "chip.yaml"
    chip.write_text(chip.read_text() + "\n# edited\n")
    one_line_error(dspsim_cli(*RUN, "--chip", chip, "--save", folder, "--no-trace",
                              "--force"), "an input")
    assert chip.read_text().endswith("# edited\n")


# --------------------------------------------------------------------------- whole saves
def test_a_second_save_of_another_run_needs_force(tmp_path):
    folder = tmp_path / "kept"
    assert dspsim_cli(*RUN, "--save", folder, "--no-trace").returncode == 0
    first = (folder / "result.json").read_text()
    # the same run again (asked for differently) replaces it; another run does not
    assert dspsim_cli(*RUN, "--save", folder, "--no-trace", "--json").returncode == 0
    one_line_error(dspsim_cli(*RUN, "--seed", "3", "--save", folder, "--trace",
                              tmp_path / "t.pftrace"), "holds a different saved run")
    assert not (tmp_path / "t.pftrace").exists()  # refused whole: no trace either
    assert json.loads((folder / "result.json").read_text())["seed"] == 0
    assert json.loads(first)["result"] == json.loads((folder / "result.json").read_text())[
        "result"]
    proc = dspsim_cli(*RUN, "--seed", "3", "--save", folder, "--no-trace", "--force")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((folder / "result.json").read_text())["seed"] == 3


@pytest.mark.parametrize("kill_at", ["swap", "fallback-second-rename"])
def test_a_save_killed_while_swapping_leaves_one_whole_run(tmp_path, kill_at):
    from dspsim.saved import write_folder
    folder = tmp_path / "run"
    write_folder(folder, {"result.json": b"old", "chip.yaml": b"old chip"})
    patch = {
        # killed just before the one exchange: the old run stays
        "swap": "saved._exchange = lambda a, b: os.kill(os.getpid(), signal.SIGKILL)\n",
        # no atomic exchange: killed between its two renames
        "fallback-second-rename": (
            "saved._exchange = lambda a, b: False\n"
            "real = os.rename\n"
            "calls = []\n"
            "def rename(a, b):\n"
            "    calls.append(a)\n"
            "    if len(calls) == 2:\n"
            "        os.kill(os.getpid(), signal.SIGKILL)\n"
            "    real(a, b)\n"
            "os.rename = rename\n"),
    }[kill_at]
    code = ("import os, signal\nfrom dspsim import saved\n" + patch +
            f"saved.write_folder({str(folder)!r}, {{'result.json': b'new', "
            f"'chip.yaml': b'new chip'}}, force=True)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    # the next save finds the old run whole, puts it back if need be, and replaces it
    with pytest.raises(dspsim.ArgumentError, match="different saved run"):
        write_folder(folder, {"result.json": b"third", "chip.yaml": b"third chip"})
    assert (folder / "result.json").read_bytes() == b"old"
    assert (folder / "chip.yaml").read_bytes() == b"old chip"
    write_folder(folder, {"result.json": b"third", "chip.yaml": b"x"}, force=True)
    assert sorted(os.listdir(tmp_path)) == ["run"]
    assert (folder / "chip.yaml").read_bytes() == b"x"


def test_a_save_failing_on_one_file_changes_nothing(tmp_path, monkeypatch):
    from dspsim import saved
    folder = tmp_path / "run"
    saved.write_folder(folder, {"a": b"1", "b": b"1"})
    real_open = open

    def failing_open(path, *args, **kwargs):
        if os.fspath(path).endswith(os.sep + "b") and ".saving-" in os.fspath(path):
            raise OSError(28, "No space left on device")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", failing_open)
    with pytest.raises(dspsim.ArgumentError, match="No space left"):
        saved.write_folder(folder, {"a": b"2", "b": b"2"}, force=True)
    monkeypatch.undo()
    assert (folder / "a").read_bytes() == b"1" and (folder / "b").read_bytes() == b"1"
    assert sorted(os.listdir(tmp_path)) == ["run"]


def test_save_follows_a_symlinked_folder(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    proc = dspsim_cli(*RUN, "--save", tmp_path / "link", "--no-trace")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "link").is_symlink()
    assert sorted(os.listdir(real)) == ["chip.yaml", "result.json", "trace.pftrace"]


def test_save_into_a_255_byte_utf8_name(tmp_path):
    name = "é" * 127  # 254 bytes, 127 characters
    proc = dspsim_cli(*RUN, "--save", tmp_path / name, "--no-trace")
    assert proc.returncode == 0, proc.stderr
    assert os.listdir(tmp_path) == [name]


def test_save_to_an_empty_name_or_no_path(tmp_path):
    one_line_error(dspsim_cli(*RUN, "--save", "", "--no-trace"), "empty")
    result = dspsim.simulate("fp_relu_grad_s", [1.0] * 8, [1.0] * 8)[1]
    chip = dspsim.Chip("ft78ne")
    for bad in (None, 123):
        with pytest.raises(dspsim.ArgumentError, match="give a"):
            result.save(bad, chip_yaml=chip.description_yaml)
        with pytest.raises(dspsim.ArgumentError, match="give a file path"):
            result.write_trace(bad)
    written = result.write_trace(os.fsencode(tmp_path / "t.pftrace"))
    assert os.path.isfile(tmp_path / "t.pftrace") and written
    result.save(os.fsencode(tmp_path / "b"), chip_yaml=chip.description_yaml)
    assert os.path.isfile(tmp_path / "b" / "result.json")


def test_trace_and_no_trace_together_are_refused(tmp_path):
    one_line_error(dspsim_cli(*RUN, "--trace", tmp_path / "t.pftrace", "--no-trace"),
                   "contradict")


# --------------------------------------------------------------------------- image formats
def test_calibrate_checks_every_output_before_fitting(tmp_path):
    measured = tmp_path / "m.csv"
    measured.write_text("operator,length,core_mask,region,cycles\n"
                        "fp_relu_grad_s,2048,0x1,ddr,5384.3\n")
    fit = ("calibrate", "--chip", "ft78ne", "--measured", measured, "--fit",
           "memory.ddr.efficiency")
    one_line_error(dspsim_cli(*fit, "--plot", tmp_path / "x.txt"), "ending in .png, .svg")
    one_line_error(dspsim_cli(*fit, "--out", measured, "--no-plot"), "an input")
    one_line_error(dspsim_cli(*fit, "--plot", tmp_path / "m.png", "--out", tmp_path / "m.csv"),
                   "an input")
    assert not (tmp_path / "m.png").exists()


@pytest.mark.parametrize("ending, magic", [(".svg", b"<?xml"), (".pdf", b"%PDF"),
                                           (".PNG", b"\x89PNG")])
def test_trace_plot_writes_the_format_its_name_asks_for(tmp_path, ending, magic):
    trace = tmp_path / "t.pftrace"
    assert dspsim_cli(*RUN, "--trace", trace).returncode == 0
    proc = dspsim_cli("trace", "plot", trace, "-o", tmp_path / f"t{ending}")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / f"t{ending}").read_bytes().startswith(magic)


def test_trace_plot_refuses_an_image_name_it_cannot_honour(tmp_path):
    trace = tmp_path / "t.pftrace"
    assert dspsim_cli(*RUN, "--trace", trace).returncode == 0
    one_line_error(dspsim_cli("trace", "plot", trace, "-o", tmp_path / "t.jpg"), "ends in .jpg")
    assert sorted(os.listdir(tmp_path)) == ["t.pftrace"]


def test_sweep_into_a_device_says_it_is_no_folder():
    one_line_error(dspsim_cli("sweep", "--ops", "relu_grad", "--lengths", "1024", "--chips",
                              "ft78ne", "--cores", "1", "--out", "/dev/full"),
                   "exists and is not a folder")


def test_counter_events_without_a_value_are_refused(tmp_path):
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
    result = dspsim.simulate("fp_relu_grad_s", [1.0] * 4096, [1.0] * 4096)[1]
    trace = pb.Trace()
    trace.ParseFromString(Path(result.write_trace(tmp_path / "t.pftrace")).read_bytes())
    counters = [p.track_event for p in trace.packet if p.HasField("track_event")
                and p.track_event.type == pb.TrackEvent.TYPE_COUNTER]
    assert counters
    counters[0].ClearField("double_counter_value")
    counters[0].ClearField("counter_value")
    (tmp_path / "bad.pftrace").write_bytes(trace.SerializeToString())
    one_line_error(dspsim_cli("trace", "summary", tmp_path / "bad.pftrace"), "has no value")
    chrome = json.loads(Path(result.write_trace(tmp_path / "t.json")).read_bytes())
    events = chrome["traceEvents"] if isinstance(chrome, dict) else chrome
    next(e for e in events if e.get("ph") == "C")["args"] = {}
    (tmp_path / "bad.json").write_text(json.dumps(chrome))
    one_line_error(dspsim_cli("trace", "summary", tmp_path / "bad.json"), "without a value")
