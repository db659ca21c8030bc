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
from dataclasses import dataclass, replace
from typing import Any, Iterable

from dspsim.sim.chip.load import (ChipConfig, config_from_dict, parse_chip_yaml, read_chip_text,
                               resolve_chip_path)
from dspsim.sim.errors import DspSimError
from dspsim.sim.chip.overrides import apply_overrides, numeric_value


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


def parse_overrides(text: str) -> tuple[tuple[str, float], ...]:
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
    def load(cls, chip: str) -> "ChipSpec":
        """Read and validate a packaged chip name or a YAML path."""
        path = resolve_chip_path(chip)
        return cls.from_raw(parse_chip_yaml(read_chip_text(path), path), path)

    @classmethod
    def from_raw(cls, raw: Any, source: str) -> "ChipSpec":
        """Validate a parsed description (a ConfigError names the key at fault)."""
        config = config_from_dict(raw, source)
        digest = description_digest(raw)
        text = json.dumps(raw, sort_keys=True, separators=(",", ":"), default=str)
        return cls(config.name, source, text, digest, config.cores, tuple(config.dtypes),
                   (), digest)

    def raw(self) -> Any:
        """A fresh copy of the parsed description."""
        return json.loads(self.text)

    def with_overrides(self, overrides: tuple[tuple[str, float], ...]) -> "ChipSpec":
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


def chip_variants(chip: ChipSpec, chip_sets: dict[str, list[float]]
                  ) -> tuple[list[ChipSpec], list[str]]:
    """The chip as given, then every combination of the what-if values (the grid of all
    keys). A combination that fails validation is left out with the validation message.

    Each key must name a number in the chip (checked first, so that a typo stops the sweep
    instead of skipping every combination). With several keys, each key's values are also
    run with the other keys at the chip's own values: the one-at-a-time changes that
    sensitivities are measured on, which a grid lacks when its values leave out the
    chip's own. Variants equal to another (the chip's own values, say) collapse into one.
    """
    if not chip_sets:
        return [chip], []
    raw = chip.raw()
    own = {key: numeric_value(raw, key, chip.source) for key in chip_sets}
    variants: dict[str, ChipSpec] = {chip.digest: chip}
    notes = []
    keys = list(chip_sets)
    grid = [tuple(zip(keys, values))
            for values in itertools.product(*(list(dict.fromkeys(chip_sets[k])) for k in keys))]
    if len(keys) > 1:
        grid += [tuple((k, value if k == key else own[k]) for k in keys)
                 for key in keys for value in dict.fromkeys(chip_sets[key])]
    for combination in dict.fromkeys(grid):
        # a key at the chip's own value is no change: leave it out of the label
        overrides = tuple((k, v) for k, v in combination if v != own[k])
        try:
            variant = chip.with_overrides(overrides)
        except DspSimError as exc:
            notes.append(f"{chip.name} with {format_overrides(overrides)}: skipped, not a valid "
                         f"chip: {exc}")
            continue
        if variant.digest != chip.digest:
            variants.setdefault(variant.digest, variant)
    return list(variants.values()), notes


def chip_label(chip: ChipSpec) -> str:
    """FT78NE, or FT78NE with cores=4 for a what-if variant."""
    return chip.name + (f" with {format_overrides(chip.overrides)}" if chip.overrides else "")
