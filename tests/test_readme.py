"""Every Python and shell block of README.md runs as written.

Each block runs in a fresh copy of the checkout's tracked files (so the checkout stays
clean), Python blocks in a fresh interpreter, shell blocks in bash with this environment's
``dspsim`` and ``python`` on the PATH. A few commands cannot run inside the test suite;
``NOT_RUN`` says which and why, and each is checked another way.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
LANGUAGES = {"python", "bash", "sh"}

#: commands the suite cannot run inside itself, and why
NOT_RUN = {
    "environment": (re.compile(r"^(python3 -m venv |pip install |\. \.venv/bin/activate$)"),
                    "creates or fills the environment this test runs in"),
    "test suite": (re.compile(r"^pytest\b"), "the test suite, of which this test is part"),
    "benchmark": (re.compile(r"^python benchmarks/"),
                  "measures wall-clock time, which tests never assert; its options are parsed"),
}


def readme_blocks() -> list[tuple[int, str, str]]:
    """(line number, language, text) of every fenced block in a language that runs."""
    blocks, lines = [], README.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        match = re.match(r"^```(\S*)", lines[index])
        if not match:
            index += 1
            continue
        end = next(i for i in range(index + 1, len(lines)) if lines[i].startswith("```"))
        if match.group(1) in LANGUAGES:
            blocks.append((index + 1, match.group(1), "\n".join(lines[index + 1:end]) + "\n"))
        index = end + 1
    return blocks


def shell_commands(text: str) -> list[str]:
    """The block's commands, one per line, continuation lines joined, ``&&`` chains split
    (so that a chain that makes an environment and then uses it still runs its use)."""
    lines = [c.strip() for c in text.replace("\\\n", " ").splitlines()
             if c.strip() and not c.strip().startswith("#")]
    return [part.strip() for line in lines for part in line.split(" && ")]


def not_run_reason(command: str) -> str | None:
    return next((kind for kind, (pattern, _) in NOT_RUN.items() if pattern.search(command)),
                None)


def fresh_checkout(destination: Path) -> Path:
    """A copy of the tracked files (or of the tree, outside a git checkout)."""
    copy = destination / "checkout"
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True)
    if listed.returncode == 0 and listed.stdout:
        for name in listed.stdout.decode().split("\0"):
            if name and (ROOT / name).is_file():
                (copy / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, copy / name)
    else:
        shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(
            ".git", ".venv", "__pycache__", ".pytest_cache", ".hypothesis", "sweeps", "runs"))
    (copy / "traces").mkdir(exist_ok=True)
    return copy


def _environment() -> dict:
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["MPLBACKEND"] = "Agg"
    return env


def check_not_run(kind: str, command: str) -> None:
    """What can be checked of a command the suite does not run."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    for part in command.split("&&"):
        words = shlex.split(part, comments=True)
        if words[:2] == ["pip", "install"]:
            for target in words[2:]:
                wanted = re.fullmatch(r"\.(?:\[([\w,-]+)\])?", target)
                assert wanted, f"pip installs {target!r}, not this checkout"
                for extra in filter(None, (wanted.group(1) or "").split(",")):
                    assert extra in extras, f"no extra {extra!r} in pyproject.toml"
        if words[:1] == ["pytest"] and "-n" in words:
            assert any(d.startswith("pytest-xdist") for d in extras["test"])
    if kind == "benchmark":
        words = shlex.split(command, comments=True)
        spec = importlib.util.spec_from_file_location("readme_benchmark", ROOT / words[1])
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # its dataclasses look their module up
        sys.path.insert(0, str(ROOT / "benchmarks"))
        try:
            spec.loader.exec_module(module)
        finally:
            sys.path.remove(str(ROOT / "benchmarks"))
            del sys.modules[spec.name]
        module.build_parser().parse_args(words[2:])  # exits (fails the test) on a bad option


BLOCKS = readme_blocks()


@pytest.mark.parametrize("line, language, text", BLOCKS,
                         ids=[f"line{line}-{language}" for line, language, _ in BLOCKS])
def test_readme_block_runs_as_written(tmp_path, line, language, text):
    checkout = fresh_checkout(tmp_path)
    if language == "python":
        proc = subprocess.run([sys.executable, "-c", text], cwd=checkout, capture_output=True,
                              text=True, env=_environment(), timeout=600)
        assert proc.returncode == 0, f"README line {line}:\n{proc.stderr}"
        return
    script = []
    for command in shell_commands(text):
        kind = not_run_reason(command)
        if kind:
            check_not_run(kind, command)
        else:
            script.append(command)
    if not script:
        return
    proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", "\n".join(script)],
                          cwd=checkout, capture_output=True, text=True, env=_environment(),
                          timeout=600)
    assert proc.returncode == 0, f"README line {line}:\n{proc.stdout[-2000:]}\n{proc.stderr}"


def test_the_readme_blocks_that_run_include_the_quick_start():
    commands = [c for _, lang, text in BLOCKS if lang != "python" for c in shell_commands(text)]
    run = [c for c in commands if not not_run_reason(c)]
    assert any(c.startswith("dspsim run fp_relu_grad_s --chip ft78ne") for c in run)
    assert any(c.startswith("dspsim sweep") for c in run)
    # every exception is used, so the list does not outlive the README
    assert {not_run_reason(c) for c in commands} >= set(NOT_RUN)
    assert sum(lang == "python" for _, lang, _ in BLOCKS) >= 3
