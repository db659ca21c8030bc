"""The one runner of the code blocks in README.md, CONTRIBUTING.md and the docs pages.

A page's blocks run in order, in one folder, as a reader follows the page: Python blocks
in a fresh interpreter (a block whose first line is ``# NAME.py`` is the file the text
tells the reader to save: it is saved under that name, then run), shell blocks in bash
with this environment's ``dspsim`` and ``python`` first on the PATH, TOML and YAML blocks
(snippets of a pyproject or a chip file) must parse. The folder is either a fresh copy of
the checkout's tracked files, where the blocks may write only what git ignores (so a
reader who runs them keeps a clean checkout), or, for pages that work in the reader's own
project (:data:`PROJECT_PAGES`), an empty folder holding a copy of ``examples/``. A few
commands cannot run inside the test suite; :data:`NOT_RUN` says which and why, and each is
checked another way.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: TOML blocks are parsed on later Pythons
    tomllib = None  # type: ignore[assignment]

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
#: every document whose blocks must run
DOCUMENTS = [README, ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
#: pages written for the reader's own project folder (they save kernel and program files
#: there), not for a checkout of dspsim
PROJECT_PAGES = {"custom-kernels.md", "speed-of-light-and-uncertainty.md"}
SHELLS = {"bash", "sh"}
RUNS = {"python"} | SHELLS
PARSES = {"toml": tomllib.loads if tomllib else str, "yaml": yaml.safe_load}
#: seconds one block may take
BLOCK_TIMEOUT = 900

#: commands the suite cannot run inside itself, and why
NOT_RUN = {
    "environment": (re.compile(r"^(python3 -m venv |pip install |\. \.venv/bin/activate$)"),
                    "creates or fills the environment this test runs in"),
    "test suite": (re.compile(r"^pytest\b"), "the test suite, of which this test is part"),
    "benchmark": (re.compile(r"^python benchmarks/"),
                  "measures wall-clock time, which tests never assert; its options are parsed"),
    "lint gate": (re.compile(r"^(ruff|mypy)\b"),
                  "needs the lint extra, which CI installs after the tests; CI runs it"),
}


@dataclass(frozen=True)
class Block:
    """One fenced block of a document."""

    line: int  # of the opening fence, counting from 1
    language: str
    text: str


@dataclass(frozen=True)
class Ran:
    """What one block printed."""

    block: Block
    output: str  # stdout then stderr


def blocks(document: Path, languages=RUNS | set(PARSES)) -> list[Block]:
    """Every fenced block of ``document`` in one of ``languages``, in page order."""
    found, lines = [], document.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        match = re.match(r"^```(\S*)", lines[index])
        if not match:
            index += 1
            continue
        end = next(i for i in range(index + 1, len(lines)) if lines[i].startswith("```"))
        if match.group(1) in languages:
            found.append(Block(index + 1, match.group(1),
                               "\n".join(lines[index + 1:end]) + "\n"))
        index = end + 1
    return found


def shell_commands(text: str) -> list[str]:
    """The block's commands, one per line, continuation lines joined, ``&&`` chains split
    (so that a chain that makes an environment and then uses it still runs its use).
    A here-document stays one command with its body."""
    joined, commands = text.replace("\\\n", " "), []
    lines = iter(joined.splitlines())
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        heredoc = re.search(r"<<-?\s*'?(\w+)'?", line)
        if heredoc:
            body = []
            for inner in lines:
                body.append(inner)
                if inner.strip() == heredoc.group(1):
                    break
            commands.append("\n".join([line, *body]))
            continue
        commands.extend(part.strip() for part in line.split(" && "))
    return commands


def not_run_reason(command: str) -> str | None:
    """Which of :data:`NOT_RUN` ``command`` is, or None if the suite runs it."""
    return next((kind for kind, (pattern, _) in NOT_RUN.items() if pattern.search(command)),
                None)


def pyproject_extras() -> dict[str, list[str]]:
    """The optional dependencies pyproject.toml declares, by extra. Python 3.10 has no
    TOML reader; there the section is read as the plain lists it is written as."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    if tomllib is None:
        section = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
        return {match.group(1): re.findall(r'"([^"]+)"', match.group(2))
                for match in re.finditer(r"^([\w-]+)\s*=\s*\[(.*?)\]\s*$", section,
                                         flags=re.M | re.S)}
    return tomllib.loads(text)["project"]["optional-dependencies"]


