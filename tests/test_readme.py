"""Every Python and shell block of README.md and of the docs site's pages runs as written.

Each block runs in a fresh copy of the checkout's tracked files (so the checkout stays
clean), Python blocks in a fresh interpreter, shell blocks in bash with this environment's
``dspsim`` and ``python`` on the PATH, and may write only where git ignores (so that a
reader who runs it leaves a clean checkout). A few commands cannot run inside the test
suite; ``NOT_RUN`` says which and why, and each is checked another way.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
#: every page whose blocks must run: the README, the contributors' guide, the docs site
#: pages whose blocks build on each other run in order, in one folder, by their own tests
#: (tests/test_docs_pages.py, tests/test_docs_studies.py)
IN_ORDER = {"custom-kernels.md", "speed-of-light-and-uncertainty.md", "studies.md"}
DOCUMENTS = [README, ROOT / "CONTRIBUTING.md"] + sorted(
    page for page in (ROOT / "docs").glob("*.md") if page.name not in IN_ORDER)
LANGUAGES = {"python", "bash", "sh"}

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


def readme_blocks(document: Path = README) -> list[tuple[int, str, str]]:
    """(line number, language, text) of every fenced block in a language that runs."""
    blocks, lines = [], document.read_text(encoding="utf-8").splitlines()
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
            if name and (ROOT / name).is_symlink():  # dspsim/sim -> ../sim and the like
                (copy / name).parent.mkdir(parents=True, exist_ok=True)
                os.symlink(os.readlink(ROOT / name), copy / name)
            elif name and (ROOT / name).is_file():
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


def pyproject_extras() -> dict[str, list[str]]:
    """The optional dependencies pyproject.toml declares, by extra. Python 3.10 has no
    TOML reader; there the section is read as the plain lists it is written as."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    try:
        import tomllib
    except ModuleNotFoundError:
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


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder`` by relative path, with its size and change time."""
    return {str(path.relative_to(folder)): (path.stat().st_size, path.stat().st_mtime_ns)
            for path in folder.rglob("*") if path.is_file()}


def check_writes_only_ignored(checkout: Path, before: dict, where: str) -> None:
    """Fail when a block changed a tracked file or made one git would not ignore."""
    after = _files(checkout)
    changed = sorted(name for name in before if after.get(name) != before[name])
    assert not changed, f"{where} changes or removes files of the checkout: {changed}"
    made = sorted(set(after) - set(before))
    if not made or not (ROOT / ".git").exists():
        return
    ignored = subprocess.run(["git", "check-ignore", "--no-index", "--stdin"], cwd=ROOT,
                             input="\n".join(made), capture_output=True, text=True).stdout
    kept = sorted(set(made) - set(ignored.splitlines()))
    assert not kept, f"{where} writes outside the folders git ignores: {kept}"


BLOCKS = [(document, *block) for document in DOCUMENTS for block in readme_blocks(document)]


@pytest.mark.parametrize("document, line, language, text", BLOCKS,
                         ids=[f"{doc.relative_to(ROOT)}:{line}-{language}"
                              for doc, line, language, _ in BLOCKS])
def test_readme_block_runs_as_written(tmp_path, document, line, language, text):
    checkout = fresh_checkout(tmp_path)
    before = _files(checkout)
    where = f"{document.relative_to(ROOT)} line {line}"
    if language == "python":
        proc = subprocess.run([sys.executable, "-c", text], cwd=checkout, capture_output=True,
                              text=True, env=_environment(), timeout=600)
        assert proc.returncode == 0, f"{where}:\n{proc.stderr}"
        check_writes_only_ignored(checkout, before, where)
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
    assert proc.returncode == 0, f"{where}:\n{proc.stdout[-2000:]}\n{proc.stderr}"
    check_writes_only_ignored(checkout, before, where)


def test_the_blocks_that_run_include_the_quick_start():
    commands = [c for _, _, lang, text in BLOCKS if lang != "python"
                for c in shell_commands(text)]
    run = [c for c in commands if not not_run_reason(c)]
    assert any(c.startswith("dspsim run fp_relu_grad_s --chip ft78ne") for c in run)
    assert any(c.startswith("dspsim sweep") for c in run)
    # every exception is used, so the list does not outlive the documents
    assert {not_run_reason(c) for c in commands} >= set(NOT_RUN)
    assert sum(lang == "python" for _, _, lang, _ in BLOCKS) >= 3
    assert len(DOCUMENTS) > 5 and all(doc.read_text(encoding="utf-8").strip()
                                      for doc in DOCUMENTS)


def _section(text: str, title: str) -> str:
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_quick_start_is_two_commands_and_ci_runs_the_second():
    """The README's quick start: one command installs and runs the main job, one installs
    the test extras and runs the whole suite, exactly as .ci/run does."""
    text = README.read_text(encoding="utf-8")
    quick = [block for line, language, block in readme_blocks(README)
             if f"\n{block}" in _section(text, "Quick start")]
    assert len(quick) == 2
    install_and_run, install_and_test = (" ".join(block.replace("\\\n", " ").split())
                                         for block in quick)
    assert install_and_run.endswith(
        "pip install . && dspsim run fp_relu_grad_s --chip ft78ne --length 4194304 "
        "--core-mask 0xff")
    assert 'pip install ".[test]" && pytest' in install_and_test
    ci = " ".join((ROOT / ".ci" / "run").read_text(encoding="utf-8").replace("\\\n", " ")
                  .split())
    assert install_and_test in ci


def test_the_readme_is_short_and_fits_80_columns():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300
    wide = [number for number, line in enumerate(lines, 1) if len(line) > 80]
    assert not wide, f"README lines wider than 80 columns: {wide}"


def test_a_block_writing_outside_the_ignored_folders_is_caught(tmp_path):
    (tmp_path / "traces").mkdir()
    (tmp_path / "kept.txt").write_text("tracked")
    before = _files(tmp_path)
    (tmp_path / "traces" / "one.pftrace").write_bytes(b"ignored")
    check_writes_only_ignored(tmp_path, before, "a block")  # traces/ is ignored
    if not (ROOT / ".git").exists():
        pytest.skip("which files git ignores needs a git checkout")
    (tmp_path / "eight.png").write_bytes(b"not ignored")
    with pytest.raises(AssertionError, match=r"outside the folders git ignores: \['eight.png'\]"):
        check_writes_only_ignored(tmp_path, before, "a block")
    (tmp_path / "eight.png").unlink()
    (tmp_path / "kept.txt").write_text("changed by the block")
    with pytest.raises(AssertionError, match=r"changes or removes files.*kept.txt"):
        check_writes_only_ignored(tmp_path, before, "a block")


def test_every_picture_in_docs_is_shown_on_a_page():
    pages = "\n".join(page.read_text(encoding="utf-8") for page in DOCUMENTS)
    pictures = sorted((ROOT / "docs").glob("*.png"))
    assert pictures
    unshown = [p.name for p in pictures if f"]({p.name})" not in pages]
    assert not unshown, f"pictures in docs/ that no page shows: {unshown}"


def test_the_extras_are_read_alike_with_and_without_a_toml_reader(monkeypatch):
    with_reader = pyproject_extras()
    monkeypatch.setitem(sys.modules, "tomllib", None)  # as on Python 3.10
    assert pyproject_extras() == with_reader
    assert {"test", "docs", "lint"} <= set(with_reader)
    assert "dask[distributed]>=2023.6" in with_reader["test"]
