"""Changing numbers in a chip description by key path: what-if axes and fitted values.

A key path names one value in the parsed chip YAML with dots between the keys, and list
positions as numbers: ``vector.lane_width_bits``, ``memory.ddr.peak_bandwidth_gbps``,
``dma.controllers.1.count``, ``cores``. Overrides apply to the parsed description before
validation, so a combination the chip cannot have (an L2 too small for its reserve, a
count of zero) is refused by the same checks as a hand-edited file.
"""
from __future__ import annotations

import contextlib
import copy
import math
from collections.abc import Iterable, Mapping
from typing import Any, TypeGuard

import yaml

from dspsim.sim.chip.keys import CHIP_SCHEMA
from dspsim.sim.chip.schema import Field, field_kind
from dspsim.sim.errors import ArgumentError, ConfigError

#: Longest key path a user may give; chip descriptions are a few levels deep.
MAX_KEY_PARTS = 16


def split_key(key: str) -> tuple[str, ...]:
    """The parts of a key path, refusing empty or malformed ones."""
    if not isinstance(key, str) or not key.strip():
        raise ArgumentError(f"chip key {key!r} is empty; name a value in the chip file, "
                            f"for example vector.lane_width_bits")
    parts = tuple(key.strip().split("."))
    if any(not part for part in parts) or len(parts) > MAX_KEY_PARTS:
        raise ArgumentError(f"chip key {key!r} is not a dotted path of keys, for example "
                            f"memory.ddr.peak_bandwidth_gbps")
    return parts


def _step(node: Any, part: str, walked: str, key: str, source: str) -> Any:
    if isinstance(node, Mapping):
        if part in node:
            return node[part]
        choices = ", ".join(sorted(str(k) for k in node)) or "none"
        where = f"under {walked!r}" if walked else "at the top"
        raise ConfigError(f"{source}: chip key {key!r}: no {part!r} {where}; the keys there "
                          f"are: {choices}")
    if isinstance(node, list):
        if part.isdigit() and int(part) < len(node):
            return node[int(part)]
        raise ConfigError(f"{source}: chip key {key!r}: {walked!r} is a list of {len(node)}; "
                          f"use a position 0..{len(node) - 1}")
    raise ConfigError(f"{source}: chip key {key!r}: {walked!r} is a value, not a section")


def get_value(raw: Any, key: str, source: str = "chip") -> Any:
    """The value at ``key`` in a parsed chip description."""
    node, walked = raw, ""
    for part in split_key(key):
        node = _step(node, part, walked, key, source)
        walked = f"{walked}.{part}" if walked else part
    return node


def is_number(value: Any) -> TypeGuard[int | float]:
    """True for an int or float (not a bool), the only values an override may replace."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def numeric_value(raw: Any, key: str, source: str = "chip") -> float:
    """The number at ``key``; a ConfigError if the key holds anything else."""
    value = get_value(raw, key, source)
    if not is_number(value):
        held = (f"a section ({', '.join(map(str, value))})" if isinstance(value, Mapping)
                else f"a list of {len(value)}" if isinstance(value, list) else repr(value))
        raise ConfigError(f"{source}: chip key {key!r} holds {held:.200}, not a number; only "
                          f"numbers can be swept or fitted")
    return value


def whole_number_key(key: str) -> bool:
    """True where the chip format takes only whole numbers (counts, sizes, widths): a
    value there must be rounded before it is applied."""
    return field_kind(Field("section", schema=CHIP_SCHEMA), split_key(key)) == "int"


def numeric_keys(raw: Any, prefix: str = "") -> list[str]:
    """Every key path in a parsed description that holds a number."""
    found: list[str] = []
    items: Iterable[tuple[Any, Any]]
    if isinstance(raw, Mapping):
        items = raw.items()
    elif isinstance(raw, list):
        items = enumerate(raw)
    else:
        return found
    for part, value in items:
        path = f"{prefix}.{part}" if prefix else str(part)
        if is_number(value):
            found.append(path)
        else:
            found.extend(numeric_keys(value, path))
    return found


def apply_overrides(raw: Any, overrides: Mapping[str, Any], source: str = "chip") -> Any:
    """A copy of a parsed description with each key's number replaced.

    Keys must already exist and hold numbers: a typo must not silently add a key the
    model never reads. An int stays an int when the new value is integral.
    """
    changed = copy.deepcopy(raw)
    for key, value in overrides.items():
        parts = split_key(key)
        old = numeric_value(changed, key, source)
        if not is_number(value) or not math.isfinite(value):
            raise ArgumentError(f"chip key {key!r}: {value!r} is not a finite number")
        if isinstance(old, int) and float(value).is_integer():
            value = int(value)
        parent = changed if len(parts) == 1 else get_value(changed, ".".join(parts[:-1]),
                                                             source)
        last = parts[-1]
        parent[int(last) if isinstance(parent, list) else last] = value
    return changed


def parse_values(text: str, key: str) -> list[float]:
    """The comma-separated numbers of a ``KEY=V1,V2`` axis, read as YAML scalars."""
    values = []
    for item in text.split(","):
        item = item.strip()
        try:
            value = yaml.safe_load(item) if item else None
        except yaml.YAMLError:
            value = None
        if isinstance(value, str):  # YAML 1.1 reads 1e300 (no dot) as text
            with contextlib.suppress(ValueError):
                value = float(value)
        if is_number(value) and math.isfinite(value):
            values.append(value)
            continue
        raise ArgumentError(f"--set {key}: {item!r} is not a finite number; give "
                            f"{key}=V1,V2,...")
    return values


def parse_set(text: str) -> tuple[str, list[float]]:
    """Split ``KEY=V1,V2,...`` into the key and its values."""
    key, sep, values = text.partition("=")
    if not sep or not values.strip():
        raise ArgumentError(f"--set {text!r}: expected KEY=V1,V2,..., for example "
                            f"vector.lane_width_bits=128,256")
    split_key(key)
    return key.strip(), parse_values(values, key.strip())
