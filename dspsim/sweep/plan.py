"""What a sweep runs: chips, operators, masks and lengths expanded into single runs.

:func:`plan` turns a :class:`SweepSpec` into :class:`RunSpec` s, skipping with a note
what a chip cannot run (a dtype it lacks, a mask naming cores it does not have). A run
carries its chip description as YAML text, so that any worker, local or remote, can
rebuild the chip without access to the user's files.
"""
from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field, replace
from typing import Iterable

import yaml

from dspsim import kernels
from dspsim.sim.config import ChipConfig, config_from_dict, resolve_chip_path
from dspsim.sim.errors import ArgumentError, ConfigError
from dspsim.sim.machine import FIDELITIES

#: The one-core run that speedup is measured against.
BASELINE_MASK = 0x1
#: The timing model's default fidelity; rows of other fidelities are keyed apart.
DEFAULT_FIDELITY = "fast"


@dataclass(frozen=True)
class ChipSpec:
    """A chip description as it travels to workers: its YAML text and a digest of it."""

    name: str  # the chip's own name, e.g. FT78NE
    source: str  # the YAML file it came from
    yaml_text: str
    digest: str  # identifies the description: an edited file means new rows
    cores: int
    dtypes: tuple[str, ...]

    @classmethod
    def load(cls, chip: str) -> "ChipSpec":
        """Read and validate a packaged chip name or a YAML path."""
        path = resolve_chip_path(chip)
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
        config = _config_from_text(text, path)
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
        return cls(config.name, path, text, digest, config.cores, tuple(config.dtypes))

    def config(self) -> ChipConfig:
        return _config_from_text(self.yaml_text, self.source)


@functools.lru_cache(maxsize=16)
def _config_from_text(text: str, source: str) -> ChipConfig:
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {exc}") from None
    return config_from_dict(raw, source)


@dataclass(frozen=True)
class RunSpec:
    """One simulated call of a sweep."""

    chip: ChipSpec
    operator: str  # C name, e.g. fp_relu_grad_s
    length: int
    core_mask: int
    params: tuple[tuple[str, float], ...] = ()
    numerics: bool = True
    seed: int = 0
    fidelity: str = DEFAULT_FIDELITY

    @property
    def key(self) -> str:
        """Identity of the run in the row store (numerics and seed do not change timing)."""
        model = "" if self.fidelity == DEFAULT_FIDELITY else f"|fidelity={self.fidelity}"
        return (f"{self.chip.name}|{self.chip.digest}|{self.operator}|n={self.length}|"
                f"mask={self.core_mask:#x}|{format_params(self.params)}{model}")

    @property
    def group(self) -> tuple:
        """Runs that share a one-core baseline: everything but the mask."""
        return (self.chip.name, self.chip.digest, self.operator, self.length, self.params,
                self.fidelity)

    def baseline(self) -> "RunSpec":
        return replace(self, core_mask=BASELINE_MASK)


def format_params(params: Iterable[tuple[str, float]]) -> str:
    """Parameters as ``alpha=0.1,beta=2.0``; repr keeps every float exact for resuming."""
    return ",".join(f"{name}={value!r}" for name, value in params)


@dataclass
class SweepSpec:
    """What to sweep. ``core_masks`` and ``core_counts`` are alternatives (counts mean the
    lowest n cores); with neither, each chip runs 1, 2, 4, … cores up to all of them."""

    operators: list[str]
    chips: list[str]
    lengths: list[int]
    dtypes: list[str] = field(default_factory=lambda: ["fp32"])
    core_masks: list[int] | None = None
    core_counts: list[int] | None = None
    params: dict[str, float] = field(default_factory=dict)
    numerics: bool = True
    seed: int = 0
    fidelity: str = DEFAULT_FIDELITY


@dataclass
class Plan:
    runs: list[RunSpec]
    notes: list[str]


# ----------------------------------------------------------------------------- planning
def resolve_operator(name: str, dtype: str) -> str | None:
    """The shared-storage C name of ``name`` in ``dtype``: a stem expands
    (relu_grad → fp_relu_grad_s for fp32), a C name stands for itself (None if its dtype
    is not ``dtype``)."""
    cname = kernels.parse(name)
    if cname is not None:
        if cname.storage != "shared":
            raise ArgumentError(
                f"{name} is a private-storage call: it runs on one core and takes no core mask; "
                f"sweep the shared-storage version {name[:-2]}_s")
        return name if cname.dtype.name == dtype else None
    if name in kernels.OPERATORS:
        return kernels.c_name(kernels.OPERATORS[name], dtype, "shared")
    everything = list(kernels.OPERATORS) + kernels.names_for(kernels.DTYPES)
    hint = kernels.closest(name, everything)
    raise ArgumentError(f"unknown operator {name!r}" + (f"; did you mean {', '.join(hint)}?"
                        if hint else f"; operators: {', '.join(kernels.OPERATORS)}"))


