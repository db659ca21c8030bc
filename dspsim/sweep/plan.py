"""What a sweep runs: chips, operators, masks and lengths expanded into single runs.

:func:`plan` turns a :class:`SweepSpec` into :class:`RunSpec` s, skipping with a note
what a chip cannot run (a dtype it lacks, a mask naming cores it does not have). What-if
axes (``chip_sets``) turn each chip into a grid of variants, each a validated chip of its
own (:func:`chip_variants`). A run carries its parsed chip description, so that any
worker, local or remote, can rebuild the chip without access to the user's files.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable

from dspsim import kernels
from dspsim.sim.errors import ArgumentError, ConfigError
from dspsim.sim.engine.machine import FIDELITIES
from dspsim.sim.chip.overrides import split_key
from dspsim.sweep.chips import (ChipSpec, chip_label, chip_variants, format_overrides,
                                unique_chips)

__all__ = ["BASELINE_MASK", "DEFAULT_FIDELITY", "ChipSpec", "Plan", "RunSpec", "SweepSpec",
           "format_overrides", "format_params", "masks_for", "plan", "resolve_operator"]

#: The one-core run that speedup is measured against.
BASELINE_MASK = 0x1
#: The timing model's default fidelity; rows of other fidelities are keyed apart.
DEFAULT_FIDELITY = "fast"


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
    #: users' kernel files (their text), so that any worker can rebuild their operators
    kernels: tuple[kernels.KernelSource, ...] = ()

    @property
    def key(self) -> str:
        """Identity of the run in the row store (numerics and seed do not change timing)."""
        model = "" if self.fidelity == DEFAULT_FIDELITY else f"|fidelity={self.fidelity}"
        # a user's kernel file changed since the rows were stored makes other runs
        own = "|kernels=" + ",".join(k.digest[:12] for k in self.kernels) if self.kernels else ""
        return (f"{self.chip.name}|{self.chip.digest}|{self.operator}|n={self.length}|"
                f"mask={self.core_mask:#x}|{format_params(self.params)}{model}{own}")

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
    #: what-if axes: a key path into the chip description and the values it takes; several
    #: keys make a grid (see :func:`chip_variants`)
    chip_sets: dict[str, list[float]] = field(default_factory=dict)
    #: users' own operators: kernel files (paths or KernelSource), as Chip(kernels=) takes
    kernels: tuple = ()


@dataclass
class Plan:
    runs: list[RunSpec]
    notes: list[str]


# ----------------------------------------------------------------------------- planning
def resolve_operator(name: str, dtype: str,
                     found: kernels.KernelSet = kernels.LIBRARY) -> str | None:
    """The shared-storage C name of ``name`` in ``dtype``: a stem expands
    (relu_grad → fp_relu_grad_s for fp32), a C name stands for itself (None if its dtype
    is not ``dtype``, or the operator is not written for it); ``found``: the operators."""
    cname = found.parse(name, any_dtype=True)
    if cname is not None:
        if cname.storage != "shared":
            raise ArgumentError(
                f"{name} is a private-storage call: it runs on one core and takes no core mask; "
                f"sweep the shared-storage version {name[:-2]}_s")
        ok = cname.dtype.name == dtype and cname.operator.supports(dtype)
        return name if ok else None
    if name in found:
        op = found[name]
        return kernels.c_name(op, dtype, "shared") if op.supports(dtype) else None
    everything = list(found) + found.names_for(kernels.DTYPES)
    hint = kernels.closest(name, everything)
    raise ArgumentError(f"unknown operator {name!r}" + (f"; did you mean {', '.join(hint)}?"
                        if hint else f"; operators: {', '.join(found)}"))


def expand_operators(names: list[str],
                     found: kernels.KernelSet = kernels.LIBRARY) -> list[str]:
    """The names as given, with ``all`` standing for every operator of ``found``."""
    expanded = []
    for name in names:
        expanded.extend(found if name == "all" else [name])
    return list(dict.fromkeys(expanded))


def _operator_params(cname: str, given: dict[str, float],
                     found: kernels.KernelSet = kernels.LIBRARY
                     ) -> tuple[tuple[str, float], ...]:
    """The call's parameters, checked as ``dspsim run`` checks them (finite, in range,
    representable in the call's dtype), so that a bad value stops the sweep before it runs."""
    parsed = found.parse(cname)
    values = []
    for param in parsed.operator.params:
        if param.name in given:
            values.append((param.name, param.validate(cname, given[param.name], parsed.dtype)))
        elif param.default is None:
            raise ArgumentError(f"{cname} needs parameter {param.name}; pass --param "
                                f"{param.name}=VALUE")
    return tuple(values)


