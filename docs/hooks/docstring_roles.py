"""mkdocs hook: the docstrings' Sphinx roles shown as plain code in the API reference.

The code's docstrings name other objects as Sphinx does (``:class:`Chip```,
``:func:`~dspsim.sweep.sweep```); the Markdown renderer leaves the role in front of the
code span. This drops the role (and a ``~``'s leading module path, as Sphinx would).
"""
from __future__ import annotations

import re

ROLE = re.compile(r":(?:mod|class|func|meth|attr|data|exc|obj|const):<code>(~?)([^<]*)</code>")


def _plain(match: re.Match) -> str:
    name = match.group(2).rsplit(".", 1)[-1] if match.group(1) else match.group(2)
    return f"<code>{name}</code>"


def on_page_content(html: str, page, **_) -> str:
    return ROLE.sub(_plain, html)
