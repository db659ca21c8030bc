"""Plausible ranges of a chip description's assumed values: what an estimate's band is made of.

A value marked ``# assumed`` may say how far off it could be, on its own line::

    efficiency: 0.8            # assumed, range 0.7..0.9: DDR3 controllers reach 70-90%
    base_address: 0x0C000000   # assumed, range none: an address moves operands, not time

or in a section of its own, by key path (as ``--set`` names keys)::

    assumed_ranges:
      memory.ddr.efficiency: {low: 0.7, high: 0.9, reason: DDR3 controllers reach 70-90%}

A range holds the value, has a reason, and both its ends must be whole numbers where the
key is (a count, a width). ``range none`` says, with its reason, that the value has no
range that matters to timing. A key given both ways is an error. :func:`check_range_ends`
also builds the chip at each end, so that a range the chip cannot have is reported by the
key and the end rather than in the middle of an uncertainty study.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

from dspsim.sim.chip.overrides import apply_overrides, get_value, is_number, whole_number_key
from dspsim.sim.chip.yamlfile import BoundedLoader
from dspsim.sim.errors import ConfigError

#: The structured form's top-level section.
SECTION = "assumed_ranges"
_NUMBER = r"[-+]?(?:0x[0-9a-fA-F_]+|\d[\d_]*(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)"
_RANGE = re.compile(rf"\brange\s+(?:(?P<none>none)\b|(?P<low>{_NUMBER})\s*\.\.\s*"
                    rf"(?P<high>{_NUMBER}))")
_ASSUMED = re.compile(r"\bassumed\b")


@dataclass(frozen=True)
class AssumedRange:
    """One assumed value's plausible range (``low``/``high`` None: ``range none``)."""

    key: str
    value: float
    low: float | None
    high: float | None
    reason: str
    line: int | None = None  # in the chip file, for the comment form

    @property
    def has_range(self) -> bool:
        return self.low is not None

    @property
    def bounds(self) -> tuple[float, float]:
        """``(low, high)`` of a key that has a range."""
        assert self.low is not None and self.high is not None, f"{self.key} has no range"
        return self.low, self.high


def _number(text: str) -> float:
    text = text.replace("_", "")
    return float(int(text, 16)) if text.lower().lstrip("+-").startswith("0x") else float(text)


def _scalars(node, path: str = "") -> Iterator[tuple[str, yaml.ScalarNode]]:
    """Every scalar of a composed YAML document with its key path."""
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            name = str(key.value)
            yield from _scalars(value, f"{path}.{name}" if path else name)
    elif isinstance(node, yaml.SequenceNode):
        for index, value in enumerate(node.value):
            yield from _scalars(value, f"{path}.{index}" if path else str(index))
    elif isinstance(node, yaml.ScalarNode):
        yield path, node


def _comment(line: str, after: int) -> str | None:
    """The comment of ``line`` starting at or after column ``after``, without the ``#``."""
    position = line.find("#", after)
    return line[position + 1:].strip() if position >= 0 else None


_RANGE_CLAUSE = re.compile(rf"[,;]?\s*\brange\s+(?:none\b|{_NUMBER}\s*\.\.\s*{_NUMBER})(?::.*)?$")


def without_range(comment: str) -> str:
    """A comment with its range clause (and the reason after it) taken out: what a value
    keeps once it is measured or fitted, which makes the range no longer its own."""
    return _RANGE_CLAUSE.sub("", comment).rstrip(" ,;")


def _reason(comment: str, match: re.Match) -> str:
    """The comment's words besides the marker and the range: why the range is what it is."""
    rest = (comment[:match.start()] + " " + comment[match.end():])
    rest = _ASSUMED.sub("", rest, count=1)
    return re.sub(r"^[\s,;:.()-]+|[\s,;:(-]+$", "", re.sub(r"\s+", " ", rest))


