"""Users' own operators: loaded from files and entry points, private to a chip, checked
field by field, and run wherever a library operator runs."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

import dspsim
from dspsim.calibration.measurements import load_measurements
from dspsim.calibration.model import CallTimer
from dspsim.kernels import KernelSource, kernel_set
from dspsim.sim.errors import DTypeError, KernelDeclarationError

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "kernels" / "bias_gelu_grad.py"

SCALE = '''
import numpy as np
from dspsim.kernels import Operator, Param

def scale(x, factor):
    return x * x.dtype.type(factor)

SCALE = Operator(
    stem="{stem}", summary="x times a factor", formula="dst = src * factor",
    args=("src", "dst", "length", "factor"), inputs=("src",), output="dst",
    params=(Param("factor", default=2.0, minimum=-8.0, maximum=8.0),),
    mix={{"load": 1, "mul": {muls}, "store": 1}},
    compute=scale, reference=lambda x, factor: x * factor{extra})
OPERATORS = (SCALE,)
'''


def kernel_file(tmp_path: Path, stem: str = "my_scale", muls: int = 1, extra: str = "",
                name: str | None = None) -> Path:
    path = tmp_path / (name or f"{stem}.py")
    path.write_text(SCALE.format(stem=stem, muls=muls, extra=extra))
    return path


def run_cli(*args: str, cwd: Path | None = None, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dspsim", *args], capture_output=True,
                          text=True, cwd=cwd, env=env)


# ----------------------------------------------------------------------------- the chip
def test_a_chips_kernels_are_its_own(tmp_path):
    chip = dspsim.Chip("ft78ne", kernels=kernel_file(tmp_path))
    plain = dspsim.Chip("ft78ne")
    assert "fp_my_scale_s" in chip.operator_names()
    assert not hasattr(plain, "fp_my_scale_s")
    assert "fp_my_scale_s" not in plain.operator_names()
    x = np.arange(1024, dtype=np.float32)
    chip.write(0x80000000, x)
    result = chip.fp_my_scale_s(0x80000000, 0x81000000, 1024, 3.0, 0xF)
    assert np.array_equal(chip.read(0x81000000, 1024, "fp32"), x * 3)
    assert result.cycles > 0 and result.operator == "fp_my_scale_s"


def test_loading_in_threads_keeps_each_set_apart(tmp_path):
    files = [kernel_file(tmp_path, f"scale{k}", muls=k + 1) for k in range(4)]
    chips: dict[int, dspsim.Chip] = {}

    def load(k: int) -> None:
        chips[k] = dspsim.Chip("mt7004", kernels=files[k])

    threads = [threading.Thread(target=load, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, chip in chips.items():
        own = [s for s in chip.kernels if s.startswith("scale")]
        assert own == [f"scale{k}"]
        assert chip.kernels[f"scale{k}"].mix["mul"] == k + 1


def test_the_mix_drives_the_cost(tmp_path):
    cheap = dspsim.Chip("ft78ne", kernels=kernel_file(tmp_path, "cheap", muls=1))
    dear = dspsim.Chip("ft78ne", kernels=kernel_file(tmp_path, "dear", muls=40))
    args = (0x80000000, 0x81000000, 1 << 16, 2.0, 0x1)
    for chip in (cheap, dear):
        chip.zero(0x80000000, 1 << 16, "fp32")
    a = cheap.call("fp_cheap_s", *args, numerics=False)
    b = dear.call("fp_dear_s", *args, numerics=False)
    # FT78NE: two mul units, one cycle each per vector: 40 multiplies take 20 cycles
    assert b.iteration_cycles == 20 and a.iteration_cycles < 20
    assert b.bound == "vector unit" and b.cycles > a.cycles


def test_an_operator_object_and_a_parameter_range():
    from dspsim.kernels import Operator, Param
    op = Operator(stem="clip_to", summary="", formula="dst = min(src, top)",
                  args=("src", "dst", "length", "top"), inputs=("src",), output="dst",
                  params=(Param("top", minimum=0.0, maximum=10.0, role="threshold"),),
                  mix={"load": 1, "min": 1, "store": 1},
                  compute=lambda x, top: np.minimum(x, x.dtype.type(top)),
                  reference=lambda x, top: np.minimum(x, top), dtypes=("fp16",))
    chip = dspsim.Chip("mt7004", kernels=op)
    assert chip.operator_names() == sorted(n for n in chip.operator_names())
    assert "hp_clip_to_s" in chip.operator_names()
    with pytest.raises(DTypeError, match="written for fp16 only"):
        chip.resolve("fp_clip_to_s")
    chip.zero(0x80000000, 64, "fp16")
    with pytest.raises(dspsim.ArgumentError, match="top=11 must be <= 10"):
        chip.hp_clip_to_s(0x80000000, 0x81000000, 64, 11.0)


# ----------------------------------------------------------------------------- bad input
BAD = [
    ('mix={"load": 1, "mul": -1, "store": 1}', "field mix['mul']"),
    ('mix={}', "field mix:"),
    ('stem="Bad Stem"', "field stem"),
    ('stem="relu_grad"', "field stem: 'relu_grad' is already declared by the operator library"),
    ('params=(Param("factor", default=20.0, maximum=8.0),)', "field params[0] ('factor').default"),
    ('params=(Param("factor", role="offset"),)', "field params[0] ('factor').role"),
    ('inputs=("src", "other")', "field args: does not list 'other'"),
    ('output="src"', "field output"),
    ('dtypes=("fp64",)', "field dtypes"),
    ('tolerance_ulps=-1', "field tolerance_ulps"),
    ('compute=lambda x, factor: x[:3]', "field compute: returned shape (3,)"),
    ('reference=lambda x, factor: 1 / None', "field reference: raised TypeError"),
]


#: the fields of a good declaration, as source text; each bad case replaces or adds one
GOOD_FIELDS = {
    "stem": '"my_scale"', "summary": '"x times a factor"', "formula": '"dst = src * factor"',
    "args": '("src", "dst", "length", "factor")', "inputs": '("src",)', "output": '"src_out"',
    "params": '(Param("factor", default=2.0, minimum=-8.0, maximum=8.0),)',
    "mix": '{"load": 1, "mul": 1, "store": 1}', "compute": "scale",
    "reference": "lambda x, factor: x * factor",
}
GOOD_FIELDS["args"] = '("src", "dst", "length", "factor")'
GOOD_FIELDS["output"] = '"dst"'


def declaration(changes: dict[str, str]) -> str:
    fields = {**GOOD_FIELDS, **changes}
    body = ",\n    ".join(f"{name}={value}" for name, value in fields.items())
    return ("import numpy as np\nfrom dspsim.kernels import Operator, Param\n\n"
            "def scale(x, factor):\n    return x * x.dtype.type(factor)\n\n"
            f"OPERATORS = (Operator(\n    {body}),)\n")


@pytest.mark.parametrize("change,message", BAD, ids=[m for _, m in BAD])
def test_a_bad_declaration_names_its_field(tmp_path, change, message):
    field, value = change.split("=", 1)
    path = tmp_path / "bad.py"
    path.write_text(declaration({field: value}))
    with pytest.raises(KernelDeclarationError) as info:
        dspsim.Chip("ft78ne", kernels=path)
    assert message in str(info.value)
    assert str(path) in str(info.value)


def test_the_good_declaration_loads(tmp_path):
    path = tmp_path / "good.py"
    path.write_text(declaration({}))
    assert "my_scale" in dspsim.Chip("ft78ne", kernels=path).kernels


def test_file_problems_are_one_clear_error(tmp_path):
    (tmp_path / "empty.py").write_text("x = 1\n")
    (tmp_path / "syntax.py").write_text("def broken(:\n")
    (tmp_path / "missing.py").write_text("from dspsim.kernels import Operator\n"
                                         "OP = Operator(stem='a', summary='', formula='')\n")
    with pytest.raises(KernelDeclarationError, match="declares no operator"):
        dspsim.Chip(kernels=tmp_path / "empty.py")
    with pytest.raises(KernelDeclarationError, match=r"syntax.py:1: .*SyntaxError"):
        dspsim.Chip(kernels=tmp_path / "syntax.py")
    with pytest.raises(KernelDeclarationError, match=r"missing.py:2: .*missing .*'args'"):
        dspsim.Chip(kernels=tmp_path / "missing.py")
    with pytest.raises(KernelDeclarationError, match="no such kernel file"):
        dspsim.Chip(kernels=tmp_path / "nowhere.py")
    first, second = kernel_file(tmp_path, "twin"), kernel_file(tmp_path, "twin", muls=2,
                                                                name="other.py")
    with pytest.raises(KernelDeclarationError, match="already declared by .*twin.py"):
        dspsim.Chip(kernels=[first, second])


def test_a_source_travels_as_text(tmp_path):
    source = KernelSource.from_path(kernel_file(tmp_path))
    os.remove(source.origin)  # a worker without the user's files still rebuilds it
    found = kernel_set(source)
    assert "my_scale" in found and found.sources == (source,)


# ----------------------------------------------------------------------------- everywhere
def test_run_and_ops_from_the_command_line():
    done = run_cli("run", "--kernels", str(EXAMPLE), "fp_bias_gelu_grad_s", "--length",
                   "2^14", "--no-trace", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["numerics"]["ok"] and data["result"]["operator"] == "fp_bias_gelu_grad_s"
    listed = run_cli("ops", "--kernels", str(EXAMPLE), "--json")
    entry = next(e for e in json.loads(listed.stdout) if e["stem"] == "bias_gelu_grad")
    assert entry["declared_in"] == str(EXAMPLE) and entry["inputs"] == ["src0", "src1", "src2"]
    unknown = run_cli("run", "fp_bias_gelu_grad_s", "--length", "16", "--no-trace")
    assert unknown.returncode == 2 and "unknown operator" in unknown.stderr


def test_sweep_rebuilds_the_kernel_in_worker_processes(tmp_path):
    done = run_cli("sweep", "--kernels", str(EXAMPLE), "--ops", "bias_gelu_grad,relu_grad",
                   "--chips", "ft78ne", "--lengths", "2^14", "--cores", "1,4",
                   "--timing-only", "--workers", "2", "--no-plots", "--out",
                   str(tmp_path / "s"), "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["rows"]
    stems = sorted({r["stem"] for r in rows})
    assert stems == ["bias_gelu_grad", "relu_grad"] and len(rows) == 4
    fused = [r for r in rows if r["stem"] == "bias_gelu_grad"]
    assert all(r["ddr_bytes"] == 4 * 4 * (1 << 14) for r in fused)


def test_program_file_names_its_kernels(tmp_path):
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "fused.py").write_text(EXAMPLE.read_text())
    program = tmp_path / "p.yaml"
    program.write_text(textwrap.dedent("""
        chip: ft78ne
        kernels: [ops/fused.py]
        buffers:
          dy: {length: 4096, init: {random: {seed: 1}}}
          x:  {length: 4096, init: {random: {seed: 2}}}
          b:  {length: 4096, init: {random: {seed: 3}}}
          dx: {length: 4096}
        streams:
          main:
            - call: fp_bias_gelu_grad_s
              args: [dy, x, b, dx, 4096, 0xff]
        """))
    done = run_cli("program", str(program), "--json")
    assert done.returncode == 0, done.stderr
    calls = json.loads(done.stdout)["result"]["calls"]
    assert calls[0]["operator"] == "fp_bias_gelu_grad_s"
    broken = tmp_path / "q.yaml"
    broken.write_text(program.read_text().replace("ops/fused.py", "ops/none.py"))
    failed = run_cli("program", str(broken))
    assert failed.returncode == 2 and "kernels: " in failed.stderr


def test_program_study_runs_the_files_and_the_given_kernels(tmp_path):
    """A program study rebuilds users' operators in worker processes, from the file's
    ``kernels:`` and from ``--kernels``; an edited kernel file makes new rows."""
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "fused.py").write_text(EXAMPLE.read_text())
    scale = kernel_file(tmp_path)
    program = tmp_path / "p.yaml"
    program.write_text(textwrap.dedent("""
        chip: ft78ne
        kernels: [ops/fused.py]
        parameters: {mask: 0xff}
        buffers:
          dy: {length: 4096, init: {random: {seed: 1}}}
          x:  {length: 4096, init: {random: {seed: 2}}}
          b:  {length: 4096, init: {random: {seed: 3}}}
          dx: {length: 4096}
          y:  {length: 4096}
        streams:
          main:
            - call: fp_bias_gelu_grad_s
              args: [dy, x, b, dx, 4096, $mask]
            - call: fp_my_scale_s
              args: [dx, y, 4096, 2.0, $mask]
        """))
    study = ["sweep", "--program", str(program), "--vary", "mask=0x1,0xf", "--workers", "2",
             "--no-plots", "--out", str(tmp_path / "s"), "--json"]
    lacking = run_cli(*study)
    assert lacking.returncode == 2 and "fp_my_scale_s" in lacking.stderr
    done = run_cli(*study, "--kernels", str(scale))
    assert done.returncode == 0, done.stderr
    first = json.loads(done.stdout)
    assert first["ran"] == 2 and len(first["rows"]) == 2
    assert first["rows"][0]["cycles"] > first["rows"][1]["cycles"]  # 1 core, then 4
    again = json.loads(run_cli(*study, "--kernels", str(scale)).stdout)
    assert again["ran"] == 0 and again["already_done"] == 2
    scale.write_text(scale.read_text().replace("x times a factor", "x times its factor"))
    edited = json.loads(run_cli(*study, "--kernels", str(scale)).stdout)
    assert edited["ran"] == 2


def test_calibration_reads_rows_of_own_kernels(tmp_path):
    measured = tmp_path / "m.csv"
    measured.write_text("operator,length,core_mask,cycles\n"
                        "bias_gelu_grad,65536,0xff,130000\n"
                        "fp_bias_gelu_grad_s,16384,0x1,70000\n")
    with pytest.raises(dspsim.ArgumentError, match="unknown operator"):
        load_measurements(measured)
    rows = load_measurements(measured, EXAMPLE)
    assert [r.operator for r in rows] == ["fp_bias_gelu_grad_s"] * 2
    cycles, _ = CallTimer(rows, str(measured), kernel_set(EXAMPLE)).time(
        dspsim.Chip("ft78ne").config)
    assert np.all(cycles > 0)


def test_an_installed_packages_entry_point(tmp_path):
    site = tmp_path / "site"
    (site / "fusedpkg").mkdir(parents=True)
    (site / "fusedpkg" / "__init__.py").write_text(EXAMPLE.read_text())
    info = site / "fusedpkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fusedpkg\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[dspsim.kernels]\nfused = fusedpkg\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    done = run_cli("run", "fp_bias_gelu_grad_s", "--length", "4096", "--no-trace", "--json",
                   env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["numerics"]["ok"]
    (info / "entry_points.txt").write_text("[dspsim.kernels]\nbroken = fusedpkg:NOTHING\n")
    failed = run_cli("run", "fp_relu_grad_s", "--length", "16", "--no-trace", env=env)
    assert failed.returncode == 2
    assert "entry point 'broken'" in failed.stderr and "uninstall" in failed.stderr
