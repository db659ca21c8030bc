"""What a sweep runs: chips, operators, masks and lengths expanded into single runs.

:func:`plan` turns a :class:`SweepSpec` into :class:`RunSpec` s, skipping with a note
what a chip cannot run (a dtype it lacks, a mask naming cores it does not have). What-if
axes (``chip_sets``) turn each chip into a grid of variants, each a validated chip of its
own (:func:`chip_variants`). A run carries its parsed chip description, so that any
worker, local or remote, can rebuild the chip without access to the user's files.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace

from dspsim import kernels
from dspsim.sim.chip.overrides import split_key
from dspsim.sim.engine.machine import FIDELITIES
from dspsim.sim.errors import ArgumentError, ConfigError
from dspsim.sweep.chips import (
    ChipSpec,
    chip_label,
    chip_variants,
    format_overrides,
    own_values,
    unique_chips,
    variant_count,
)
from dspsim.sweep.files import CALL_SCHEMA
from dspsim.sweep.notes import ChipLabels, SkippedNotes, some
from dspsim.sweep.study import Plan

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

    def baseline(self) -> RunSpec:
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
    expanded: list[str] = []
    for name in names:
        expanded.extend(found if name == "all" else [name])
    return list(dict.fromkeys(expanded))


def _operator_params(cname: str, given: dict[str, float],
                     found: kernels.KernelSet = kernels.LIBRARY
                     ) -> tuple[tuple[str, float], ...]:
    """The call's parameters, checked as ``dspsim run`` checks them (finite, in range,
    representable in the call's dtype), so that a bad value stops the sweep before it runs."""
    parsed = found.parse_known(cname)
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
    given: tuple[tuple[str, Sequence[object]], ...] = (
        ("--ops", spec.operators), ("--chips", spec.chips), ("--lengths", spec.lengths),
        ("--dtypes", spec.dtypes))
    for label, values in given:
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
    for key, set_values in spec.chip_sets.items():
        split_key(key)
        if not set_values:
            raise ArgumentError(f"--set {key}: give at least one value")


def plan(spec: SweepSpec) -> Plan:
    """The runs of the sweep, counted now and built as they are asked for.

    Everything that can be checked without building what-if variants is checked here
    (operators, parameters, dtypes, keys, chips), so that a bad request fails before any
    folder is made; the plan's :attr:`~Plan.count` bounds the runs from above.
    """
    _check_spec(spec)
    given = unique_chips(spec.chips)
    notes: list[str] = []
    chips: list[tuple[ChipSpec, dict[str, list[float]]]] = []
    lacking: list[ConfigError] = []
    for chip in given:
        try:
            own_values(chip, spec.chip_sets)
            chips.append((chip, spec.chip_sets))
        except ConfigError as exc:
            # a key another chip of the sweep has (FT78NE's dma.controllers, say): this chip
            # runs as given; a key no chip has is a typo and stops the sweep
            lacking.append(exc)
            chips.append((chip, {}))
            notes.append(f"{chip.name}: runs only as given: {exc}")
    if lacking and len(lacking) == len(given):
        raise lacking[0]
    calls = _calls(spec, kernels.kernel_set(list(spec.kernels) or None))
    count = baselines = most_masks = 0
    widest = max(spec.chip_sets.get("cores", [0]), default=0)
    for chip, sets in chips:
        masks, _ = masks_for(spec, max(chip.cores, int(widest) if "cores" in sets else 0))
        supported = sum(1 for _, dtype, _, _ in calls if dtype in chip.dtypes)
        groups = variant_count(sets) * supported * len(dict.fromkeys(spec.lengths))
        count += groups * len(masks)
        most_masks = max(most_masks, len(masks))
        baselines += 0 if BASELINE_MASK in masks else groups
    if not count:  # an upper bound: no variant can run what the chips as given cannot
        as_given: list[tuple[ChipSpec, dict[str, list[float]]]] = [
            (chip, {}) for chip, _ in chips]
        raise ArgumentError("nothing to run: " + ("; ".join(
            _call_notes(spec, calls, as_given)) or "empty sweep"))
    sizes = [f"{len(dict.fromkeys(v)):,}" for v in spec.chip_sets.values()]
    shape = [f"{' × '.join(sizes)} what-if values"] if sizes else []
    shape += [f"{len(calls):,} operator{'s' * (len(calls) != 1)}",
              f"{len(dict.fromkeys(spec.lengths)):,} length{'s' * (len(set(spec.lengths)) != 1)}",
              f"{len(given):,} chip{'s' * (len(given) != 1)}",
              f"up to {most_masks:,} core mask{'s' * (most_masks != 1)}"]
    return Plan(CALL_SCHEMA, count, baselines, " × ".join(shape), notes,
                lambda found: _call_runs(spec, calls, chips, found))


