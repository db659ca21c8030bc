"""README.md: its quick start is the two commands CI runs, it is short and fits 80
columns; and the block runner (``doc_blocks``) catches what it must."""
from __future__ import annotations

import doc_blocks
import pytest
from doc_blocks import (
    DOCUMENTS,
    NOT_RUN,
    README,
    ROOT,
    blocks,
    check_writes_only_ignored,
    files_in,
    not_run_reason,
    pyproject_extras,
    shell_commands,
)


def test_the_blocks_that_run_include_the_quick_start():
    every = [block for document in DOCUMENTS for block in blocks(document)]
    commands = [c for block in every if block.language != "python"
                for c in shell_commands(block.text)]
    run = [c for c in commands if not not_run_reason(c)]
    assert any(c.startswith("dspsim run fp_relu_grad_s --chip ft78ne") for c in run)
    assert any(c.startswith("dspsim sweep") for c in run)
    # every exception is used, so the list does not outlive the documents
    assert {not_run_reason(c) for c in commands} >= set(NOT_RUN)
    assert sum(block.language == "python" for block in every) >= 3
    assert len(DOCUMENTS) > 5 and all(doc.read_text(encoding="utf-8").strip()
                                      for doc in DOCUMENTS)


def test_a_here_document_stays_one_command():
    text = "cat > a.yaml <<'EOF'\nx: 1 && y\nEOF\ndspsim ops && dspsim chips\n"
    assert shell_commands(text) == ["cat > a.yaml <<'EOF'\nx: 1 && y\nEOF",
                                    "dspsim ops", "dspsim chips"]


def _section(text: str, title: str) -> str:
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_quick_start_is_two_commands_and_ci_runs_the_second():
    """The README's quick start: one command installs and runs the main job, one installs
    the test extras and runs the whole suite, exactly as .ci/run does."""
    text = README.read_text(encoding="utf-8")
    quick = [block.text for block in blocks(README)
             if f"\n{block.text}" in _section(text, "Quick start")]
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
    before = files_in(tmp_path)
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
    monkeypatch.setattr(doc_blocks, "tomllib", None)  # as on Python 3.10
    assert pyproject_extras() == with_reader
    assert {"test", "docs", "lint"} <= set(with_reader)
    assert "dask[distributed]>=2023.6" in with_reader["test"]