def masks_for(spec: SweepSpec, cores: int) -> tuple[list[int], str]:
    """The masks of a chip of ``cores`` cores, and the requests it cannot run (masks
    naming cores it lacks, core counts above its own) as text for a note ("" if none)."""
    if spec.core_masks:
        masks = list(dict.fromkeys(spec.core_masks))
        too_wide = [f"{m:#x}" for m in masks if m >> cores]
        return [m for m in masks if not m >> cores], (
            f"core masks {', '.join(too_wide)}" if too_wide else "")
    counts = spec.core_counts
    if not counts:
        counts = sorted({1 << i for i in range(cores.bit_length()) if 1 << i <= cores} | {cores})
    counts = list(dict.fromkeys(counts))
    # a count is checked before its mask is built: 2^40 cores must not build a 2^40-bit mask
    too_many = [f"{n:,}" for n in counts if n > cores]
    return [(1 << n) - 1 for n in counts if n <= cores], (
        f"core counts {', '.join(too_many)}" if too_many else "")


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
    for key, values in spec.chip_sets.items():
        split_key(key)
        if not values:
            raise ArgumentError(f"--set {key}: give at least one value")


def _some(names: list[str], shown: int = 4) -> str:
    """A short list: ``a, b, c, d, … (16 in all)``."""
    if len(names) <= shown:
        return ", ".join(names)
    return f"{', '.join(names[:shown])}, … ({len(names)} in all)"


def plan(spec: SweepSpec) -> Plan:
    """Every run of the sweep, and a note for each combination a chip cannot run."""
    _check_spec(spec)
    chips: list[ChipSpec] = []
    notes: list[str] = []
    lacking: list[ConfigError] = []
    given = unique_chips(spec.chips)
    for chip in given:
        try:
            variants, refused = chip_variants(chip, spec.chip_sets)
        except ConfigError as exc:
            # a key another chip of the sweep has (FT78NE's dma.controllers, say): this chip
            # runs as given; a key no chip has is a typo and stops the sweep
            lacking.append(exc)
            variants, refused = [chip], [f"{chip.name}: runs only as given: {exc}"]
        chips.extend(variants)
        notes.extend(refused)
    if lacking and len(lacking) == len(given):
        raise lacking[0]
    found = kernels.kernel_set(list(spec.kernels) or None)
    runs: list[RunSpec] = []
    used_params: set[str] = set()
    skipped_masks: dict[str, list[str]] = {}
    for chip in chips:
        masks, too_wide = masks_for(spec, chip.cores)
        label = chip_label(chip)
        if too_wide:
            skipped_masks.setdefault(too_wide, []).append(label)
        unsupported: dict[str, list[str]] = {}
        for name in expand_operators(spec.operators, found):
            for dtype in dict.fromkeys(spec.dtypes):
                cname = resolve_operator(name, dtype, found)
                if cname is None:
                    continue
                if dtype not in chip.dtypes:
                    unsupported.setdefault(dtype, []).append(cname)
                    continue
                params = _operator_params(cname, spec.params, found)
                used_params.update(k for k, _ in params)
                # only the files a run's operator needs travel with it
                own = found.sources if found.parse(cname).operator.stem in found.origins \
                    else ()
                runs.extend(RunSpec(chip, cname, length, mask, params, spec.numerics, spec.seed,
                                    spec.fidelity, own)
                            for length in dict.fromkeys(spec.lengths) for mask in masks)
        notes.extend(f"{label} does not support {dtype} (its dtypes: "
                     f"{', '.join(chip.dtypes)}): skipped {_some(names)}"
                     for dtype, names in unsupported.items())
    for what, labels in skipped_masks.items():
        cores = {c.cores for c in chips if chip_label(c) in labels}
        has = f"has {cores.pop()} cores" if len(cores) == 1 else "has fewer cores"
        notes.append(f"{_some(labels)} {has}: skipped {what}")
    unused = sorted(set(spec.params) - used_params)
    if unused and runs:
        raise ArgumentError(f"no swept operator has parameter {unused[0]!r}; check --param")
    if not runs:
        raise ArgumentError("nothing to run: " + ("; ".join(notes) or "empty sweep"))
    return Plan(runs, notes)