def expand_operators(names: list[str]) -> list[str]:
    """The names as given, with ``all`` standing for every operator of the library."""
    expanded = []
    for name in names:
        expanded.extend(kernels.OPERATORS if name == "all" else [name])
    return list(dict.fromkeys(expanded))


def _operator_params(cname: str, given: dict[str, float]) -> tuple[tuple[str, float], ...]:
    op = kernels.parse(cname).operator
    values = []
    for param in op.params:
        if param.name in given:
            values.append((param.name, float(given[param.name])))
        elif param.default is None:
            raise ArgumentError(f"{cname} needs parameter {param.name}; pass --param "
                                f"{param.name}=VALUE")
    return tuple(values)


def masks_for(spec: SweepSpec, cores: int) -> list[int]:
    """The masks asked for, before checking them against a chip of ``cores`` cores."""
    if spec.core_masks:
        return list(dict.fromkeys(spec.core_masks))
    counts = spec.core_counts
    if not counts:
        counts = sorted({1 << i for i in range(cores.bit_length()) if 1 << i <= cores} | {cores})
    return [(1 << n) - 1 for n in dict.fromkeys(counts)]


def _check_spec(spec: SweepSpec) -> None:
    for label, values in (("--ops", spec.operators), ("--chips", spec.chips),
                          ("--lengths", spec.lengths), ("--dtypes", spec.dtypes)):
        if not values:
            raise ArgumentError(f"{label} is empty; give at least one value")
    for length in spec.lengths:
        if length < 1:
            raise ArgumentError(f"length {length} must be >= 1")
    for mask in spec.core_masks or ():
        if mask < 1:
            raise ArgumentError(f"core mask {mask:#x} selects no core; bit i selects core i")
    for count in spec.core_counts or ():
        if count < 1:
            raise ArgumentError(f"core count {count} must be >= 1")
    if spec.fidelity not in FIDELITIES:
        raise ArgumentError(f"unknown fidelity {spec.fidelity!r}; use one of "
                            f"{', '.join(FIDELITIES)}")
    for dtype in spec.dtypes:
        if dtype not in kernels.DTYPES:
            raise ArgumentError(f"unknown dtype {dtype!r}; known: {', '.join(kernels.DTYPES)}")


def _some(names: list[str], shown: int = 4) -> str:
    """A short list: ``a, b, c, d, … (16 in all)``."""
    if len(names) <= shown:
        return ", ".join(names)
    return f"{', '.join(names[:shown])}, … ({len(names)} in all)"


def plan(spec: SweepSpec) -> Plan:
    """Every run of the sweep, and a note for each combination a chip cannot run."""
    _check_spec(spec)
    chips = [ChipSpec.load(c) for c in dict.fromkeys(spec.chips)]
    runs: list[RunSpec] = []
    notes: list[str] = []
    used_params: set[str] = set()
    for chip in chips:
        masks = masks_for(spec, chip.cores)
        too_wide = [m for m in masks if m >> chip.cores]
        if too_wide:
            notes.append(f"{chip.name} has {chip.cores} cores: skipped core masks "
                         f"{', '.join(f'{m:#x}' for m in too_wide)}")
        masks = [m for m in masks if not m >> chip.cores]
        unsupported: dict[str, list[str]] = {}
        for name in expand_operators(spec.operators):
            for dtype in dict.fromkeys(spec.dtypes):
                cname = resolve_operator(name, dtype)
                if cname is None:
                    continue
                if dtype not in chip.dtypes:
                    unsupported.setdefault(dtype, []).append(cname)
                    continue
                params = _operator_params(cname, spec.params)
                used_params.update(k for k, _ in params)
                runs.extend(RunSpec(chip, cname, length, mask, params, spec.numerics, spec.seed,
                                    spec.fidelity)
                            for length in dict.fromkeys(spec.lengths) for mask in masks)
        notes.extend(f"{chip.name} does not support {dtype} (its dtypes: "
                     f"{', '.join(chip.dtypes)}): skipped {_some(names)}"
                     for dtype, names in unsupported.items())
    unused = sorted(set(spec.params) - used_params)
    if unused and runs:
        raise ArgumentError(f"no swept operator has parameter {unused[0]!r}; check --param")
    if not runs:
        raise ArgumentError("nothing to run: " + ("; ".join(notes) or "empty sweep"))
    return Plan(runs, notes)
