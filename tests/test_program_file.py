"""Program files and `dspsim program`: validation with key paths, the shipped examples."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from dspsim.programs.file import ProgramFileError
from dspsim.programs.loader import load_program
from dspsim.sim.errors import DspSimError
from dspsim.traces.formats import validate_trace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")

GOOD = """
chip: ft78ne
parameters: {n: 4096, mask: 0x0f}
buffers:
  dy: {length: $n, init: {random: {seed: 1}}}
  x:  {length: $n, address: 0xA0000000, init: {random: {seed: 2, low: -3, high: 3}}}
  w:  {length: $n, init: {npy: w.npy}}
  dx: {length: $n}
  out: {length: $n, region: shared_sram}
streams:
  a:
    - call: fp_relu_grad_s
      args: [dy, x, dx, $n, $mask]
    - record: done
  b:
    - wait: done
    - call: fp_tanh_grad_s
      args: {src0: dx, src1: w, dst: out, length: $n, core_mask: 0xf0}
"""


def write(tmp_path, text, name="prog.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def dspsim_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "dspsim", *args], capture_output=True,
                          text=True, cwd=cwd)


def test_a_program_file_runs_and_its_numerics_chain(tmp_path):
    w = np.linspace(-0.9, 0.9, 4096)
    np.save(tmp_path / "w.npy", w)
    loaded = load_program(write(tmp_path, GOOD))
    result = loaded.run()
    memory, spans = loaded.chip.memory, {b.name: b.span for b in loaded.buffers}
    dy = memory.view(spans["dy"], np.float32).astype(np.float64)
    x = memory.view(spans["x"], np.float32).astype(np.float64)
    assert spans["x"].address == 0xA0000000 and spans["out"].region == "shared_sram"
    assert x.min() >= -3 and x.max() < 3
    expected = np.where(x > 0, dy, 0) * (1 - w.astype(np.float32).astype(np.float64) ** 2)
    np.testing.assert_allclose(memory.view(spans["out"], np.float32), expected, rtol=1e-5,
                               atol=1e-6)
    assert result.calls[1].waited_for == "event done"
    assert result.events[0]["waits"][0]["call"] == 1


def test_parameters_can_be_overridden(tmp_path):
    np.save(tmp_path / "w.npy", np.zeros(1024))
    loaded = load_program(write(tmp_path, GOOD), {"n": 1024, "mask": 0x3})
    assert loaded.program.calls[0].bound.length == 1024
    assert loaded.program.calls[0].bound.cores == (0, 1)
    with pytest.raises(ProgramFileError, match="parameter 'm' given on the command line"):
        load_program(write(tmp_path, GOOD), {"m": 1})


@pytest.mark.parametrize("change, where, what", [
    (("args: [dy, x, dx", "args: [dyy, x, dx"), "streams.a[0].args[0]",
     "unknown buffer 'dyy'; did you mean 'dy'?"),
    (("- wait: done", "- wait: dome"), "streams.b[0].wait", "event 'dome' is never recorded"),
    (("dy: {length: $n,", "dy: {address: 0xA0000100, length: $n,"), "buffers.dy",
     "overlaps buffer 'x'"),
    (("address: 0xA0000000", "address: 0x40000000"), "buffers.x.address",
     "outside every memory region"),
    (("out: {length: $n, region: shared_sram}", "out: {length: 1073741824, region: shared_sram}"),
     "buffers.out", "does not fit in shared_sram"),
    (("core_mask: 0xf0", "core_mask: 0x100"), "streams.b[1]", "selects no core"),
    (("$mask]", "$masks]"), "streams.a[0].args[4]", "unknown parameter '$masks'"),
    (("x:  {length: $n,", "x:  {lenght: 3, length: $n,"), "buffers.x.lenght", "unknown key"),
    (("call: fp_tanh_grad_s", "call: fp_tanh_grad_q"), "streams.b[1].call", "unknown operator"),
    (("dx: {length: $n}", "dx: {length: 16}"), "streams.a[0].args[2]",
     "buffer 'dx' has 16 elements"),
    (("chip: ft78ne", "chip: ft99"), "chip", "unknown chip 'ft99'"),
])
def test_every_problem_names_its_key_path(tmp_path, change, where, what):
    np.save(tmp_path / "w.npy", np.zeros(4096))
    path = write(tmp_path, GOOD.replace(*change))
    with pytest.raises(ProgramFileError) as caught:
        load_program(path)
    message = str(caught.value)
    assert message.startswith(path) and f"{where}: " in message and what in message


def test_all_problems_are_reported_at_once(tmp_path):
    np.save(tmp_path / "w.npy", np.zeros(4096))
    text = GOOD.replace("args: [dy, x, dx", "args: [dyy, x, dxx").replace("wait: done",
                                                                        "wait: nope")
    with pytest.raises(ProgramFileError, match="3 problems") as caught:
        load_program(write(tmp_path, text))
    assert "args[0]" in str(caught.value) and "args[2]" in str(caught.value)


@pytest.mark.parametrize("text", ["", "[1, 2]", "chip: ft78ne\n", "a: [b", "chip: {x: 1}\n"
                                  "buffers: 1\nstreams: 2\n", "chip: ft78ne\nbuffers: {}\n"
                                  "streams: {s: [1]}\n"])
def test_broken_files_are_config_errors(tmp_path, text):
    with pytest.raises(DspSimError):
        load_program(write(tmp_path, text))


def test_a_race_in_a_file_leaves_memory_untouched(tmp_path):
    np.save(tmp_path / "w.npy", np.zeros(4096))
    loaded = load_program(write(tmp_path, GOOD.replace("    - wait: done\n", "")))
    with pytest.raises(DspSimError, match="race: call 0 fp_relu_grad_s on stream 'a' writes"):
        loaded.run()
    assert all(loaded.chip.memory.unwritten(b.span) for b in loaded.buffers)


def test_cli_runs_both_examples_and_writes_a_valid_trace(tmp_path):
    runs = {}
    for name in ("mlp_backward_sequential", "mlp_backward_split"):
        trace = tmp_path / f"{name}.json"
        done = dspsim_cli("program", os.path.join(EXAMPLES, f"{name}.yaml"), "--timing-only",
                          "--trace", str(trace), "--json")
        assert done.returncode == 0, done.stderr
        runs[name] = json.loads(done.stdout)["result"]
        assert validate_trace(json.loads(trace.read_text())) == []
        summary = dspsim_cli("trace", "summary", str(trace))
        assert summary.returncode == 0, summary.stderr
    split = runs["mlp_backward_split"]
    assert len(split["calls"]) == 6 and split["streams"] == ["rows_a", "rows_b"]
    assert {tuple(c["cores"]) for c in split["calls"]} == {(0, 1, 2, 3), (4, 5, 6, 7)}
    text = dspsim_cli("program", os.path.join(EXAMPLES, "mlp_backward_split.yaml"),
                      "--timing-only")
    assert text.returncode == 0 and "critical path (" in text.stdout


def test_cli_bad_program_exits_2_with_one_line(tmp_path):
    done = dspsim_cli("program", os.path.join(EXAMPLES, "mlp_backward_split.yaml"),
                      "--param", "mask_a=0x100", "--timing-only")
    assert done.returncode == 2
    assert done.stderr.startswith("error: ") and len(done.stderr.strip().splitlines()) == 1
    assert "streams.rows_a[0]" in done.stderr
    done = dspsim_cli("program", str(tmp_path / "missing.yaml"))
    assert done.returncode == 2 and "does not exist" in done.stderr


def test_sweep_varies_program_parameters(tmp_path):
    path = write(tmp_path, GOOD.replace("init: {npy: w.npy}", "init: zeros"))
    out = tmp_path / "study"
    done = dspsim_cli("sweep", "--program", path, "--vary", "mask=0x1,0xf,0x100",
                      "--vary", "n=1024,4096", "--timing-only", "--out", str(out))
    assert done.returncode == 0, done.stderr
    document = json.loads((out / "rows.json").read_text())
    rows = document["rows"]
    assert document["study"] == "program"
    assert [(r["param.mask"], r["param.n"]) for r in rows] == [
        (1, 1024), (1, 4096), (15, 1024), (15, 4096)]
    assert rows[2]["cycles"] < rows[0]["cycles"]  # four cores beat one
    # a combination the file refuses is a note naming it, not a row
    assert any("mask=0x100" in n and "selects no core" in n for n in document["notes"])
    assert "selects no core" in done.stdout
    assert (out / "rows.csv").exists() and list(out.glob("program-*.png"))
    bad = dspsim_cli("sweep", "--program", path, "--vary", "nope=1,2", "--out", str(out))
    assert bad.returncode == 2 and "not in the file's parameters" in bad.stderr