def check_not_run(kind: str, command: str) -> None:
    """What can be checked of a command the suite does not run."""
    extras = pyproject_extras()
    for part in command.split("&&"):
        words = shlex.split(part, comments=True)
        if words[:2] == ["pip", "install"]:
            for target in (word for word in words[2:] if word not in ("-e", "--editable")):
                wanted = re.fullmatch(r"\.(?:\[([\w,-]+)\])?", target)
                assert wanted, f"pip installs {target!r}, not this checkout"
                for extra in filter(None, (wanted.group(1) or "").split(",")):
                    assert extra in extras, f"no extra {extra!r} in pyproject.toml"
        if words[:1] == ["pytest"] and "-n" in words:
            assert any(d.startswith("pytest-xdist") for d in extras["test"])
    if kind == "lint gate":
        assert any(d.startswith(command.split()[0]) for d in extras["lint"])
        ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
        assert re.search(rf"^\s*if ! {re.escape(command)} ", ci, re.M), \
            f"{command!r} is not a step of .ci/run"
    if kind == "benchmark":
        words = shlex.split(command, comments=True)
        spec = importlib.util.spec_from_file_location("doc_benchmark", ROOT / words[1])
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # its dataclasses look their module up
        sys.path.insert(0, str(ROOT / "benchmarks"))
        try:
            spec.loader.exec_module(module)
        finally:
            sys.path.remove(str(ROOT / "benchmarks"))
            del sys.modules[spec.name]
        module.build_parser().parse_args(words[2:])  # exits (fails the test) on a bad option


def fresh_checkout(destination: Path) -> Path:
    """A copy of the tracked files (or of the tree, outside a git checkout), keeping the
    package's folder links (dspsim/sim -> ../sim)."""
    copy = destination / "checkout"
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True)
    if listed.returncode == 0 and listed.stdout:
        for name in filter(None, listed.stdout.decode().split("\0")):
            source, target = ROOT / name, copy / name
            if source.is_symlink():
                target.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(os.readlink(source), target)
            elif source.is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
    else:
        shutil.copytree(ROOT, copy, symlinks=True, ignore=shutil.ignore_patterns(
            ".git", ".venv", "__pycache__", ".pytest_cache", ".hypothesis", "sweeps", "runs"))
    (copy / "traces").mkdir(exist_ok=True)
    return copy


def project_folder(destination: Path) -> Path:
    """An empty project folder with the checkout's ``examples/``."""
    folder = destination / "project"
    shutil.copytree(ROOT / "examples", folder / "examples")
    return folder


def environment() -> dict[str, str]:
    """This interpreter's folder first on the PATH (its ``dspsim`` and ``python``), plots
    drawn without a display."""
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["MPLBACKEND"] = "Agg"
    return env


def files_in(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder`` by relative path, with its size and change time."""
    return {str(path.relative_to(folder)): (path.stat().st_size, path.stat().st_mtime_ns)
            for path in folder.rglob("*") if path.is_file()}


def check_writes_only_ignored(checkout: Path, before: dict, where: str) -> None:
    """Fail when a block changed a tracked file or made one git would not ignore."""
    after = files_in(checkout)
    changed = sorted(name for name in before if after.get(name) != before[name])
    assert not changed, f"{where} changes or removes files of the checkout: {changed}"
    made = sorted(set(after) - set(before))
    if not made or not (ROOT / ".git").exists():
        return
    ignored = subprocess.run(["git", "check-ignore", "--no-index", "--stdin"], cwd=ROOT,
                             input="\n".join(made), capture_output=True, text=True).stdout
    kept = sorted(set(made) - set(ignored.splitlines()))
    assert not kept, f"{where} writes outside the folders git ignores: {kept}"


def run_block(block: Block, folder: Path, where: str) -> str:
    """Run (or parse) one block in ``folder``; its output, or an AssertionError that says
    where and why it failed."""
    if block.language in PARSES:
        PARSES[block.language](block.text)
        return ""
    if block.language == "python":
        first = block.text.splitlines()[0]
        if re.fullmatch(r"# [\w.-]+\.py", first):
            (folder / first[2:]).write_text(block.text, encoding="utf-8")
        command = [sys.executable, "-c", block.text]
    else:
        script = []
        for line in shell_commands(block.text):
            kind = not_run_reason(line)
            if kind:
                check_not_run(kind, line)
            else:
                script.append(line)
        if not script:
            return ""
        command = ["bash", "-e", "-o", "pipefail", "-c", "\n".join(script)]
    proc = subprocess.run(command, cwd=folder, capture_output=True, text=True,
                          env=environment(), timeout=BLOCK_TIMEOUT)
    assert proc.returncode == 0, f"{where}:\n{block.text}\n{proc.stdout[-2000:]}\n" \
                                 f"{proc.stderr[-4000:]}"
    return proc.stdout + proc.stderr


def run_document(document: Path, destination: Path) -> list[Ran]:
    """Run every block of ``document`` in order, in a folder made under ``destination``
    (a fresh checkout, or a project folder for :data:`PROJECT_PAGES`)."""
    in_checkout = document.name not in PROJECT_PAGES
    folder = fresh_checkout(destination) if in_checkout else project_folder(destination)
    before = files_in(folder)
    ran = []
    for block in blocks(document):
        where = f"{document.relative_to(ROOT)} line {block.line}"
        ran.append(Ran(block, run_block(block, folder, where)))
        if in_checkout:
            check_writes_only_ignored(folder, before, where)
    return ran