def comment_ranges(text: str, source: str) -> list[AssumedRange]:
    """The ranges written in ``# assumed, range LOW..HIGH`` comments of a chip file."""
    loader = BoundedLoader(text)
    try:
        root = loader.get_single_node()
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {exc}") from None
    finally:
        loader.dispose()
    lines = text.splitlines()
    by_line: dict[int, list[tuple[str, yaml.ScalarNode]]] = {}
    for key, node in _scalars(root):
        if not key.startswith(SECTION):
            by_line.setdefault(node.end_mark.line, []).append((key, node))
    found = []
    for number, entries in sorted(by_line.items()):
        comment = _comment(lines[number], max(n.end_mark.column for _, n in entries))
        if not comment or not _ASSUMED.search(comment):
            continue
        match = _RANGE.search(comment)
        if match is None:
            continue
        numeric = [(k, n) for k, n in entries if n.tag.endswith((":int", ":float"))]
        where = f"{source}: line {number + 1}"
        if len(numeric) != 1:
            raise ConfigError(f"{where}: a range comment needs exactly one number on its line; "
                              f"give this one in the {SECTION} section by key path")
        key, _node = numeric[0]
        reason = _reason(comment, match)
        if match.group("none"):
            found.append(AssumedRange(key, 0.0, None, None, reason, number + 1))
        else:
            found.append(AssumedRange(key, 0.0, _number(match.group("low")),
                                      _number(match.group("high")), reason, number + 1))
    return found


def section_ranges(raw: Any, source: str) -> list[AssumedRange]:
    """The ranges of the ``assumed_ranges`` section (structured form)."""
    section = raw.get(SECTION) if isinstance(raw, dict) else None
    if section is None:
        return []
    found = []
    for key, spec in section.items():
        where = f"{source}: {SECTION}.{key}"
        if not isinstance(spec, dict) or set(spec) - {"low", "high", "reason"} or \
                "reason" not in spec:
            raise ConfigError(f"{where}: must be {{low: L, high: H, reason: TEXT}} (or "
                              f"{{reason: TEXT}} alone for a value without a range)")
        low, high = spec.get("low"), spec.get("high")
        if (low is None) != (high is None) or any(
                v is not None and not is_number(v) for v in (low, high)):
            raise ConfigError(f"{where}: low and high must both be numbers (or both left out)")
        found.append(AssumedRange(str(key), 0.0, None if low is None else float(low),
                                  None if high is None else float(high), str(spec["reason"])))
    return found


def assumed_ranges(raw: Any, text: str | None, source: str) -> list[AssumedRange]:
    """Every stated range of a chip description, checked: a ConfigError names the key and
    says what is wrong (unknown key, a value outside its range, a fractional end for a
    whole-number key, no reason, a key given twice)."""
    found = section_ranges(raw, source) + (comment_ranges(text, source) if text else [])
    seen: dict[str, AssumedRange] = {}
    checked = []
    for entry in found:
        where = f"{source}: line {entry.line}" if entry.line else f"{source}: {SECTION}"
        if entry.key in seen:
            raise ConfigError(f"{where}: {entry.key} has a range twice; keep one")
        seen[entry.key] = entry
        try:
            value = get_value(raw, entry.key, source)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        if not is_number(value):
            raise ConfigError(f"{where}: {entry.key} is {value!r}, not a number: only numbers "
                              f"have ranges")
        if not entry.reason:
            raise ConfigError(f"{where}: {entry.key}: say why the range is what it is")
        if entry.has_range:
            low, high = entry.bounds
            if not low <= float(value) <= high or low == high:
                raise ConfigError(f"{where}: {entry.key} = {value:g} must lie within its range "
                                  f"{low:g}..{high:g}, and the range must not be empty")
            if whole_number_key(entry.key) and not (low.is_integer() and high.is_integer()):
                raise ConfigError(f"{where}: {entry.key} is a whole number; its range "
                                  f"{low:g}..{high:g} must be too")
        checked.append(AssumedRange(entry.key, float(value), entry.low, entry.high,
                                    entry.reason, entry.line))
    return checked


def range_end(entry: AssumedRange, end: str) -> float | int:
    """The ``"low"`` or ``"high"`` end of a range, as the key's type wants it."""
    low, high = entry.bounds
    value = low if end == "low" else high
    return int(value) if whole_number_key(entry.key) else value


def check_range_ends(raw: Any, ranges: list[AssumedRange], source: str, build) -> None:
    """Build the chip (``build(raw, source)``) at each end of each range: a ConfigError
    naming the key and end the chip cannot have."""
    for entry in ranges:
        if not entry.has_range:
            continue
        for end in ("low", "high"):
            try:
                build(apply_overrides(raw, {entry.key: range_end(entry, end)}, source), source)
            except ConfigError as exc:
                raise ConfigError(f"{source}: the {end} end of {entry.key}'s range "
                                  f"({range_end(entry, end):g}) is not a valid chip: {exc}"
                                  ) from None
