"""The chip-key reference, generated from the schema so that it cannot drift from it.

:func:`schema_keys` walks :data:`~dspsim.sim.chip.keys.CHIP_SCHEMA`; :func:`key_table` gives
each key its unit (from the key's name, e.g. ``_gbps``, or from
:data:`~dspsim.sim.chip.key_docs.KEY_DOCS`), its allowed values (the schema's kind and
constraints plus the documented rule) and its meaning; :func:`chip_values` lists a chip
file's values with the comment that gives each one's source. :func:`chip_key_reference`
joins them into the Markdown page the docs site builds.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import yaml

from dspsim.sim.chip.key_docs import KEY_DOCS, KeyDoc
from dspsim.sim.chip.keys import CHIP_SCHEMA
from dspsim.sim.chip.schema import NUMBER_MAGNITUDES, Field
from dspsim.sim.errors import ConfigError

#: Units named by a key's last word(s), longest first.
SUFFIX_UNITS = (
    ("_bytes_per_cycle", "bytes/cycle"), ("_gbps", "GB/s"), ("_mhz", "MHz"),
    ("_bits", "bits"), ("_bytes", "bytes"), ("_kib", "KiB"), ("_mib", "MiB"),
    ("_cycles_per_tile", "cycles/tile"), ("_cycles", "cycles"),
)

#: Names the walk gives the free keys of a mapping and the positions of a list.
_FREE_NAMES = {"vector.units": "<unit>", "vector.instructions": "<instruction>",
               "expand": "<instruction>"}


@dataclass(frozen=True)
class KeyRow:
    """One key of the chip format as the reference shows it."""

    key: str
    unit: str
    allowed: str
    meaning: str


def _free_name(path: str) -> str:
    return _FREE_NAMES.get(path) or _FREE_NAMES.get(path.rsplit(".", 1)[-1], "<name>")


def schema_keys(field: Field | None = None, prefix: str = "") -> Iterator[tuple[str, Field]]:
    """Every key path of the chip format with its field, parents before children."""
    field = field or Field("section", schema=CHIP_SCHEMA)
    children: list[tuple[str, Field]] = []
    if field.kind == "section" and field.schema is not None:
        children = list(field.schema.items())
    elif field.kind == "mapping" and field.item is not None:
        children = [(_free_name(prefix), field.item)]
    elif field.kind == "list" and field.item is not None and field.item.kind == "section":
        children = [("<i>", field.item)]
    for name, sub in children:
        path = f"{prefix}.{name}" if prefix else name
        yield path, sub
        yield from schema_keys(sub, path)


def _unit(key: str, field: Field, doc: KeyDoc) -> str:
    if doc.unit:
        return doc.unit
    for suffix, unit in SUFFIX_UNITS:
        if key.endswith(suffix):
            return unit
    if field.kind in ("int", "number"):
        raise ConfigError(f"chip key {key}: a number with no unit in its name; give "
                          "KeyDoc(unit=...) in dspsim.sim.chip.key_docs")
    return ""


def _allowed(key: str, field: Field, doc: KeyDoc) -> str:
    kinds = {"int": "whole number", "number": "number", "str": "text",
             "section": "section", "mapping": "mapping", "list": "list"}
    parts = [kinds[field.kind]]
    item = field.item
    if field.kind == "list" and item is not None and item.kind != "section":
        parts = [f"list of {'name' if item.kind == 'str' else kinds[item.kind]}s"]
    if field.positive:
        parts.append("> 0")
    if field.non_negative:
        parts.append("≥ 0")
    if doc.rule:
        parts.append(doc.rule)
    elif field.check is not None:
        raise ConfigError(f"chip key {key}: a custom check with no rule documented; give "
                          "KeyDoc(rule=...) in dspsim.sim.chip.key_docs")
    if field.optional:
        parts.append("optional")
    return ", ".join(parts)


def key_table() -> list[KeyRow]:
    """Every key of the chip format, documented; a key without a meaning, or a meaning
    for no key, is an error (so the reference always matches the schema)."""
    walked = list(schema_keys())
    undocumented = [key for key, _ in walked if key not in KEY_DOCS]
    stale = sorted(set(KEY_DOCS) - {key for key, _ in walked})
    if undocumented or stale:
        raise ConfigError(f"dspsim.sim.chip.key_docs.KEY_DOCS is out of step with the chip "
                          f"schema: undocumented {undocumented}, no such key {stale}")
    return [KeyRow(key, _unit(key, field, KEY_DOCS[key]), _allowed(key, field, KEY_DOCS[key]),
                   KEY_DOCS[key].meaning) for key, field in walked]


def _line_comments(text: str) -> dict[int, str]:
    """Each value line's comment (after the line's last YAML token, so a ``#`` in a value
    is never taken for one), by line number, with the comment-only lines that continue it
    in the same column."""
    ends: dict[int, int] = {}
    for token in yaml.scan(text, Loader=yaml.SafeLoader):
        line = token.end_mark.line
        ends[line] = max(ends.get(line, 0), token.end_mark.column)
    comments: dict[int, str] = {}
    open_comment: tuple[int, int] | None = None  # (line it belongs to, its column)
    for number, line in enumerate(text.splitlines()):
        if number not in ends:
            if open_comment and line.strip().startswith("#") and \
                    line.index("#") == open_comment[1]:
                owner = open_comment[0]
                comments[owner] += " " + line.strip().lstrip("#").strip()
            else:
                open_comment = None
            continue
        column = line.find("#", ends[number])
        while column > 0 and line[column - 1] not in " \t":
            column = line.find("#", column + 1)
        open_comment = None
        if column >= 0:
            comments[number] = line[column:].lstrip("#").strip()
            open_comment = (number, column)
    return comments


def chip_values(text: str) -> list[tuple[str, str, str]]:
    """(key path, value as written, its line's comment) for every value of a chip file;
    a collection written on one line (``{unit: alu, occupancy_cycles: 1}``) is one value."""
    comments = _line_comments(text)
    rows: list[tuple[str, str, str]] = []

    def walk(node: yaml.Node, path: str) -> None:
        one_line = node.start_mark.line == node.end_mark.line
        if isinstance(node, yaml.ScalarNode) or one_line:
            value = text[node.start_mark.index:node.end_mark.index]
            rows.append((path, value, comments.get(node.start_mark.line, "")))
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                walk(value, f"{path}.{key.value}" if path else key.value)
        else:
            for index, item in enumerate(node.value):
                walk(item, f"{path}.{index}")

    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if root is not None:
        walk(root, "")
    return rows


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ") or "—"


def chip_key_reference(chips: dict[str, str]) -> str:
    """The Markdown reference: every key of the format, then each chip's values with their
    sources. ``chips`` maps a chip's name to the text of its file."""
    low, high = NUMBER_MAGNITUDES
    out = ["Every key a chip file may hold, generated from the chip schema when the site is "
           "built. Every number may also be 0 or of magnitude "
           f"{low:g} to {high:g}; a key marked optional may be left out. A path with "
           "`<unit>` or `<instruction>` stands for any name, `<i>` for a list position "
           "(0, 1, ...), as in `--set dma.controllers.1.count=6`.", "",
           "## Every key", "",
           "| key | unit | allowed values | meaning |", "|---|---|---|---|"]
    out += [f"| `{row.key}` | {_cell(row.unit)} | {_cell(row.allowed)} | {_cell(row.meaning)} |"
            for row in key_table()]
    for name, text in chips.items():
        out += ["", f"## {name}: values and sources", "",
                "The value of every key as the packaged file writes it, and its comment: "
                "a value from a public document names it; the others say `assumed`.", "",
                "| key | value | source |", "|---|---|---|"]
        out += [f"| `{key}` | `{_cell(value)}` | {_cell(comment)} |"
                for key, value, comment in chip_values(text)]
    return "\n".join(out) + "\n"
