"""Every code block of these docs pages runs as written, in order, one folder per page.

A Python block whose first line is ``# NAME.py`` is the file the text tells the reader to
save: it is saved under that name (and run, which declares its operators). Shell blocks
run in bash with this environment's ``dspsim`` first on the PATH; TOML and YAML blocks
(snippets of a pyproject or a chip file) must parse.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
import yaml

ROOT = Path(__file__).resolve().parent.parent
PAGES = ("custom-kernels.md", "speed-of-light-and-uncertainty.md")


def blocks(page: str) -> list[tuple[str, str]]:
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    return re.findall(r"^```(\w+)\n(.*?)^```", text, re.M | re.S)


def run_page(page: str, tmp_path) -> list[tuple[str, str]]:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent),
                                                  os.environ.get("PATH", "")]),
           "PYTHONPATH": str(ROOT)}
    ran = []
    for language, text in blocks(page):
        if language == "toml":
            tomllib.loads(text)
            continue
        if language == "yaml":
            yaml.safe_load(text)
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
    return ran


def test_custom_kernels_page(tmp_path):
    ran = run_page("custom-kernels.md", tmp_path)
    assert len(ran) >= 6
    broken = next(out for language, out in ran if "broken_ops.py" in out)
    assert "field mix['mul']" in broken
    curve = next(out for language, out in ran if "cycles speedup" in out)
    assert "FT78NE" in curve and "MT7004" in curve


def test_speed_of_light_page(tmp_path):
    ran = run_page("speed-of-light-and-uncertainty.md", tmp_path)
    text = "\n".join(out for _, out in ran)
    assert "DDR-bound at" in text and "exp expands to 13.5 cycles/vector" in text
    assert re.search(r"^True [\w.]+$", text, re.M)  # the band holds the estimate
    assert (tmp_path / "program.png").exists()


@pytest.mark.parametrize("page", PAGES)
def test_pages_have_blocks(page):
    assert blocks(page)
