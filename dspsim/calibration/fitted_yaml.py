"""Writing the fitted chip: the original file's text with the fitted numbers changed.

Every line, comment and blank of the chip file is kept; only the scalar of each fitted key
is replaced, and that line's comment says that the value was fitted, to which file, with
what residual (the comment it had is kept after "was ..."). The new text is parsed back
and checked to hold exactly the fitted values and nothing else changed before it is
written, atomically.
"""
from __future__ import annotations

import os
from collections.abc import Mapping

import yaml

from dspsim.atomic import write_atomically
from dspsim.calibration.results import Calibration
from dspsim.sim.chip.load import config_from_dict, parse_chip_yaml
from dspsim.sim.chip.overrides import apply_overrides, split_key
from dspsim.sim.chip.ranges import without_range
from dspsim.sim.errors import ConfigError


def format_number(value: float, whole: bool = False) -> str:
    """A number as YAML reads it back as a number: 7 significant digits; floats in
    exponent form keep a decimal point (YAML 1.1 reads ``1e-05`` as a string)."""
    if whole:
        return str(int(round(value)))
    text = f"{value:.7g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        if "." not in mantissa:
            mantissa += ".0"
        text = f"{mantissa}e{exponent}"
    return text


def _scalar_node(root: yaml.Node | None, text: str, key: str,
                 source: str) -> yaml.ScalarNode:
    node = root  # None: an empty file, or a key path that leads nowhere
    for part in split_key(key):
        if isinstance(node, yaml.MappingNode):
            found = [v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part]
            node = found[-1] if found else None
        elif isinstance(node, yaml.SequenceNode) and part.isdigit() and int(part) < len(node.value):
            node = node.value[int(part)]
        else:
            node = None
        if node is None:
            break
    if not isinstance(node, yaml.ScalarNode) or node.start_mark.line != node.end_mark.line:
        raise ConfigError(f"{source}: chip key {key!r} is not a number written on one line of "
                          f"the file; edit it by hand")
    if text[node.start_mark.index] in "&!*":
        raise ConfigError(f"{source}: chip key {key!r} is a YAML anchor, alias or tagged value "
                          f"that other keys may share; write its value out in full, or edit "
                          f"it by hand")
    return node


def _comment_start(line: str, after: int) -> int | None:
    """Where the comment of ``line`` begins, searching from column ``after`` (the end of the
    line's last YAML token, so that a ``#`` inside a value is never taken for one)."""
    for column in range(after, len(line)):
        if line[column] == "#" and (column == 0 or line[column - 1] in " \t"):
            return column
    return None


def _token_ends(text: str) -> dict[int, int]:
    """The end column of the last YAML token on each line."""
    ends: dict[int, int] = {}
    for token in yaml.scan(text, Loader=yaml.SafeLoader):
        line = token.end_mark.line
        ends[line] = max(ends.get(line, 0), token.end_mark.column)
    return ends


def edit_chip_text(text: str, source: str, values: Mapping[str, str],
                   notes: Mapping[str, str]) -> str:
    """``text`` with each key's scalar replaced by ``values[key]`` (YAML text of a number)
    and ``notes[key]`` as its line's comment, the old comment kept after it, at the
    column where it was when the line still fits there."""
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    by_line: dict[int, list[tuple[int, int, str, str]]] = {}
    for key, replacement in values.items():
        node = _scalar_node(root, text, key, source)
        by_line.setdefault(node.start_mark.line, []).append(
            (node.start_mark.column, node.end_mark.column, replacement, notes[key]))
    ends = _token_ends(text)
    lines = text.split("\n")
    for number, edits in by_line.items():
        line = lines[number]
        ending = "\r" if line.endswith("\r") else ""  # a file with CRLF line ends keeps them
        line = line[:len(line) - len(ending)]
        begin = _comment_start(line, ends.get(number, 0))
        code = line if begin is None else line[:begin]
        for first, stop, replacement, _ in sorted(edits, reverse=True):
            code = code[:first] + replacement + code[stop:]
        code = code.rstrip()
        # a fitted value is no longer an assumption: its former range does not travel
        old = "" if begin is None else without_range(line[begin:].lstrip("#").strip())
        comment = "; ".join(note for *_, note in edits) + (f"; before: {old}" if old else "")
        column = begin if begin is not None and begin > len(code) else len(code) + 2
        lines[number] = f"{code.ljust(column)}# {comment}{ending}"
    return "\n".join(lines)


def fitted_chip_text(calibration: Calibration) -> str:
    """The chip file's text with the calibration's fitted values (see the module)."""
    text = calibration.chip_text
    written = [k for k in calibration.keys if k.written]
    values = {k.key: format_number(k.fitted, k.whole) for k in written}
    residual = (f"rms error {calibration.rms_error_after:.2%} over {len(calibration.rows)} "
                f"rows, largest {calibration.max_error_after:.2%}")
    name = os.path.basename(calibration.measured_path)
    notes = {}
    for k in written:
        flag = "" if k.pinned else f"; not pinned down: {k.reason}"
        notes[k.key] = (f"fitted to {name} ({residual}); was "
                        f"{format_number(k.original, k.whole)}{flag}")
    edited = edit_chip_text(text, calibration.chip_path, values, notes)
    _check(calibration.chip_path, text, edited, values)
    return edited


def _check(source: str, original: str, edited: str, values: Mapping[str, str]) -> None:
    """The edited text must hold the new values and otherwise the original description."""
    expected = apply_overrides(parse_chip_yaml(original, source),
                               {k: yaml.safe_load(v) for k, v in values.items()}, source)
    got = parse_chip_yaml(edited, source)
    if got != expected:
        changed = ", ".join(values)
        raise ConfigError(f"{source}: editing {changed} in place would change other values "
                          f"too (a YAML alias or merge key shares them); edit the file by "
                          f"hand or write the values out in full")
    config_from_dict(got, source)


def write_fitted_chip(calibration: Calibration, path: str | os.PathLike) -> str:
    """Write the fitted chip file to ``path`` (see the module); returns the path."""
    return write_atomically(fitted_chip_text(calibration).encode("utf-8"), path,
                            "fitted chip file")
