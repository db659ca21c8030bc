"""Reading small YAML description files safely: bounded size, depth and alias expansion.

Chip and program descriptions are a few KiB of a few hundred values; a file far beyond
that is a wrong file or an alias bomb ("billion laughs"), refused with a clear error
before it costs memory or time. Duplicate keys are refused rather than silently dropped.
"""
from __future__ import annotations

from typing import Any

import yaml

from dspsim.sim.chip.textfile import read_small_text
from dspsim.sim.errors import ConfigError

MAX_FILE_BYTES = 1 << 20
MAX_YAML_DEPTH = 32
MAX_YAML_NODES = 100_000


class BoundedLoader(yaml.SafeLoader):
    """YAML's safe loader, bounded: nesting depth while parsing, and the size of the
    document once aliases are expanded (an alias bomb is a few lines of text that expand
    to billions of nodes); duplicate keys are refused rather than silently dropped."""

    def __init__(self, stream) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent, index):  # noqa: D102
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise YamlLimit(f"nested more than {MAX_YAML_DEPTH} levels deep")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def compose_document(self):  # noqa: D102
        node = super().compose_document()
        _check_expanded(node)
        return node


class YamlLimit(Exception):
    """A chip file over one of the bounds of :class:`BoundedLoader`."""


def _check_expanded(root) -> None:
    """Count the document's nodes with every alias expanded; refuse cycles and duplicates."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            on_path.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c in _children(node))
            if sizes[key] > MAX_YAML_NODES:
                raise YamlLimit(f"expands to more than {MAX_YAML_NODES:,} values once its "
                                 f"aliases are expanded")
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise YamlLimit("an alias refers to a value that contains it")
        if isinstance(node, yaml.MappingNode):
            seen = set()
            for item_key, _ in node.value:
                if isinstance(item_key, yaml.ScalarNode):
                    if item_key.value in seen:
                        line = item_key.start_mark.line + 1
                        raise YamlLimit(f"line {line}: duplicate key {item_key.value!r}")
                    seen.add(item_key.value)
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)


def _children(node) -> list:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def read_yaml_text(path: str, what: str = "a chip description") -> str:
    """The text of a description file: bounded in size, UTF-8, not binary, not a pipe."""
    return read_small_text(path, limit=MAX_FILE_BYTES, what=f"{what} in YAML",
                           too_large=f"{what} is a small YAML file")


def parse_yaml(text: str, source: str, what: str = "a chip description") -> Any:
    """Parse a description file's text with the bounded safe loader."""
    loader = None
    try:
        loader = BoundedLoader(text)  # it reads the text at once: a bad character fails here
        return loader.get_single_data()
    except YamlLimit as exc:
        raise ConfigError(f"{source}: {exc}; {what} is a small YAML file") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {yaml_problem(exc, text)}") from None
    except RecursionError:
        raise ConfigError(f"{source}: nested too deeply; {what} is a small YAML "
                          f"file") from None
    finally:
        if loader is not None:
            loader.dispose()


def yaml_problem(exc: yaml.YAMLError, text: str) -> str:
    """A YAML error on one line: where (line and column, from 1) and what."""
    if isinstance(exc, yaml.reader.ReaderError):
        position = max(0, min(exc.position, len(text)))
        line = text.count("\n", 0, position) + 1
        column = position - (text.rfind("\n", 0, position) + 1) + 1
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        return (f"line {line}, column {column}: character {chr(code)!r} (U+{code:04X}) is "
                f"not allowed in YAML text; remove it, or write it as an escape such as "
                f"\"\\x{code:02x}\" inside a double-quoted string" if code < 0x100 else
                f"line {line}, column {column}: character U+{code:04X} is not allowed in YAML "
                f"text; remove it")
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        what = "; ".join(part for part in (exc.context, exc.problem) if part)
        return where + " ".join(what.split())
    return " ".join(str(exc).split())

