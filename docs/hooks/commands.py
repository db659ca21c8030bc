"""mkdocs hook: fills the option reference of the commands page from the command line's
own parser at build time, so the page shows exactly what ``dspsim COMMAND --help`` does.
"""
from __future__ import annotations

import argparse

from dspsim.cli.main import build_parser

MARKER = "<!-- commands: generated from the command-line parser -->"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|").replace("*", "\\*").replace("<", "&lt;")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _section(name: str, parser: argparse.ArgumentParser, level: int) -> list[str]:
    usage = " ".join(parser.format_usage().replace("usage:", "").split())
    out = [f"{'#' * level} {name}", "", f"```text\n{usage}\n```", ""]
    if parser.description:
        out += [_cell(parser.description), ""]
    formatter = parser._get_formatter()
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        if action.help == argparse.SUPPRESS:
            continue
        names = ", ".join(action.option_strings) or action.dest
        if action.option_strings and action.nargs != 0:
            names += f" {formatter._format_args(action, action.dest.upper())}"
        meaning = formatter._expand_help(action) if action.help else ""
        rows.append(f"| `{names}` | {_cell(meaning)} |")
    if rows:
        out += ["| argument | meaning |", "|---|---|", *rows, ""]
    for sub_name, sub in _subcommands(parser).items():
        out += _section(f"{name} {sub_name}", sub, level + 1)
    return out


def option_reference() -> str:
    """Every command's usage, description and arguments, as Markdown."""
    out: list[str] = []
    for name, parser in _subcommands(build_parser()).items():
        out += _section(f"dspsim {name}", parser, 3)
    return "\n".join(out) + "\n"


def on_page_markdown(markdown: str, page, **_) -> str:
    return markdown.replace(MARKER, option_reference()) if MARKER in markdown else markdown
