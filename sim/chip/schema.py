"""Validating parsed YAML against a table of fields, with the key path of every problem.

A :class:`Field` says what one key must hold (a section of named keys, a mapping, a list,
a string or a number, with constraints); :func:`validate` walks a parsed document against
it and raises a ConfigError naming the file and the key path, e.g. ``my.yaml:
memory.ddr.peak_bandwidth_gbps: must be > 0, got -1``. Chip files and program files are
both described this way.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from dspsim.sim.errors import ConfigError

#: Magnitudes a number in a description may have (or be 0): beyond them no chip exists, and
#: products such as bytes per cycle (GB/s over MHz) would overflow or reach zero.
NUMBER_MAGNITUDES = (1e-6, 1e12)


class Field:
    """What one key must hold: a kind, and optional constraints."""

    def __init__(self, kind: str, *, optional: bool = False, positive: bool = False,
                 non_negative: bool = False, check: Callable[[Any], str | None] | None = None,
                 schema: Mapping[str, Field] | None = None, item: Field | None = None):
        self.kind = kind
        self.optional = optional
        self.positive = positive
        self.non_negative = non_negative
        self.check = check
        self.schema = schema
        self.item = item

    @property
    def fields(self) -> Mapping[str, Field]:
        """A section's named keys."""
        assert self.schema is not None, f"a {self.kind} field has no named keys"
        return self.schema

    @property
    def entry(self) -> Field:
        """What each entry of a mapping or a list holds."""
        assert self.item is not None, f"a {self.kind} field has no entries"
        return self.item


def type_name(value: Any) -> str:
    return type(value).__name__


def validate(node: Any, field: Field, path: str, source: str) -> Any:
    """Check ``node`` against ``field``; return it with sections converted to dicts."""

    def fail(message: str) -> ConfigError:
        return ConfigError(f"{source}: {path or '<top level>'}: {message}")

    kind = field.kind
    if kind == "section":
        if not isinstance(node, dict):
            raise fail(f"must be a mapping of keys, got {type_name(node)}")
        unknown = sorted(set(node) - set(field.fields))
        if unknown:
            raise fail(f"unknown key {unknown[0]!r}; allowed keys: {', '.join(field.fields)}")
        out: dict[str, Any] = {}
        for key, sub in field.fields.items():
            sub_path = f"{path}.{key}" if path else key
            if node.get(key) is None:
                if key in node and not sub.optional:
                    raise ConfigError(f"{source}: {sub_path}: must not be empty")
                if not sub.optional:
                    raise ConfigError(f"{source}: {sub_path}: missing key")
                out[key] = None
                continue
            out[key] = validate(node[key], sub, sub_path, source)
        return out
    if kind == "mapping":
        if not isinstance(node, dict) or not node:
            raise fail(f"must be a non-empty mapping, got {node!r}")
        return {str(k): validate(v, field.entry, f"{path}.{k}", source)
                for k, v in node.items()}
    if kind == "list":
        if not isinstance(node, list) or not node:
            raise fail(f"must be a non-empty list, got {node!r}")
        return [validate(v, field.entry, f"{path}[{i}]", source) for i, v in enumerate(node)]
    if kind == "str":
        if not isinstance(node, str) or not node:
            raise fail(f"must be a non-empty string, got {node!r}")
        problem = field.check(node) if field.check is not None else None
        if problem:
            raise fail(problem)
        return node
    # numbers: YAML booleans are ints to Python, but never a valid number here
    if isinstance(node, bool) or not isinstance(node, (int, float)):
        raise fail(f"must be a {'whole number' if kind == 'int' else 'number'}, got {node!r}")
    if kind == "int" and not isinstance(node, int):
        raise fail(f"must be a whole number, got {node!r}")
    if isinstance(node, float) and not math.isfinite(node):
        raise fail(f"must be finite, got {node!r}")
    if node and not NUMBER_MAGNITUDES[0] <= abs(node) <= NUMBER_MAGNITUDES[1]:
        shown = (f"an integer of {len(str(abs(node)))} digits"
                 if isinstance(node, int) and abs(node) >= 1e300 else f"{node:.6g}")
        raise fail(f"must be 0 or of magnitude {NUMBER_MAGNITUDES[0]:g} to "
                   f"{NUMBER_MAGNITUDES[1]:g}, got {shown}")
    if field.positive and node <= 0:
        raise fail(f"must be > 0, got {node}")
    if field.non_negative and node < 0:
        raise fail(f"must be >= 0, got {node}")
    if field.check is not None:
        problem = field.check(node)
        if problem:
            raise fail(problem)
    return node


def field_kind(root: Field, parts: tuple[str, ...]) -> str | None:
    """What ``root`` says the value at a key path holds: ``"int"`` (a whole number),
    ``"number"``, ``"str"``, a container kind, or None for a path it does not know.

    List positions and the names under a free mapping (``vector.units.alu``) are followed
    to the kind of their items.
    """
    field: Field | None = root
    for part in parts:
        if field is None:
            return None
        if field.kind == "section":
            field = field.fields.get(part)
        elif field.kind in ("mapping", "list"):
            field = field.item if field.kind == "mapping" or part.isdigit() else None
        else:
            return None
    return field.kind if field is not None else None
