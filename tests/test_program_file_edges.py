"""Program files: local-L2 buffers, advice in the file's terms, self-waits, parameters
given twice, corrupt .npy files, every independent problem at once."""
from __future__ import annotations

import numpy as np
import pytest
from reference import l_relu
from terminal import dspsim_cli

from dspsim.programs.file import ProgramFileError
from dspsim.programs.loader import load_program
from dspsim.sim.errors import DspSimError

LOCAL = """
chip: ft78ne
buffers:
  x: {length: 256, address: 0x00800000, init: {random: {seed: 3}}}
  y: {length: 256, address: 0x00810000}
streams:
  a:
    - call: fp_l_relu_p
      args: [x, y, 256, 0.5]
      core: 3
"""


def _write(tmp_path, text, name="p.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_local_l2_buffer_holds_its_data_for_the_core_that_runs(tmp_path):
    loaded = load_program(_write(tmp_path, LOCAL))
    loaded.run()
    memory = loaded.chip.memory
    x = memory.read(0x00800000, 256, np.float32, core=3)
    np.testing.assert_array_equal(memory.read(0x00800000, 256, np.float32, core=0), x)
    np.testing.assert_allclose(memory.read(0x00810000, 256, np.float32, core=3),
                               l_relu(x, 0.5), rtol=1e-6)


def test_program_file_messages_speak_of_the_file(tmp_path):
    unwritten = LOCAL.replace(", init: {random: {seed: 3}}", "")
    with pytest.raises(DspSimError) as info:
        load_program(_write(tmp_path, unwritten)).run()
    assert "give its buffer an init" in str(info.value)
    assert "chip.write" not in str(info.value)


def test_a_stream_waiting_for_its_own_later_record(tmp_path):
    text = LOCAL.replace("    - call: fp_l_relu_p", "    - wait: later\n    - call: fp_l_relu_p")
    text += "    - record: later\n"
    proc = dspsim_cli("program", _write(tmp_path, text))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "stream 'a' waits for event 'later', which it records only later itself" in \
        proc.stderr
    assert "each other" not in proc.stderr


def test_a_parameter_given_twice_is_refused(tmp_path):
    text = LOCAL.replace("buffers:", "parameters: {n: 256}\nbuffers:")
    proc = dspsim_cli("program", _write(tmp_path, text), "--param", "n=256", "--param",
                      "n=128")
    assert proc.returncode == 2 and "--param n given twice" in proc.stderr


@pytest.mark.parametrize("content", [b"not numpy at all", b"\x93NUMPY\x01\x00\xff\xffgarbage"])
def test_a_corrupt_npy_file_is_named_without_pickle_advice(tmp_path, content):
    (tmp_path / "w.npy").write_bytes(content)
    text = LOCAL.replace("init: {random: {seed: 3}}", "init: {npy: w.npy}")
    with pytest.raises(ProgramFileError) as info:
        load_program(_write(tmp_path, text))
    message = str(info.value)
    assert "w.npy" in message and "numpy.save" in message
    assert "allow_pickle" not in message and "\n" not in message


def test_every_independent_problem_is_reported_at_once(tmp_path):
    text = """
chip: ft78ne
colour: red
buffers:
  x: {length: 256, init: {random: {seed: 3}}, shape: 4}
  y: {length: 256}
streams:
  a:
    - call: fp_l_relu_s
      args: [x, y, 256, 0.5, 0x1]
      speed: fast
"""
    with pytest.raises(ProgramFileError) as info:
        load_program(_write(tmp_path, text))
    message = str(info.value)
    assert "3 problems" in message
    for where in ("colour: unknown key", "buffers.x.shape: unknown key",
                  "streams.a[0].speed: unknown key"):
        assert where in message


def test_a_long_critical_path_prints_its_ends():
    from dspsim.cli.program import critical_path_text
    path = [{"call": k, "operator": "fp_relu_grad_s", "waited_for": "stream order",
             "bound": "DDR"} for k in range(9000)]
    text = critical_path_text(path)
    assert text.startswith("critical path (9,000 calls): call 0 ")
    assert "8,990 more calls" in text and text.endswith("call 8999 fp_relu_grad_s "
                                                        "(stream order; DDR)")
    assert len(text) < 1000
