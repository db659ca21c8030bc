"""The chips of a sweep: each description once, and its what-if variants.

A :class:`ChipSpec` carries a parsed, validated chip description (as canonical JSON) to
wherever a run executes, with a digest of what the model reads: comments, key order and
the prose ``description`` do not change it, any number does. What-if axes (``--set
KEY=V1,V2``) turn a chip into a grid of variants (:func:`chip_variants`), each changed by
key path (:mod:`dspsim.sim.chip.overrides`) before validation, so that a combination the chip
cannot have is refused by the checks of a hand-edited file.
"""
from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from dspsim.sim.chip.load import (
    ChipConfig,
    config_from_dict,
    parse_chip_yaml,
    read_chip_text,
    resolve_chip_path,
)
from dspsim.sim.chip.overrides import apply_overrides, numeric_value
from dspsim.sim.errors import DspSimError


def description_digest(raw: Any) -> str:
    """A digest of a parsed chip description: what the model reads, not how the file is
    written. Comments, key order, quoting and the prose ``description`` do not change it,
    so rows survive a cosmetic edit; any value that reaches the model does."""
    model = {k: v for k, v in raw.items() if k != "description"} if isinstance(raw, dict) else raw
    canonical = json.dumps(model, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]


def format_overrides(overrides: Iterable[tuple[str, float]]) -> str:
    """Overrides as ``vector.lane_width_bits=256,cores=4`` (repr keeps floats exact)."""
    return ",".join(f"{key}={value!r}" for key, value in overrides)


def parse_overrides(text: str | None) -> tuple[tuple[str, float], ...]:
    """The inverse of :func:`format_overrides`."""
    pairs = []
    for part in (text or "").split(","):
        if part:
            key, _, value = part.partition("=")
            pairs.append((key, float(value)))
    return tuple(pairs)


@dataclass(frozen=True)
class ChipSpec:
    """A chip description as it travels to workers: the parsed description (as canonical
    JSON, with any what-if overrides applied), and digests of it and of the chip as given."""

    name: str  # the chip's own name, e.g. FT78NE
    source: str  # the YAML file it came from
    text: str  # canonical JSON of the parsed description, overrides applied
    digest: str  # identifies the description: a changed value means new rows
    cores: int
    dtypes: tuple[str, ...]
    overrides: tuple[tuple[str, float], ...] = ()  # what-if changes to the chip as given
    base_digest: str = ""  # digest of the chip as given (equal to digest without overrides)
    given: tuple[tuple[str, float], ...] = ()  # the chip's own values of the overridden keys

    @classmethod
    def load(cls, chip: str) -> ChipSpec:
        """Read and validate a packaged chip name or a YAML path."""
        path = resolve_chip_path(chip)
        return cls.from_text(read_chip_text(path), path)

    @classmethod
    def from_text(cls, text: str, source: str) -> ChipSpec:
        """Validate a chip file's text; ``source`` names it in messages."""
        return cls.from_raw(parse_chip_yaml(text, source), source)

    @classmethod
    def from_raw(cls, raw: Any, source: str) -> ChipSpec:
        """Validate a parsed description (a ConfigError names the key at fault)."""
        config = config_from_dict(raw, source)
        digest = description_digest(raw)
        text = json.dumps(raw, sort_keys=True, separators=(",", ":"), default=str)
        return cls(config.name, source, text, digest, config.cores, tuple(config.dtypes),
                   (), digest)

    def raw(self) -> Any:
        """A fresh copy of the parsed description."""
        return json.loads(self.text)

    def with_overrides(self, overrides: tuple[tuple[str, float], ...]) -> ChipSpec:
        """This chip with numbers changed by key path, validated like a hand-edited file."""
        if not overrides:
            return self
        raw = self.raw()
        given = tuple((key, numeric_value(raw, key, self.source)) for key, _ in overrides)
        variant = ChipSpec.from_raw(apply_overrides(raw, dict(overrides), self.source),
                                    self.source)
        return replace(variant, overrides=tuple(overrides), base_digest=self.digest,
                       given=given)

    def config(self) -> ChipConfig:
        return _config_from_text(self.text, self.source)


@functools.lru_cache(maxsize=64)
def _config_from_text(text: str, source: str) -> ChipConfig:
    # workers rebuild the same few chips for many runs: parse and validate each once
    return config_from_dict(json.loads(text), source)


def unique_chips(names: list[str]) -> list[ChipSpec]:
    """The chips asked for, each description once: ``ft78ne,FT78NE`` or a name and its
    file's path are one chip."""
    chips: dict[tuple[str, str], ChipSpec] = {}
    for name in names:
        chip = ChipSpec.load(name)
        chips.setdefault((chip.name, chip.digest), chip)
    return list(chips.values())


def own_values(chip: ChipSpec, keys: Iterable[str]) -> dict[str, float]:
    """The chip's own value of every what-if key; a ConfigError names a key it lacks (so
    that a typo stops the sweep before anything runs)."""
    raw = chip.raw()
    return {key: numeric_value(raw, key, chip.source) for key in keys}


def variant_count(chip_sets: dict[str, list[float]]) -> int:
    """How many chips :func:`chip_variants` yields at most, counted without building one:
    the chip as given, the grid of every key's values, and with several keys each key's
    values with the others at the chip's own."""
    if not chip_sets:
        return 1
    sizes = [len(dict.fromkeys(values)) for values in chip_sets.values()]
    grid = math.prod(sizes)
    return 1 + grid + (sum(sizes) if len(sizes) > 1 else 0)


def chip_variants(chip: ChipSpec, chip_sets: dict[str, list[float]],
                  skipped: Callable[[str], None]) -> Iterator[ChipSpec]:
    """The chip as given, then every combination of the what-if values (the grid of all
    keys), built one at a time as the caller asks for them: a grid of 10^9 points costs
    nothing until it runs. A combination that fails validation is left out, and
    ``skipped`` receives the validation message.

    Each key must name a number in the chip (checked before the first variant). With
    several keys, each key's values are also run with the other keys at the chip's own
    values: the one-at-a-time changes that sensitivities are measured on, which a grid
    lacks when its values leave out the chip's own. A combination that changes nothing
    (every key at the chip's own value) is the chip as given and is not repeated.
    """
    yield chip
    if not chip_sets:
        return
    own = own_values(chip, chip_sets)
    keys = list(chip_sets)
    values = [list(dict.fromkeys(chip_sets[k])) for k in keys]
    combinations: Iterable[tuple] = itertools.product(*values)
    if len(keys) > 1:
        # a one-at-a-time change is already in the grid when every other key's values
        # include the chip's own value; only the others are added
        extra = [tuple(value if k == key else own[k] for k in keys)
                 for i, key in enumerate(keys)
                 if not all(own[k] in values[j] for j, k in enumerate(keys) if j != i)
                 for value in values[i]]
        combinations = itertools.chain(combinations, dict.fromkeys(extra))
    for combination in combinations:
        # a key at the chip's own value is no change: leave it out of the label
        overrides = tuple((k, v) for k, v in zip(keys, combination, strict=True) if v != own[k])
        if not overrides:
            continue
        try:
            variant = chip.with_overrides(overrides)
        except DspSimError as exc:
            skipped(f"{chip.name} with {format_overrides(overrides)}: skipped, not a valid "
                    f"chip: {exc}")
            continue
        if variant.digest != chip.digest:
            yield variant


def chip_label(chip: ChipSpec) -> str:
    """FT78NE, or FT78NE with cores=4 for a what-if variant."""
    return chip.name + (f" with {format_overrides(chip.overrides)}" if chip.overrides else "")
