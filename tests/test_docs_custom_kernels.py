"""Every code block of docs/custom-kernels.md runs as written, in order, in one folder.

A Python block whose first line is ``# NAME.py`` is the file the text tells the reader to
save: it is saved under that name (and run, which declares its operators). Shell blocks
run in bash with this environment's ``dspsim`` first on the PATH; TOML blocks must parse.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "custom-kernels.md"


def blocks() -> list[tuple[str, str]]:
    return re.findall(r"^```(\w+)\n(.*?)^```", PAGE.read_text(encoding="utf-8"), re.M | re.S)


def test_every_block_runs(tmp_path):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent),
                                                  os.environ.get("PATH", "")]),
           "PYTHONPATH": str(ROOT)}
    ran = []
    for language, text in blocks():
        if language == "toml":
            tomllib.loads(text)
            continue
        if language == "python":
            first = text.splitlines()[0]
            if re.fullmatch(r"# [\w.-]+\.py", first):
                (tmp_path / first[2:]).write_text(text)
            command = [sys.executable, "-c", text]
        else:
            assert language == "bash", language
            command = ["bash", "-euo", "pipefail", "-c", text]
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
        assert done.returncode == 0, f"{language} block failed:\n{text}\n{done.stderr}"
        ran.append((language, done.stdout + done.stderr))
    assert len(ran) >= 6
    broken = next(out for language, out in ran if "broken_ops.py" in out)
    assert "field mix['mul']" in broken
    curve = next(out for language, out in ran if "cycles speedup" in out)
    assert "FT78NE" in curve and "MT7004" in curve
