"""mkdocs hook: fills the chip-key reference page from the chip schema at build time.

The page ``chip-keys.md`` holds the marker below; the hook replaces it with the tables
:func:`dspsim.sim.chip.reference.chip_key_reference` generates from the schema, the key
meanings and the packaged chip files, so that the reference cannot drift from the code.
"""
from __future__ import annotations

from pathlib import Path

from dspsim.sim.chip.load import load_config, packaged_chips
from dspsim.sim.chip.reference import chip_key_reference

MARKER = "<!-- chip-keys: generated from the chip schema -->"


def generated_reference() -> str:
    """The reference tables for every packaged chip, by chip name."""
    chips = {}
    for _, path in sorted(packaged_chips().items()):
        chips[load_config(path).name] = Path(path).read_text(encoding="utf-8")
    return chip_key_reference(chips)


def on_page_markdown(markdown: str, page, **_) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, generated_reference())
