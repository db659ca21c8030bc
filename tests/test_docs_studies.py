"""Every Python and shell block of docs/studies.md runs as written, in a fresh copy of the
checkout (as the README's blocks do), and the outputs it quotes are what the commands say."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from test_readme import _environment, fresh_checkout, readme_blocks, shell_commands

PAGE = Path(__file__).resolve().parent.parent / "docs" / "studies.md"


def page_blocks() -> list[tuple[int, str, str]]:
    """(line number, language, text) of every fenced python or bash block."""
    return [block for block in readme_blocks(PAGE) if block[1] in ("python", "bash")]


BLOCKS = page_blocks()


def test_the_page_has_blocks_to_run():
    assert {language for _, language, _ in BLOCKS} == {"python", "bash"}


@pytest.mark.parametrize("line, language, text", BLOCKS,
                         ids=[f"line{line}-{language}" for line, language, _ in BLOCKS])
def test_studies_page_block_runs_as_written(tmp_path, line, language, text):
    checkout = fresh_checkout(tmp_path)
    if language == "python":
        command = [sys.executable, "-c", text]
    else:
        command = ["bash", "-e", "-o", "pipefail", "-c", "\n".join(shell_commands(text))]
    proc = subprocess.run(command, cwd=checkout, capture_output=True, text=True,
                          env=_environment(), timeout=900)
    assert proc.returncode == 0, f"docs/studies.md line {line}:\n{proc.stdout[-2000:]}\n" \
                                 f"{proc.stderr}"
    if "--max-runs 2" in text:
        assert "more than --max-runs 2" in proc.stderr and "refused, as asked" in proc.stdout
    if "mask_a=0x1,0x3,0xf,0xff" in text:
        assert "1 run done, 3 already in sweeps/mlp-masks (4 planned)" in proc.stdout
    if "--set vector.lane_width_bits" in text:
        assert "planned: 27 runs" in proc.stderr and "sensitivity" in proc.stdout
