"""mkdocs hook: fills the operator catalogue from the operator library at build time.

The page ``operators.md`` holds the marker below; the hook replaces it with a table of
every packaged operator (C arguments, parameters, formula, instructions per vector
iteration) read from :data:`dspsim.kernels.OPERATORS`, so the page lists exactly what
the library offers.
"""
from __future__ import annotations

from dspsim.kernels import OPERATORS

MARKER = "<!-- operators: generated from the operator library -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("*", "\\*").replace("<", "&lt;") or "—"


def _param(param) -> str:
    text = param.name
    if param.minimum is not None:
        text += f" ≥ {param.minimum:g}"
    if param.default is not None:
        text += f" (default {param.default:g})"
    return text


def catalogue() -> str:
    """A Markdown table of every operator of the library, in the library's order."""
    rows = ["| operator | C arguments | parameters | result | instructions per vector |",
            "|---|---|---|---|---|"]
    for op in OPERATORS.values():
        mix = ", ".join(f"{name} {count}" for name, count in op.mix.items())
        params = "; ".join(_param(p) for p in op.params)
        rows.append(f"| `{op.stem}` | `{', '.join(op.args)}` | {_cell(params)} | "
                    f"{_cell(' '.join(op.formula.split()))} | {mix} |")
    return "\n".join(rows) + "\n"


def on_page_markdown(markdown: str, page, **_) -> str:
    return markdown.replace(MARKER, catalogue()) if MARKER in markdown else markdown
