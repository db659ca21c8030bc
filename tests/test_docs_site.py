"""The docs site's pages and generated tables: every page is in the navigation, the
operator catalogue lists every operator of the library. (``mkdocs build --strict`` in
.ci/run builds the site itself.)"""
from __future__ import annotations

import argparse
import importlib.util
import re
from pathlib import Path

from dspsim.cli.main import build_parser
from dspsim.kernels import OPERATORS

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _hook(name: str):
    spec = importlib.util.spec_from_file_location(f"docs_hook_{name}", DOCS / "hooks" / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_page_is_in_the_navigation_and_every_entry_is_a_page():
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = set(re.findall(r"^\s+- (?:[^:\n]+: )?([\w./-]+\.md)\s*$", config, flags=re.M))
    pages = {page.name for page in DOCS.glob("*.md")}
    assert nav == pages


def test_every_hook_is_configured():
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for hook in (DOCS / "hooks").glob("*.py"):
        assert f"docs/hooks/{hook.name}" in config


def test_the_operator_catalogue_lists_every_operator_with_its_arguments():
    hook = _hook("operators.py")
    source = (DOCS / "operators.md").read_text(encoding="utf-8")
    assert hook.MARKER in source
    page = hook.on_page_markdown(source, page=None)
    assert hook.MARKER not in page
    for op in OPERATORS.values():
        assert f"| `{op.stem}` | `{', '.join(op.args)}` |" in page
    assert "lambd ≥ 0 (default 0.5)" in page


def test_the_option_reference_shows_every_command_and_option():
    hook = _hook("commands.py")
    source = (DOCS / "commands.md").read_text(encoding="utf-8")
    assert hook.MARKER in source
    page = hook.on_page_markdown(source, page=None)
    commands = hook._subcommands(build_parser())
    assert {"run", "sweep", "program", "calibrate", "trace"} <= set(commands)
    for name, parser in commands.items():
        assert f"### dspsim {name}\n" in page
        for action in parser._actions:
            if action.option_strings and not isinstance(action, argparse._HelpAction):
                assert f"| `{', '.join(action.option_strings)}" in page, (name, action)
    assert "#### dspsim trace summary\n" in page