#: One call of a sweep, for every chip: its C name, dtype, parameters, and the users'
#: kernel files its operator needs (empty for the library's own)
Call = tuple[str, str, tuple[tuple[str, float], ...], tuple[kernels.KernelSource, ...]]


def _calls(spec: SweepSpec, found: kernels.KernelSet) -> list[Call]:
    """Every call of the sweep, checked once for all chips; ``found``: the operators
    (the library's, installed ones and the sweep's own kernel files)."""
    calls = []
    used_params: set[str] = set()
    for name in expand_operators(spec.operators, found):
        for dtype in dict.fromkeys(spec.dtypes):
            cname = resolve_operator(name, dtype, found)
            if cname is None:
                continue
            params = _operator_params(cname, spec.params, found)
            used_params.update(k for k, _ in params)
            # only the files a run's operator needs travel with it
            own = (found.sources if found.parse_known(cname).operator.stem in found.origins
                   else ())
            calls.append((cname, dtype, params, own))
    unused = sorted(set(spec.params) - used_params)
    if unused and calls:
        raise ArgumentError(f"no swept operator has parameter {unused[0]!r}; check --param")
    if not calls:
        raise ArgumentError("nothing to run: no operator of --ops exists in the dtypes "
                            f"{', '.join(spec.dtypes)}")
    return calls


def _call_notes(spec, calls, chips) -> list[str]:
    notes: list[str] = []
    for _ in _call_runs(spec, calls, chips, notes):
        pass
    return notes


def _call_runs(spec: SweepSpec, calls, chips, notes: list[str]) -> Iterator[RunSpec]:
    """The runs, variant after variant; notes of what a chip cannot run go to ``notes``
    when the last run has been handed out."""
    skipped = SkippedNotes(notes)
    too_wide, lacking_dtype = ChipLabels(), ChipLabels()
    for given, sets in chips:
        for chip in chip_variants(given, sets, skipped):
            masks, wide = masks_for(spec, chip.cores)
            label = chip_label(chip)
            if wide:
                too_wide.add(wide, label, chip.cores)
            unsupported: dict[str, list[str]] = {}
            for cname, dtype, params, own in calls:
                if dtype not in chip.dtypes:
                    unsupported.setdefault(dtype, []).append(cname)
                    continue
                for length in dict.fromkeys(spec.lengths):
                    for mask in masks:
                        yield RunSpec(chip, cname, length, mask, params, spec.numerics,
                                      spec.seed, spec.fidelity, own)
            for dtype, names in unsupported.items():
                lacking_dtype.add(f"{dtype} (its dtypes: {', '.join(chip.dtypes)}): skipped "
                                  f"{some(names)}", label, chip.cores)
    skipped.summary()
    notes.extend(lacking_dtype.notes(
        lambda what, labels, one, _: f"{labels} {'does' if one else 'do'} not support {what}"))
    notes.extend(too_wide.notes(
        lambda what, labels, one, sizes: f"{labels} {'has' if one else 'have'} "
        f"{f'{min(sizes)} cores' if len(sizes) == 1 else 'fewer cores'}: skipped {what}"))
